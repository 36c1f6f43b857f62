#include "agent/change_watcher.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace xpool::agent {

ChangeWatcher::ChangeWatcher(ControlPlaneClient* client, Node node, TimeMicros long_poll)
    : client_(client), node_(std::move(node)), long_poll_(long_poll) {
  thread_ = std::thread([this] { Run(); });
}

ChangeWatcher::~ChangeWatcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ChangeWatcher::Seen(int64_t generation) {
  {
    std::lock_guard lock(mu_);
    seen_ = generation;
    ++heartbeats_;
  }
  cv_.notify_all();
}

void ChangeWatcher::Run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    const int64_t seen = seen_;
    const uint64_t heartbeats = heartbeats_;
    if (seen == 0) {  // no heartbeat answered yet, or the server announces nothing: wait for one that does
      cv_.wait(lock, [&] { return stop_ || heartbeats_ != heartbeats; });
      continue;
    }
    lock.unlock();
    Result<int64_t> generation = client_->WaitForChange(node_, seen, long_poll_);
    lock.lock();
    if (!generation.ok()) {
      if (generation.status().code() == StatusCode::kFailedPrecondition) {
        pushing_ = false;  // this server or transport announces nothing: WaitForWork polls
        cv_.wait(lock, [&] { return stop_; });
        return;
      }
      // Unreachable meanwhile: the loop's heartbeats find the server again; try again shortly.
      cv_.wait_for(lock, std::chrono::milliseconds(500), [&] { return stop_; });
      continue;
    }
    if (*generation == seen) continue;  // the long-poll timed out: nothing changed
    changed_ = true;
    cv_.notify_all();
    // Until the agent has heartbeated (the next Seen), another wait with `seen` would answer at once.
    cv_.wait(lock, [&] { return stop_ || heartbeats_ != heartbeats; });
  }
}

void ChangeWatcher::WaitForWork(NodeAgent& agent, TimeMicros max_wait, const std::function<bool()>& stop) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(max_wait);
  if (agent.HasNews()) return;  // e.g. tasks the last heartbeat's reply started: report them now
  while (!stop()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return;
    const auto step =
        std::min<std::chrono::steady_clock::duration>(deadline - now, std::chrono::microseconds(kNodeCheckMicros));
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, step, [&] { return changed_ || stop_; })) {
        changed_ = false;
        return;
      }
    }
    if (agent.HasNews()) return;
  }
}

}  // namespace xpool::agent
