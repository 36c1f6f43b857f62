#pragma once
// GroupCommit: many callers' writes committed together. Each caller queues its item and waits; the first caller to
// find no leader becomes one, takes up to `max_batch` queued items (its own among them), commits them with the
// function it passes (outside the queue's lock), marks them done and hands the lead on. A caller returns once a
// batch holding its item was committed; the commit function stores each item's outcome in the item.
//
// `Pending` must have a `bool done` (false when queued; written only under this object's lock). Owned by the store
// that commits; thread-safe.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

namespace xpool::store_internal {

template <typename Pending>
class GroupCommit {
 public:
  explicit GroupCommit(size_t max_batch) : max_batch_(max_batch) {}

  // `commit(const std::vector<Pending*>&)` commits a batch; whichever caller leads runs it.
  template <typename Commit>
  void Run(Pending* item, Commit&& commit) {
    std::unique_lock lock(mu_);
    queue_.push_back(item);
    while (!item->done) {
      if (leader_) {
        cv_.wait(lock);
        continue;
      }
      leader_ = true;
      std::vector<Pending*> batch;
      while (!queue_.empty() && batch.size() < max_batch_) {
        batch.push_back(queue_.front());
        queue_.pop_front();
      }
      lock.unlock();
      commit(batch);
      lock.lock();
      for (Pending* p : batch) p->done = true;
      leader_ = false;
      cv_.notify_all();
    }
  }

 private:
  const size_t max_batch_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending*> queue_;  // guarded by mu_
  bool leader_ = false;         // guarded by mu_
};

}  // namespace xpool::store_internal
