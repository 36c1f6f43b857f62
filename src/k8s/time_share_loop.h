#pragma once
// TimeShareLoop: time-sharing on Kubernetes — the extender's own loop that suspends preemptible pods for waiting
// pods of higher priority (or of a tenant reclaiming its guarantee), with the server's victim rules
// (KubeCluster::ChooseVictims → scheduler/preemption/victim_selection.h). The contract is in docs/kubernetes.md,
// "Time-sharing on Kubernetes".
//
// Each pass (RunOnce), only while the cluster view is synced with the API server (else it does nothing):
//   1. victims being suspended: one whose deadline has passed and still holds its devices is evicted (Eviction API,
//      with the pod's terminationGracePeriodSeconds; a disruption budget's refusal is retried on the next pass);
//      one that left (exited, deleted) is done;
//   2. the waiting managed pods of this scheduler, in line: priority (high first), then when their owner was
//      first seen waiting (a Job's recreated pod keeps its owner's place), then uid;
//   3. for each of the first few that fit no node now but would on an emptier one, and have no claim yet:
//      the victims; each gets the annotation xpool.io/suspend-by (now + its grace period), its owner's suspension
//      is counted (the cap holds across recreation), and the preemptor claims the node: until it binds (or the
//      claim expires) the filter keeps pods behind it in line off that node (HoldReason).
// An API call that fails ends the pass; what was already recorded stays, and the next pass continues from there.
// Records (suspensions per owner, owners' places in line) are in memory: a restart forgets them.
// Owns its thread (Start/Stop from one thread); RunOnce, HoldReason and the accessors are thread-safe.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "common/clock.h"
#include "k8s/extender.h"
#include "k8s/kube_api.h"
#include "k8s/kube_cluster.h"
#include "k8s/time_share.h"

namespace xpool::k8s {

struct TimeShareOptions {
  PreemptionRules rules;
  TenantConfig tenants;
  std::string scheduler_name = "xpool-scheduler";  // whose pending pods preempt; "" = any scheduler's
  int64_t interval_ms = 2000;
  int max_preemptors_per_pass = 4;  // victim searches per pass, from the head of the line
  // How long a preemptor's claim on its node lasts past its victims' deadlines without it binding.
  TimeMicros claim_slack = 120 * kMicrosPerSecond;
};

struct TimeShareStats {
  int64_t passes = 0;
  int64_t skipped_unsynced = 0;  // passes that did nothing: the view was not synced
  int64_t suspended = 0;         // victims annotated
  int64_t evicted = 0;
  int64_t eviction_refused = 0;  // by a PodDisruptionBudget (429): retried on the next pass
  int64_t api_errors = 0;
  int in_flight = 0;  // victims annotated, not yet gone
  int claims = 0;
};

class TimeShareLoop {
 public:
  TimeShareLoop(KubeApi& api, KubeCluster& cluster, const SyncState& sync, TimeShareOptions options,
                const Clock& clock = RealClock::Instance())
      : api_(api), cluster_(cluster), sync_(sync), options_(std::move(options)), clock_(clock) {}
  ~TimeShareLoop() { Stop(); }

  void Start();
  void Stop();
  // One pass (see above). OK, or the first API error (the pass stopped there) or the sync error.
  Status RunOnce();

  // Non-empty when `node` is claimed by a preemptor other than `pod` that is ahead of it in line, e.g.
  // "node gpu-1: its devices are being freed for pod ml/big (priority 90), which is ahead in line", or when a
  // waiting pod of suspended work (its owner was suspended in the last hour) is ahead of `pod` and fits the node
  // now: resumed work keeps its place ("node gpu-1: pod ml/train-7 (priority 10), resumed work ahead in line,
  // fits here first").
  std::string HoldReason(const PodInfo& pod, const PodTerms& terms, const std::string& node);
  // Empty when the pod keeps its namespace within its configured limits; else the limit it breaks (the filter
  // makes it wait with that reason, and it suspends nobody).
  std::string LimitReason(const PodInfo& pod, const PodTerms& terms, const PodDemand& demand) const {
    return cluster_.LimitReason(pod.uid, terms, demand, options_.tenants);
  }
  // The victim search of the preempt verb: the same rules, tenants and records, on `node` only.
  Result<VictimPlan> ChooseOnNode(const PodInfo& pod, const PodTerms& terms, const PodDemand& demand,
                                  const std::string& node);

  TimeShareStats Stats() const;
  int SuspensionsLastHour(const std::string& queue_key) const;
  // The owner's place in line (when a pod of it was first seen waiting); 0 when unknown.
  TimeMicros QueuedSince(const std::string& queue_key) const;

 private:
  struct InFlight {
    std::string ns, name;
    TimeMicros deadline = 0;
    int64_t grace_seconds = 0;
    bool evicted = false;
  };
  struct Claim {
    std::string pod_key;
    std::string node;
    int priority = 0;
    TimeMicros queued = 0;
    TimeMicros expires = 0;
  };
  struct Waiting {
    PodInfo pod;
    PodTerms terms;
    PodDemand demand;
    TimeMicros queued = 0;
  };

  // Step 1. API calls without mu_ held.
  Status Deliver(TimeMicros now);
  // Step 2: the waiting pods in line (records their owners' places).
  std::vector<Waiting> Line(TimeMicros now);
  // Step 3 for one waiting pod.
  Status Preempt(const Waiting& w, const std::vector<std::string>& nodes, TimeMicros now);
  VictimSearch SearchLocked(const PodTerms& terms, const std::string& pod_key, std::vector<std::string> nodes,
                            TimeMicros now) const;
  TimeMicros QueuedLocked(const std::string& key, TimeMicros now);
  int SuspensionsLocked(const std::string& key, TimeMicros now) const;
  // True when (priority, queued, uid) of a comes before b in line.
  static bool Ahead(int pa, TimeMicros qa, const std::string& ua, int pb, TimeMicros qb, const std::string& ub);

  KubeApi& api_;
  KubeCluster& cluster_;
  const SyncState& sync_;
  const TimeShareOptions options_;
  const Clock& clock_;

  std::mutex pass_mu_;                         // one pass at a time
  mutable std::mutex mu_;                      // the records; never held across an API call
  std::map<std::string, InFlight> in_flight_;  // victim uid → delivery; guarded by mu_
  std::map<std::string, Claim> claims_;        // preemptor uid → its node; guarded by mu_
  std::vector<Waiting> resumed_;               // waiting pods of suspended owners, in line (last pass); guarded by mu_
  std::map<std::string, std::vector<TimeMicros>> suspensions_;  // queue key → times; guarded by mu_
  std::map<std::string, TimeMicros> queued_;                    // queue key → first seen waiting; guarded by mu_
  std::map<std::string, TimeMicros> last_seen_;                 // queue key → last seen waiting; guarded by mu_
  TimeShareStats stats_;                                        // guarded by mu_

  std::atomic<bool> stop_{false};
  std::mutex wake_mu_;
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace xpool::k8s
