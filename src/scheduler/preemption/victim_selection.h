#pragma once
// Victim choice for time-sharing (issue 7, item 3): which running jobs to suspend so a waiting job
// fits.
//
// Rules, as implemented:
//   1. Who may be a victim (JudgeVictim): a running, preemptible job, not the preemptor, that
//   started at least
//      `min_runtime` ago (no thrash), was suspended fewer than `max_suspensions_per_hour` times in
//      the last hour, and either
//        a. has a lower priority than the preemptor (kByPriority), or
//        b. has an equal or lower priority, belongs to another tenant that runs above its
//        guarantee, while the
//           preemptor's tenant stays within its guarantee with the preemptor (kByGuarantee).
//      A job of equal or higher priority is never a victim otherwise.
//   2. Ranking (RankVictims): lower priority first, then tenants above their guarantee, then least
//   work lost
//      (shortest time since the last start), then job id. Guarantee-rule victims are only taken
//      while their tenant is still above its guarantee after the ones taken before.
//   3. Search (ChooseVictims): the shortest prefix of the ranking after whose suspension the whole
//   job (one
//      replica: on one node; a gang: across nodes) fits — found by binary search, fits being
//      monotone in the prefix; then victims on nodes the placement does not use are dropped, and
//      each remaining victim, most valuable first, is spared if the job still fits without
//      suspending it. The result is minimal: no victim can be spared. (Kubernetes' default
//      preemption prunes the same way, per node.)
//
// Free functions, pure: `state` is borrowed as scratch and left as found. Single-threaded.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "model/cluster_state.h"
#include "scheduler/queue/job_placer.h"
#include "scheduler/queue/queue_types.h"
#include "scheduler/queue/tenant_ledger.h"

namespace xpool {

struct PreemptionRules {
  // A job that started less than this long ago is not a victim. Configurable per cluster.
  TimeMicros min_runtime = 10 * 60 * kMicrosPerSecond;
  // A job suspended this many times in the last hour is not a victim again until the count drops.
  int max_suspensions_per_hour = 3;
};

enum class VictimVerdict : uint8_t {
  kByPriority,   // may be suspended: lower priority
  kByGuarantee,  // may be suspended: the preemptor's tenant reclaims its guarantee
  kNotRunning,
  kNotPreemptible,
  kSameJob,
  kTooYoung,           // started less than min_runtime ago
  kSuspendedTooOften,  // at the cap of suspensions per hour
  kNotLowerPriority,   // equal or higher priority and the guarantee rule does not apply
};
std::string_view VictimVerdictName(VictimVerdict verdict);
inline bool IsVictim(VictimVerdict v) { return v == VictimVerdict::kByPriority || v == VictimVerdict::kByGuarantee; }

// What the rules say about one running job for one preemptor. `preemptor_within_guarantee`: the
// preemptor's tenant stays within its guarantee with the preemptor;
// `victim_tenant_above_guarantee`: the candidate's tenant runs above its guarantee.
VictimVerdict JudgeVictim(const QueueJob& preemptor, bool preemptor_within_guarantee, const QueueJob& victim,
                          bool victim_tenant_above_guarantee, const PreemptionRules& rules, TimeMicros now);

// Why lower-priority work that would otherwise be a victim is not one yet: the running, preemptible jobs of
// lower priority than `preemptor` (not `excluded`, under the suspension cap) that started less than
// `rules.min_runtime` ago, as "; job 3 (priority 10) is inside its min-runtime (10m): it may be suspended for this
// job in 9m" (several: "; jobs 3, 4 (priority 10..20) are inside their min-runtime (10m): the first may be
// suspended for this job in 1m, all in 9m"); "" when there are none. `by_running_order` as for RankVictims.
std::string MinRuntimeNote(const std::vector<QueueJob>& jobs, const std::vector<int>& by_running_order,
                           const std::vector<bool>& excluded, const QueueJob& preemptor, const PreemptionRules& rules,
                           TimeMicros now);

// Indices of running jobs sorted by (priority, time since last start, id), ascending: the order
// RankVictims expects. Sort once per pass.
std::vector<int> SortRunningForPreemption(const std::vector<QueueJob>& jobs, const std::vector<int>& running,
                                          TimeMicros now);

// The eligible victims for `preemptor`, in rank order (rules 1 and 2 above). `by_running_order`
// comes from SortRunningForPreemption; `preemptor_within_guarantee` as for JudgeVictim;
// `tenant_of[i]` is the ledger index of jobs[i]'s tenant (-1: unknown, never a victim);
// `excluded[i]` (optional, may be empty) marks jobs already taken by an earlier decision;
// `held[i]` (optional) is HeldBy(jobs[i]) for every running job, computed once by a caller that
// ranks many times.
std::vector<int> RankVictims(const std::vector<QueueJob>& jobs, const std::vector<int>& by_running_order,
                             const std::vector<int>& tenant_of, const std::vector<bool>& excluded,
                             const QueueJob& preemptor, bool preemptor_within_guarantee, const TenantLedger& ledger,
                             const PreemptionRules& rules, TimeMicros now,
                             const std::vector<ResourceAmounts>* held = nullptr);

// RankVictims computed on demand: the same order, ranked only as far as a search reads (a search
// usually needs a few victims out of thousands of running jobs). Holds references to every argument;
// one preemptor, one thread.
class VictimRanking {
 public:
  VictimRanking(const std::vector<QueueJob>& jobs, const std::vector<int>& by_running_order,
                const std::vector<int>& tenant_of, const std::vector<bool>& excluded, const QueueJob& preemptor,
                bool preemptor_within_guarantee, const TenantLedger& ledger, const PreemptionRules& rules,
                TimeMicros now, const std::vector<ResourceAmounts>* held = nullptr);
  // Ranks until at least `count` victims are known or every one is; returns how many are known.
  size_t RankUntil(size_t count);
  const std::vector<int>& ranked() const { return ranked_; }
  std::vector<int> TakeAll() &&;

