#include "scheduler/scheduler.h"

#include <string>
#include <unordered_map>

#include "scheduler/fit.h"
#include "scheduler/internal/engine.h"
#include "scheduler/internal/request_key.h"

namespace xpool {
namespace {

// Whether some node could take a request shape when empty, and why not; valid for a node count and description
// version.
struct StaticVerdict {
  uint64_t description_version = 0;
  int node_count = -1;
  bool fits_somewhere = false;
  std::string never_reason;
};

}  // namespace

struct Scheduler::Impl {
  std::unique_ptr<scheduler_internal::Engine> engine;
  std::unordered_map<TaskRequest, StaticVerdict, scheduler_internal::RequestHash, scheduler_internal::RequestEq>
      statics;
  int64_t seen_max_cpu = -1;
  int64_t seen_max_compute = -1;
  uint64_t seen_epoch = 0;  // the policy's ScoreEpoch() the engine's scores were computed under
};

Scheduler::Scheduler(const ClusterState& state, PlacementPolicy& policy, SchedulerOptions options)
    : state_(state), policy_(policy), traits_(policy.traits()), options_(options), impl_(std::make_unique<Impl>()) {
  const scheduler_internal::EngineContext context{state_, policy_, traits_, options_, stats_};
  if (!traits_.cacheable) {
    mode_ = SchedulerMode::kFullScan;
    impl_->engine = scheduler_internal::MakeFullScan(context);
  } else if (traits_.node_order_key && policy_.tie_break() == TieBreak::kFirst) {
    mode_ = SchedulerMode::kOrderedWalk;
    impl_->engine = scheduler_internal::MakeOrderedWalk(context);
  } else {
    mode_ = SchedulerMode::kScoreCache;
    impl_->engine = scheduler_internal::MakeStateCache(context);
  }
}

Scheduler::~Scheduler() = default;

ScheduleOutcome Scheduler::Schedule(const TaskRequest& request, Rng& rng) {
  Impl& m = *impl_;
  ++stats_.calls;
  if (Status valid = ValidateTaskRequest(request); !valid.ok()) {
    ScheduleOutcome out;
    out.reason = "invalid request: " + valid.message();
    return out;
  }
  if (mode_ != SchedulerMode::kFullScan) {
    // Cacheable scores depend on the largest node's capacity and the policy's learned state: when either moves,
    // the engine starts over.
    const ClusterTotals& totals = state_.totals();
    if (totals.max_node_cpu_milli != m.seen_max_cpu || totals.max_node_device_compute_milli != m.seen_max_compute) {
      m.seen_max_cpu = totals.max_node_cpu_milli;
      m.seen_max_compute = totals.max_node_device_compute_milli;
      m.engine->DropScores();
    }
    if (policy_.ScoreEpoch() != m.seen_epoch) {
      m.seen_epoch = policy_.ScoreEpoch();
      m.engine->DropScores();
    }
  }
  ScheduleOutcome out;
  if (m.engine->Schedule(request, rng, &out)) return out;
  if (options_.explain) return xpool::Schedule(state_, request, policy_, rng);
  // Wait or never: whether some node could take it when empty, cached until a node's description changes.
  StaticVerdict& sv = m.statics[request];
  if (sv.node_count != state_.node_count() || sv.description_version != state_.description_version()) {
    ReasonTally none(request);
    ScheduleOutcome o = NotPlacedOutcome(state_, request, none);
    sv.node_count = state_.node_count();
    sv.description_version = state_.description_version();
    sv.fits_somewhere = o.kind == OutcomeKind::kWait;
    sv.never_reason = o.kind == OutcomeKind::kNeverFits ? o.reason : "";
  }
  out.kind = sv.fits_somewhere ? OutcomeKind::kWait : OutcomeKind::kNeverFits;
  out.reason = sv.fits_somewhere ? "no node can take it now" : sv.never_reason;
  return out;
}

}  // namespace xpool
