#pragma once
// Scheduler: a stateful accelerator over Schedule() for a scheduling loop (the server's, a simulator run, the
// benchmark). It gives the same placements as Schedule() for deterministic policies, faster, by remembering
// per-node work between calls and redoing only what changed (ClusterState's change journal):
//
//   * Ordered walk, for cacheable policies with a NodeOrderKey (ScoringTraits) and TieBreak::kFirst (best-fit, binpack,
//   spread):
//     nodes are kept in key order in a few partitions by what they can still take (idle devices; else the best
//     shareable free compute, in 100-milli buckets). A placement walks only the partitions that can hold the
//     request, in key order, and stops at the first fitting node whose score drops below the best (the key is
//     monotone in the score), taking the lowest node index among equal best scores.
//   * Score cache, for other cacheable policies. Nodes alike in description (names, uuids aside), usage (up to a
//     permutation of alike devices) and the policy's NodeTag share a state id, and a shape's verdict is computed
//     once per state. Per shape, each node's verdict sits in a max segment tree refreshed for the nodes changed
//     since the shape was last used. For requests naming no uuid, a shape used seldom instead scans the live
//     node states (a few hundred to ~1,000 on openb, in recycled slots; one verdict per slot while it holds the
//     same state), the best states win and the tie rule picks among their nodes — so hundreds of rarely used shapes do
//     not each catch up a tree; the tree is rebuilt once the shape is used often again. TieBreak::kRandom draws once
//     per placement (uniform over the tied nodes, as Schedule(), though the same seed picks a different node than
//     Schedule()'s per-tie reservoir draws).
//   * Otherwise (policies that use the rng or keep state): the full scan of Schedule().
// In every mode the wait / never-fits decision is cached per request shape until a node's description changes.
//
// Owns its caches; holds references to the state and the policy, which must outlive it. Not thread-safe: one
// loop owns it, as it owns the ClusterState it watches.
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
  static constexpr int kFallBack = -2;                    // a cacheable policy contradicted itself: use the full scan
  void SyncOrdered();                                     // partitions up to date with the journal
  int WalkOrdered(const TaskRequest& request, Rng& rng);  // the best node, or -1
  void SyncStates();                                      // node state ids up to date with the journal
  int ScanCache(const TaskRequest& request, Rng& rng);    // the best node, -1, or kFallBack
  struct ShapeCache;
  // The score cache's best node for `request` (whose cache key is `key`), or -1: by live node states / by node.
  int ScanStates(ShapeCache& cache, const TaskRequest& key, const TaskRequest& request, Rng& rng);
  int ScanNodes(ShapeCache& cache, const TaskRequest& key, const TaskRequest& request, Rng& rng);
  int64_t SlotVerdict(ShapeCache& cache, const TaskRequest& key, int slot);       // memoised per live-state slot
  int64_t RangeVerdict(ShapeCache& cache, const TaskRequest& request, int slot);  // per slot and memory range
  int64_t Evaluate(const TaskRequest& key, int node);  // FitNode + Score as one cached verdict
  // ScanStates' slots without a memoised verdict, scored last and skipped where the policy's bounds allow.
  void ScoreFresh(ShapeCache& cache, const TaskRequest& key, const TaskRequest& request, int64_t* best,
                  bool* memory_short);

  const ClusterState& state_;
  PlacementPolicy& policy_;
  const ScoringTraits traits_;  // the policy's, read once
  SchedulerOptions options_;
  SchedulerMode mode_ = SchedulerMode::kFullScan;
  SchedulerStats stats_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xpool