 private:
  const std::vector<QueueJob>& jobs_;
  const std::vector<int>& by_running_order_;
  const std::vector<int>& tenant_of_;
  const std::vector<bool>& excluded_;
  const QueueJob& preemptor_;
  const bool within_;
  const TenantLedger& ledger_;
  const PreemptionRules& rules_;
  const TimeMicros now_;
  const std::vector<ResourceAmounts>* held_;
  std::vector<ResourceAmounts> remaining_;  // tenant usage after the victims taken so far
  std::vector<int> ranked_;
  // Where ranking stopped: the priority group [group_, end_), the pass over it, the next member.
  size_t group_ = 0;
  size_t end_ = 0;
  int pass_ = 0;
  size_t next_ = 0;
  bool done_ = false;
};

struct VictimChoice {
  bool found = false;
  std::vector<int> victims;             // indices into jobs, in rank order
  std::vector<Allocation> allocations;  // where the preemptor goes once the victims have left
  std::string reason;                   // when not found: why
};

// Rule 3 over `ranked` (from RankVictims). `state` must hold every candidate's allocations; it is
// changed while searching and restored before returning. Fails (Internal) only when a candidate's
// allocations are not booked in `state`.
Result<VictimChoice> ChooseVictims(ClusterState& state, const std::vector<QueueJob>& jobs,
                                   const std::vector<int>& ranked, const QueueJob& preemptor, JobPlacer& placer);
// The same over a ranking computed as far as the search reads (identical result).
Result<VictimChoice> ChooseVictims(ClusterState& state, const std::vector<QueueJob>& jobs, VictimRanking& ranking,
                                   const QueueJob& preemptor, JobPlacer& placer);

// Readable reasons for both sides of a suspension, e.g.
//   preemptor: "suspends job 12 (tenant b, priority 10): lower priority (10 < 90)"
//   victim:    "suspended for job 7 (tenant a, priority 90): lower priority (10 < 90)".
std::string PreemptorReason(const QueueJob& victim, const std::string& victim_tenant, VictimVerdict why,
                            const QueueJob& preemptor, const std::string& preemptor_tenant);
std::string VictimReason(const QueueJob& victim, const std::string& victim_tenant, VictimVerdict why,
                         const QueueJob& preemptor, const std::string& preemptor_tenant);

}  // namespace xpool
