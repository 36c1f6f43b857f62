#pragma once
// Internal to the Scheduler (scheduler.cc): the interface of its placement engines and what they share. Each
// engine is one way to find the node Schedule() would pick, and one file:
//   * ordered_walk.cc: nodes in the policy's NodeOrderKey order, walked until the score cannot improve;
//   * state_cache.cc: verdicts per request shape and node state, in score trees or scans of the live states;
//   * full_scan.cc: Schedule() itself, for policies that promise nothing (ScoringTraits::cacheable false).
// The Scheduler picks one from the policy's ScoringTraits when it is built. Not a public API.
#include <cstdint>
#include <memory>
#include <vector>

#include "model/cluster_state.h"
#include "model/task_request.h"
#include "scheduler/policy.h"
#include "scheduler/schedule.h"
#include "scheduler/scheduler.h"

namespace xpool::scheduler_internal {

// What an engine works on: references owned by the Scheduler, which outlive the engine.
struct EngineContext {
  const ClusterState& state;
  PlacementPolicy& policy;
  const ScoringTraits& traits;  // the policy's, read once
  const SchedulerOptions& options;
  SchedulerStats& stats;
};

// Engine: finds the node (and its devices) that Schedule() would place a request on, reusing work between calls.
// Owned by one Scheduler and used only from its thread: not thread-safe.
class Engine {
 public:
  virtual ~Engine() = default;
  // For a valid request: true with *out complete (placed; or Schedule()'s own outcome, reason included), or false
  // when no node can take the request now and the Scheduler words that outcome itself.
  virtual bool Schedule(const TaskRequest& request, Rng& rng, ScheduleOutcome* out) = 0;
  // Every cached score is stale: the cluster's largest-node capacities or the policy's ScoreEpoch moved.
  virtual void DropScores() {}
};

std::unique_ptr<Engine> MakeOrderedWalk(const EngineContext& context);  // traits: cacheable, node_order_key
std::unique_ptr<Engine> MakeStateCache(const EngineContext& context);   // traits: cacheable
std::unique_ptr<Engine> MakeFullScan(const EngineContext& context);

// The nodes changed since change_seq() `seq`, each once, read from the state's change journal. Owns its buffers;
// not thread-safe.
class ChangedNodes {
 public:
  // Fills nodes() and returns true; false when the journal does not reach back to `seq` (then rescan everything).
  bool Since(const ClusterState& state, uint64_t seq);
  const std::vector<int>& nodes() const { return nodes_; }

 private:
  std::vector<int> nodes_;
  std::vector<int> raw_;         // the journal's entries, duplicates included
  std::vector<uint64_t> stamp_;  // per node: the clock of the call that took it last (dedupes raw_)
  uint64_t clock_ = 0;
};

}  // namespace xpool::scheduler_internal
