#pragma once
// ChangeWatcher: how the agent's loop learns, between heartbeats, that it should heartbeat now (docs/agent.md,
// "Push"): the server announced that the tasks it wants on this node changed, or a task on the node ended or
// started.
//
// A thread long-polls the server (ControlPlaneClient::WaitForChange) with the generation of the task list the
// agent last received (Seen); when the server answers with another, WaitForWork returns at once. WaitForWork also
// checks the node every 20 ms (NodeAgent::HasNews: a task that ended, a start not yet reported), so an exit reaches
// the server within ~20 ms plus one heartbeat. A transport or server that announces nothing (the HTTP fallback, an
// older server) leaves WaitForWork waiting the whole interval, as a poll: the heartbeat stays the safety net.
//
// Owned by the agent's loop (xpool agent, xpool up); the client and the NodeAgent outlive it. Seen and
// WaitForWork are called from the loop's thread; the watcher's own thread only calls the client's
// WaitForChange (which clients allow concurrently with their other calls). The destructor stops the thread,
// waiting out a long-poll in flight (at most `long_poll`).
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "agent/node_agent.h"

namespace xpool::agent {

class ChangeWatcher {
 public:
  // How long one long-poll over the network waits at most: a stopping agent waits this long at worst. In process
  // (`xpool up`: a condition variable, no round trip) a shorter one keeps the stop quick.
  static constexpr TimeMicros kLongPollMicros = 2 * kMicrosPerSecond;
  // How often WaitForWork looks at the node's tasks.
  static constexpr TimeMicros kNodeCheckMicros = 20'000;

  ChangeWatcher(ControlPlaneClient* client, Node node, TimeMicros long_poll = kLongPollMicros);
  ~ChangeWatcher();
  ChangeWatcher(const ChangeWatcher&) = delete;
  ChangeWatcher& operator=(const ChangeWatcher&) = delete;

  // The generation of the task list the last heartbeat received (NodeAgent::generation(); 0 = none announced).
  void Seen(int64_t generation);
  // Waits up to `max_wait` for a reason to heartbeat now: a change the server announced since Seen, or news on
  // the node (`agent.HasNews()`). Returns early, too, once `stop()` is true (checked every kNodeCheckMicros).
  void WaitForWork(NodeAgent& agent, TimeMicros max_wait, const std::function<bool()>& stop);
  // False once the server or the transport said it announces nothing (then WaitForWork polls the node only).
  bool pushing() const { return pushing_.load(); }

 private:
  void Run();

  ControlPlaneClient* client_;
  const Node node_;
  const TimeMicros long_poll_;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t seen_ = 0;         // mu_
  uint64_t heartbeats_ = 0;  // Seen calls; mu_
  bool changed_ = false;     // announced and not yet taken by WaitForWork; mu_
  bool stop_ = false;        // mu_
  std::atomic<bool> pushing_{true};
  std::thread thread_;
};

}  // namespace xpool::agent
