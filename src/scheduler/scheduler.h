#pragma once
// Scheduler: a stateful accelerator over Schedule() for a scheduling loop (the server's, a simulator run, the
// benchmark). It gives the same placements as Schedule() for deterministic policies, faster, by remembering
// per-node work between calls and redoing only what changed (ClusterState's change journal). It reads the
// policy's ScoringTraits once and picks one engine (scheduler/internal/engine.h) for its life:
//
//   * Ordered walk (cacheable, node_order_key, TieBreak::kFirst: best-fit, binpack, spread): nodes kept in key
//     order, partitioned by what they can still take; a placement walks the partitions that can hold the request
//     and stops once the score cannot improve.
//   * State cache (other cacheable policies): nodes alike in description, usage and NodeTag share a state, and a
//     request shape's verdict is computed once per state, kept in score trees or found by scanning live states;
//     ScoreBound, MemoryRange and uniform scores save work there.
//   * Full scan (policies that promise nothing): Schedule() itself.
// The caching engines drop their scores when the policy's ScoreEpoch or the largest node's capacity moves. Without
// `explain`, the wait / never-fits decision is cached per request shape until a node's description changes.
//
// Owns its engine and caches; holds references to the state and the policy, which must outlive it. Not
// thread-safe: one loop owns it, as it owns the ClusterState it watches.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/cluster_state.h"
#include "model/task_request.h"
#include "scheduler/policy.h"
#include "scheduler/schedule.h"

namespace xpool {

struct SchedulerOptions {
  // When false, a not-placed outcome says only "no node can take it now" instead of the per-node tally (which
  // costs a pass over every node). Simulators that only count failures turn it off.
  bool explain = true;
  // Request shapes whose score caches are kept; beyond that the caches are dropped and rebuilt.
  int max_cached_shapes = 256;
};

// Work counters, for benchmarks and tuning.
struct SchedulerStats {
  int64_t calls = 0;
  int64_t nodes_visited =
      0;  // nodes looked at by the ordered walk; live node states (or refreshed nodes) by the score cache
  int64_t fit_calls = 0;     // full FitNode evaluations
  int64_t memory_scans = 0;  // score-cache picks where the cache itself turned nodes down for the request's memory
};

enum class SchedulerMode : uint8_t { kOrderedWalk, kScoreCache, kFullScan };

class Scheduler {
 public:
  Scheduler(const ClusterState& state, PlacementPolicy& policy, SchedulerOptions options = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // As Schedule(state, request, policy, rng). The state may have changed in any way since the last call.
  ScheduleOutcome Schedule(const TaskRequest& request, Rng& rng);

  SchedulerMode mode() const { return mode_; }
  const SchedulerStats& stats() const { return stats_; }

 private:
  struct Impl;

  const ClusterState& state_;
  PlacementPolicy& policy_;
  const ScoringTraits traits_;  // the policy's, read once
  SchedulerOptions options_;
  SchedulerMode mode_ = SchedulerMode::kFullScan;
  SchedulerStats stats_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xpool
