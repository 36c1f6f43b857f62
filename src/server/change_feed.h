#pragma once
// ChangeFeed: per node, a generation number of what the server wants run there, so agents learn of a change at once
// instead of at their next poll (docs/agent.md, "Push").
//
// The control plane calls Bump(node) whenever the tasks it wants on a node change (a placement committed, a job
// asked to suspend, a job released). An agent's heartbeat reply carries the node's generation; the agent then
// waits for a generation other than the one it saw — in process (`xpool up`) with Wait(), over gRPC with a
// long-poll RPC whose server side is a Subscribe() callback (no thread held per waiting agent). A change between a
// heartbeat and the wait is never lost: the wait compares with the generation the agent saw, which is read before
// the reply's task list. Generations start at the server's start time in microseconds, so an agent that saw an
// earlier server's generation is woken at once. The level-triggered heartbeat stays the safety net: a lost or
// duplicated wake-up costs at most one poll interval, never a task.
//
// Owned by the ControlPlane. Thread-safe; callbacks run on the thread that calls Bump (or Subscribe), outside the
// feed's lock, and must not block.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"

namespace xpool::server {

class ChangeFeed {
 public:
  using Callback = std::function<void(int64_t generation)>;

  // `first`: the generation of every node before its first Bump (the server's start time in microseconds).
  explicit ChangeFeed(int64_t first) : first_(first) {}

  int64_t Generation(const std::string& node) const;
  // The tasks wanted on `node` changed: its generation moves on and its waiters are woken.
  void Bump(const std::string& node);
  // Blocks until `node`'s generation differs from `seen` or `timeout` passes; returns the generation then.
  int64_t Wait(const std::string& node, int64_t seen, TimeMicros timeout);
  // Calls `done` once with the generation when it differs from `seen`: at once (here) when it already does —
  // then returns 0 — else from the Bump that changes it; returns an id for Cancel.
  uint64_t Subscribe(const std::string& node, int64_t seen, Callback done);
  // Drops a subscription whose callback has not run: true when it dropped it, false when the callback has run
  // (or is running) or `id` is 0.
  bool Cancel(uint64_t id);
  // Subscriptions waiting now (for tests and metrics).
  size_t waiting() const;

 private:
  int64_t GenerationLocked(const std::string& node) const;

  const int64_t first_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::unordered_map<std::string, int64_t> generations_;  // nodes bumped at least once; mu_
  struct Waiter {
    std::string node;
    Callback done;
  };
  std::unordered_map<uint64_t, Waiter> waiters_;  // by id; mu_
  // Per node, the ids of its waiters in subscription order: a Bump costs the node's waiters, not every one. mu_
  std::unordered_map<std::string, std::vector<uint64_t>> ids_by_node_;
  uint64_t next_id_ = 1;  // mu_
};

}  // namespace xpool::server
