#pragma once
// The order in which waiting jobs are considered (issue 7, item 1):
//   1. priority, high first;
//   2. among equal priorities, the tenant with the lowest dominant-resource share first — DRF
//   (Ghodsi et al.,
//      "Dominant Resource Fairness", NSDI '11) over GPU compute, GPU memory and CPU — re-ranked
//      after every placement, so tenants take turns (progressive filling) rather than one tenant's
//      whole backlog going first;
//   3. within a tenant, the job's *first* submit time (a suspended job keeps its place), then the
//   job id.
//
// DrfQueue is the cursor a scheduling pass walks; OrderQueue is the same order with no placements,
// for showing positions in a queue listing. Both are pure and single-threaded.
#include <cstdint>
#include <utility>
#include <vector>

#include "model/cluster_state.h"
#include "scheduler/queue/queue_types.h"
#include "scheduler/queue/tenant_ledger.h"

namespace xpool {

class DrfQueue {
 public:
  // `waiting`: indices into `jobs` to order, each with a priority in 0..100 (validated);
  // `tenant_of[i]`: ledger index of jobs[i]'s tenant (valid for every waiting job). `jobs`, `tenant_of`, `ledger` and
  // `totals` must outlive the queue; shares are read from the ledger when a tenant is (re-)ranked.
  DrfQueue(const std::vector<QueueJob>& jobs, const std::vector<int>& waiting, const std::vector<int>& tenant_of,
           const TenantLedger& ledger, const ClusterTotals& totals);
  // The same, from what the order needs of each waiting job, read by the caller (a pass reads
  // every job once anyway, so the queue does not read them again).
  struct Waiting {
    int index;     // into the jobs
    int priority;  // 0..100
    TimeMicros first_submit;
    int64_t id;
  };
  DrfQueue(const std::vector<Waiting>& waiting, const std::vector<int>& tenant_of, const TenantLedger& ledger,
           const ClusterTotals& totals);

  // The next job index, or -1 when every waiting job was returned. The tenant of the previous job
  // is re-ranked with its share as it is now, so book a placement in the ledger before asking for
  // the next job.
  int Next();
  // As Next, but the job's position in order() (-1 when done): a caller that keeps per-job data
  // in that order reads it nearly sequentially, where job indices come all over the place.
  int NextPosition();
  // Every waiting job, grouped by priority level and tenant, each group by first submit and id.
  const std::vector<int>& order() const { return order_; }
  // Re-ranks every tenant of the current priority level (after a suspension changed other tenants'
  // shares).
  void RerankAll();

 private:
  struct Run {  // one tenant's jobs at one priority level: order_[begin, end)
    int begin = 0;
    int end = 0;
    int tenant = 0;
  };
  struct HeapEntry {
    int64_t share;
    TimeMicros head_submit;
    int64_t head_id;
    int run;
  };
  void Push(int run);
  int64_t ShareOf(int tenant);
  bool StartNextLevel();

  const std::vector<int>& tenant_of_;
  const TenantLedger& ledger_;
  const ClusterTotals& totals_;
  std::vector<int> order_;
  std::vector<std::pair<TimeMicros, int64_t>> order_keys_;  // (first submit, id) of order_[i]
  std::vector<Run> runs_;
  std::vector<int> level_starts_;  // first run of each priority level, plus runs_.size()
  int level_ = -1;
  int last_run_ = -1;  // the run the previous Next() took from; re-pushed on the next call
  std::vector<HeapEntry> heap_;
  struct CachedShare {
    uint64_t version = ~uint64_t{0};
    int64_t share = 0;
  };
  std::vector<CachedShare> shares_;  // per tenant, valid while the ledger's version matches
};

// Waiting (pending or suspended) jobs in the order a pass would consider them if it placed nothing.
// Jobs whose input is bad (see ValidateQueueJob, unknown tenant) are left out. Usage comes from the
// running jobs.
std::vector<int> OrderQueue(const std::vector<QueueJob>& jobs, const std::vector<Tenant>& tenants,
                            const ClusterTotals& totals);

}  // namespace xpool
