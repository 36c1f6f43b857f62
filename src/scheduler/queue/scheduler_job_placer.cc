#include "scheduler/queue/scheduler_job_placer.h"

#include <utility>
#include <vector>

#include "scheduler/gang.h"

namespace xpool {
namespace {

SchedulerOptions Terse(SchedulerOptions options) {
  options.explain = false;
  return options;
}

}  // namespace

SchedulerJobPlacer::SchedulerJobPlacer(ClusterState& state, PlacementPolicy& policy, Rng& rng, SchedulerOptions options)
    : state_(state),
      policy_(policy),
      rng_(rng),
      explain_(options.explain),
      scheduler_(state, policy, Terse(options)),
      explainer_(state) {}

ScheduleOutcome SchedulerJobPlacer::ScheduleOne(const TaskRequest& request, bool explain) {
  ScheduleOutcome o = scheduler_.Schedule(request, rng_);
  if (o.kind == OutcomeKind::kWait && explain) {
    // The per-node reason tally, as Schedule() words it.
    ScheduleOutcome why = explainer_.Explain(request, policy_, rng_);
    if (why.kind != OutcomeKind::kPlaced) {
      o.kind = why.kind;
      o.reason = std::move(why.reason);
    }
  }
  return o;
}

JobPlacement SchedulerJobPlacer::Place(ClusterState& state, const TaskRequest& request, int replicas) {
  // A gang's failed replica is always explained (as PlanGang does); one replica when `explain`.
  return Ask(state, request, replicas, /*explain_one=*/explain_, /*explain_gang=*/true);
}

JobPlacement SchedulerJobPlacer::Probe(ClusterState& state, const TaskRequest& request, int replicas) {
  return Ask(state, request, replicas, false, false);
}

JobPlacement SchedulerJobPlacer::Ask(ClusterState& state, const TaskRequest& request, int replicas, bool explain_one,
                                     bool explain_gang) {
  JobPlacement out;
  const bool own = &state == &state_;  // the Scheduler's caches follow state_ only
  if (replicas == 1) {
    ScheduleOutcome o = own ? ScheduleOne(request, explain_one) : Schedule(state, request, policy_, rng_);
    out.kind = o.kind;
    out.reason = std::move(o.reason);
    if (o.kind == OutcomeKind::kPlaced) out.allocations.push_back(std::move(o.allocation));
    return out;
  }
  const std::vector<TaskRequest> all(replicas, request);
  GangOutcome g = own ? PlanGang(state, all, [&](const TaskRequest& r) { return ScheduleOne(r, explain_gang); })
                      : PlanGang(state, all, policy_, rng_);
  out.kind = g.kind;
  out.allocations = std::move(g.allocations);
  out.reason = std::move(g.reason);
  return out;
}

void SchedulerJobPlacer::OnBooked(const ClusterState& state, const TaskRequest& request,
                                  const std::vector<Allocation>& allocations) {
  for (const Allocation& a : allocations) policy_.OnPlaced(state, request, a);
}

}  // namespace xpool
