#pragma once
// Gang placement: all replicas of a job or none. Each replica is scheduled against the state as the earlier
// replicas would leave it (applied one by one), and everything applied is released again before returning, so
// the caller commits the whole plan in one step or not at all.
//
// Free function; mutates `state` only transiently (usage is restored exactly; node generations advance).
// Not thread-safe: the caller owns the state.
#include <functional>
#include <string>
#include <vector>

#include "model/cluster_state.h"
#include "model/task_request.h"
#include "scheduler/policy.h"
#include "scheduler/schedule.h"

namespace xpool {

struct GangOutcome {
  OutcomeKind kind = OutcomeKind::kNeverFits;
  // When kPlaced: one allocation per replica, in order; applying them in order to the state succeeds.
  std::vector<Allocation> allocations;
  // When not placed: which replica failed and why ("replica 3 of 4: 2 nodes: not enough CPU").
  int failed_replica = -1;
  std::string reason;
};

GangOutcome PlanGang(ClusterState& state, const std::vector<TaskRequest>& replicas, PlacementPolicy& policy, Rng& rng);

// As above with each replica scheduled by `schedule` against `state` as the earlier replicas leave it (a
// Scheduler over `state`, say: it follows the applies and releases through the state's change journal). The
// overload above is this one with Schedule(state, replica, policy, rng).
using ReplicaScheduler = std::function<ScheduleOutcome(const TaskRequest& replica)>;
GangOutcome PlanGang(ClusterState& state, const std::vector<TaskRequest>& replicas, const ReplicaScheduler& schedule);

}  // namespace xpool
