#include "server/change_feed.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace xpool::server {

int64_t ChangeFeed::GenerationLocked(const std::string& node) const {
  auto it = generations_.find(node);
  return it == generations_.end() ? first_ : it->second;
}

int64_t ChangeFeed::Generation(const std::string& node) const {
  std::lock_guard lock(mu_);
  return GenerationLocked(node);
}

void ChangeFeed::Bump(const std::string& node) {
  std::vector<Callback> due;
  int64_t generation = 0;
  {
    std::lock_guard lock(mu_);
    generation = GenerationLocked(node) + 1;
    generations_[node] = generation;
    if (auto ids = ids_by_node_.find(node); ids != ids_by_node_.end()) {
      for (uint64_t id : ids->second) {
        auto it = waiters_.find(id);
        due.push_back(std::move(it->second.done));
        waiters_.erase(it);
      }
      ids_by_node_.erase(ids);
    }
  }
  changed_.notify_all();
  for (Callback& done : due) done(generation);
}

int64_t ChangeFeed::Wait(const std::string& node, int64_t seen, TimeMicros timeout) {
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, std::chrono::microseconds(timeout), [&] { return GenerationLocked(node) != seen; });
  return GenerationLocked(node);
}

uint64_t ChangeFeed::Subscribe(const std::string& node, int64_t seen, Callback done) {
  int64_t now = 0;
  {
    std::lock_guard lock(mu_);
    now = GenerationLocked(node);
    if (now == seen) {
      const uint64_t id = next_id_++;
      waiters_.emplace(id, Waiter{node, std::move(done)});
      ids_by_node_[node].push_back(id);
      return id;
    }
  }
  done(now);
  return 0;
}

bool ChangeFeed::Cancel(uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return false;
  auto ids = ids_by_node_.find(it->second.node);
  std::erase(ids->second, id);
  if (ids->second.empty()) ids_by_node_.erase(ids);
  waiters_.erase(it);
  return true;
}

size_t ChangeFeed::waiting() const {
  std::lock_guard lock(mu_);
  return waiters_.size();
}

}  // namespace xpool::server
