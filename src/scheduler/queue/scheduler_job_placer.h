#pragma once
// SchedulerJobPlacer: the production JobPlacer. Each replica goes through the scheduler's Scheduler
// (which keeps per-node caches in step with the state's change journal); a gang goes through
// PlanGang (all replicas or none) with its replicas scheduled by that Scheduler too. A failed
// placement is explained by a PlacementExplainer (Schedule()'s words, without its full scan). The
// server's loop and the simulator both build one over their scratch ClusterState and
// PlacementPolicy, so the queue, quota and preemption decisions use exactly the placements the rest
// of xpool makes.
//
// Holds references to the state, policy and rng, which must outlive it. Not thread-safe.
#include <vector>

#include "model/cluster_state.h"
#include "scheduler/policy.h"
#include "scheduler/queue/job_placer.h"
#include "scheduler/queue/placement_explainer.h"
#include "scheduler/scheduler.h"

namespace xpool {

class SchedulerJobPlacer final : public JobPlacer {
 public:
  // The Scheduler is built with explain = false; Place explains a not-placed answer itself (as
  // Schedule() words it) when `options.explain` is true, and a gang's failed replica always (as
  // PlanGang with Schedule() did); Probe never does.
  SchedulerJobPlacer(ClusterState& state, PlacementPolicy& policy, Rng& rng, SchedulerOptions options = {});

  // `state` should be the one given to the constructor (then the Scheduler's caches serve); any
  // other state is scheduled with a full scan.
  JobPlacement Place(ClusterState& state, const TaskRequest& request, int replicas) override;
  JobPlacement Probe(ClusterState& state, const TaskRequest& request, int replicas) override;
  void OnBooked(const ClusterState& state, const TaskRequest& request,
                const std::vector<Allocation>& allocations) override;

 private:
  JobPlacement Ask(ClusterState& state, const TaskRequest& request, int replicas, bool explain_one, bool explain_gang);
  ScheduleOutcome ScheduleOne(const TaskRequest& request, bool explain);  // on state_

  ClusterState& state_;
  PlacementPolicy& policy_;
  Rng& rng_;
  bool explain_;
  Scheduler scheduler_;
  PlacementExplainer explainer_;
};

}  // namespace xpool
