#include "scheduler/queue/queue_order.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace xpool {
namespace {

// Heap order: the smallest (share, head submit, head id) on top.
struct Later {
  template <typename E>
  bool operator()(const E& a, const E& b) const {
    return std::tie(a.share, a.head_submit, a.head_id) >
           std::tie(b.share, b.head_submit, b.head_id);
  }
};

}  // namespace

DrfQueue::DrfQueue(const std::vector<QueueJob>& jobs, std::vector<int> waiting,
                   const std::vector<int>& tenant_of, const TenantLedger& ledger,
                   const ClusterTotals& totals)
    : jobs_(jobs),
      tenant_of_(tenant_of),
      ledger_(ledger),
      totals_(totals),
      order_(std::move(waiting)) {
  // Sort compact keys rather than comparing through the (large) jobs.
  struct Key {
    int neg_priority;
    int tenant;
    TimeMicros submit;
    int64_t id;
    int index;
  };
  std::vector<Key> keys;
  keys.reserve(order_.size());
  for (int i : order_) {
    keys.push_back(
        {-jobs_[i].priority, tenant_of_[i], jobs_[i].first_submit, jobs_[i].id.value(), i});
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return std::tie(a.neg_priority, a.tenant, a.submit, a.id) <
           std::tie(b.neg_priority, b.tenant, b.submit, b.id);
  });
  order_keys_.resize(keys.size());
  for (size_t k = 0; k < keys.size(); ++k) {
    order_[k] = keys[k].index;
    order_keys_[k] = {keys[k].submit, keys[k].id};
  }
  shares_.resize(ledger_.size());
  const int n = static_cast<int>(order_.size());
  for (int i = 0; i < n; ++i) {
    const int job = order_[i];
    const bool new_level = i == 0 || jobs_[order_[i - 1]].priority != jobs_[job].priority;
    if (new_level) level_starts_.push_back(static_cast<int>(runs_.size()));
    if (new_level || tenant_of_[order_[i - 1]] != tenant_of_[job])
      runs_.push_back({i, i, tenant_of_[job]});
    runs_.back().end = i + 1;
  }
  level_starts_.push_back(static_cast<int>(runs_.size()));
}

void DrfQueue::Push(int run) {
  const Run& r = runs_[run];
  const auto& [submit, id] = order_keys_[r.begin];
  heap_.push_back({ShareOf(r.tenant), submit, id, run});
  std::push_heap(heap_.begin(), heap_.end(), Later());
}

int64_t DrfQueue::ShareOf(int tenant) {
  CachedShare& c = shares_[tenant];
  if (c.version != ledger_.version(tenant)) {
    c.version = ledger_.version(tenant);
    c.share = ledger_.DominantSharePpb(tenant, totals_);
  }
  return c.share;
}

bool DrfQueue::StartNextLevel() {
  if (level_ + 1 >= static_cast<int>(level_starts_.size()) - 1) return false;
  ++level_;
  for (int r = level_starts_[level_]; r < level_starts_[level_ + 1]; ++r) Push(r);
  return true;
}

int DrfQueue::Next() {
  if (last_run_ >= 0 && runs_[last_run_].begin < runs_[last_run_].end) Push(last_run_);
  last_run_ = -1;
  while (heap_.empty()) {
    if (!StartNextLevel()) return -1;
  }
  std::pop_heap(heap_.begin(), heap_.end(), Later());
  const int run = heap_.back().run;
  heap_.pop_back();
  last_run_ = run;
  return order_[runs_[run].begin++];
}

void DrfQueue::RerankAll() {
  std::vector<int> runs;
  runs.reserve(heap_.size());
  for (const HeapEntry& e : heap_) runs.push_back(e.run);
  heap_.clear();
  for (int r : runs) Push(r);
}

std::vector<int> OrderQueue(const std::vector<QueueJob>& jobs, const std::vector<Tenant>& tenants,
                            const ClusterTotals& totals) {
  TenantLedger ledger(tenants);
  std::vector<int> tenant_of(jobs.size(), -1);
  std::vector<int> waiting;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const QueueJob& job = jobs[i];
    const int t = ledger.IndexOf(job.tenant);
    if (t < 0 || !ledger.error(t).ok() || !ValidateQueueJob(job).ok()) continue;
    tenant_of[i] = t;
    if (job.state == QueueJobState::kRunning) {
      ledger.Add(t, job.priority, HeldBy(job));
    } else {
      waiting.push_back(static_cast<int>(i));
    }
  }
  DrfQueue queue(jobs, std::move(waiting), tenant_of, ledger, totals);
  std::vector<int> order;
  for (int j = queue.Next(); j >= 0; j = queue.Next()) order.push_back(j);
  return order;
}

}  // namespace xpool
