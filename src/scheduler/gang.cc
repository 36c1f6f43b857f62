#include "scheduler/gang.h"

namespace xpool {

GangOutcome PlanGang(ClusterState& state, const std::vector<TaskRequest>& replicas, PlacementPolicy& policy, Rng& rng) {
  return PlanGang(state, replicas, [&](const TaskRequest& replica) { return Schedule(state, replica, policy, rng); });
}

GangOutcome PlanGang(ClusterState& state, const std::vector<TaskRequest>& replicas, const ReplicaScheduler& schedule) {
  GangOutcome out;
  if (replicas.empty()) {
    out.reason = "the job has no replicas";
    return out;
  }
  std::vector<Allocation> applied;
  applied.reserve(replicas.size());
  OutcomeKind failed_kind = OutcomeKind::kPlaced;
  for (size_t i = 0; i < replicas.size(); ++i) {
    ScheduleOutcome o = schedule(replicas[i]);
    Status s = o.kind == OutcomeKind::kPlaced ? state.Apply(o.allocation) : Status::Ok();
    if (o.kind != OutcomeKind::kPlaced || !s.ok()) {
      failed_kind = o.kind == OutcomeKind::kPlaced ? OutcomeKind::kWait : o.kind;
      out.failed_replica = static_cast<int>(i);
      out.reason = "replica " + std::to_string(i + 1) + " of " + std::to_string(replicas.size()) + ": " +
                   (s.ok() ? o.reason : s.message());
      break;
    }
    applied.push_back(std::move(o.allocation));
  }
  // Undo in reverse order: the state's usage is exactly as before.
  for (auto it = applied.rbegin(); it != applied.rend(); ++it) CheckOk(state.Release(*it), "undoing the trial");
  if (out.failed_replica >= 0) {
    // A later replica that could fit an empty cluster but not beside its siblings still has to wait.
    out.kind = failed_kind;
    return out;
  }
  out.kind = OutcomeKind::kPlaced;
  out.allocations = std::move(applied);
  return out;
}

}  // namespace xpool
