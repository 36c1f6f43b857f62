#include "scheduler/queue/queue_order.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "scheduler/queue/internal/bucket_order.h"

namespace xpool {
namespace {

// Heap order: the smallest (share, head submit, head id) on top.
struct Later {
  template <typename E>
  bool operator()(const E& a, const E& b) const {
    return std::tie(a.share, a.head_submit, a.head_id) > std::tie(b.share, b.head_submit, b.head_id);
  }
};

}  // namespace

namespace {

std::vector<DrfQueue::Waiting> WaitingOf(const std::vector<QueueJob>& jobs, const std::vector<int>& waiting) {
  std::vector<DrfQueue::Waiting> out;
  out.reserve(waiting.size());
  for (int i : waiting) out.push_back({i, jobs[i].priority, jobs[i].first_submit, jobs[i].id.value()});
  return out;
}

}  // namespace

DrfQueue::DrfQueue(const std::vector<QueueJob>& jobs, const std::vector<int>& waiting,
                   const std::vector<int>& tenant_of, const TenantLedger& ledger, const ClusterTotals& totals)
    : DrfQueue(WaitingOf(jobs, waiting), tenant_of, ledger, totals) {}

DrfQueue::DrfQueue(const std::vector<Waiting>& waiting, const std::vector<int>& tenant_of, const TenantLedger& ledger,
                   const ClusterTotals& totals)
    : tenant_of_(tenant_of), ledger_(ledger), totals_(totals), order_(waiting.size()) {
  // Sort compact keys rather than comparing through the (large) jobs: one bucket per (priority,
  // tenant), each by (first submit, id).
  const int tenants = std::max(1, ledger_.size());
  std::vector<internal::BucketKey> keys;
  keys.reserve(waiting.size());
  for (const Waiting& w : waiting) {
    keys.push_back({w.first_submit, w.id, w.index, (kMaxPriority - w.priority) * tenants + tenant_of_[w.index]});
  }
  std::vector<int> bucket_start;
  const std::vector<internal::BucketKey> sorted =
      internal::SortByBucketThenSubmit(std::move(keys), (kMaxPriority + 1) * tenants, &bucket_start);
  order_keys_.resize(sorted.size());
  int last_level = -1;
  for (size_t b = 0; b + 1 < bucket_start.size(); ++b) {  // one run per non-empty bucket
    const int begin = bucket_start[b];
    const int end = bucket_start[b + 1];
    if (begin == end) continue;
    const int level = static_cast<int>(b) / tenants;
    if (level != last_level) level_starts_.push_back(static_cast<int>(runs_.size()));
    last_level = level;
    runs_.push_back({begin, end, static_cast<int>(b) % tenants});
  }
  for (size_t k = 0; k < sorted.size(); ++k) {
    order_[k] = sorted[k].index;
    order_keys_[k] = {sorted[k].submit, sorted[k].id};
  }
  shares_.resize(ledger_.size());
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
  const int position = NextPosition();
  return position < 0 ? -1 : order_[position];
}

int DrfQueue::NextPosition() {
  if (last_run_ >= 0 && runs_[last_run_].begin < runs_[last_run_].end) {
    // Shares change only when work is booked, so the same run often stays first (a tenant's backlog
    // that does not fit): then it goes on without a trip through the heap. Only when strictly first,
    // so ties go through the heap as before.
    const Run& r = runs_[last_run_];
    const auto& [submit, id] = order_keys_[r.begin];
    const HeapEntry e{ShareOf(r.tenant), submit, id, last_run_};
    if (heap_.empty() || Later()(heap_.front(), e)) return runs_[last_run_].begin++;
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), Later());
  }
  last_run_ = -1;
  while (heap_.empty()) {
    if (!StartNextLevel()) return -1;
  }
  std::pop_heap(heap_.begin(), heap_.end(), Later());
  const int run = heap_.back().run;
  heap_.pop_back();
  last_run_ = run;
  return runs_[run].begin++;
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
  DrfQueue queue(jobs, waiting, tenant_of, ledger, totals);
  std::vector<int> order;
  for (int j = queue.Next(); j >= 0; j = queue.Next()) order.push_back(j);
  return order;
}

}  // namespace xpool
