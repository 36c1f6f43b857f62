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

SchedulerJobPlacer::SchedulerJobPlacer(ClusterState& state, PlacementPolicy& policy, Rng& rng,
                                       SchedulerOptions options)
    : state_(state),
      policy_(policy),
      rng_(rng),
      explain_(options.explain),
      scheduler_(state, policy, Terse(options)) {}

JobPlacement SchedulerJobPlacer::Place(ClusterState& state, const TaskRequest& request,
                                       int replicas) {
  JobPlacement out = Probe(state, request, replicas);
  if (out.kind == OutcomeKind::kWait && replicas == 1 && explain_ && &state == &state_) {
    ScheduleOutcome o = Schedule(state, request, policy_, rng_);  // the per-node reason tally
    if (o.kind != OutcomeKind::kPlaced) {
      out.kind = o.kind;
      out.reason = std::move(o.reason);
    }
  }
  return out;
}

JobPlacement SchedulerJobPlacer::Probe(ClusterState& state, const TaskRequest& request,
                                       int replicas) {
  JobPlacement out;
  if (replicas == 1) {
    ScheduleOutcome o = &state == &state_ ? scheduler_.Schedule(request, rng_)
                                          : Schedule(state, request, policy_, rng_);
    out.kind = o.kind;
    out.reason = std::move(o.reason);
    if (o.kind == OutcomeKind::kPlaced) out.allocations.push_back(std::move(o.allocation));
    return out;
  }
  GangOutcome g = PlanGang(state, std::vector<TaskRequest>(replicas, request), policy_, rng_);
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
