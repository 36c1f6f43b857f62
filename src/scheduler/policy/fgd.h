#pragma once
// FgdPolicy ("fgd"): Fragmentation Gradient Descent (Weng et al., USENIX ATC '23, §5), as published.
//   1. For the request's node candidate compute F_n, the node's fragmentation against the target workload
//      (scheduler/fragmentation.h).
//   2. For each device choice — each fitting device for a GPU-sharing request, the first fitting devices for a
//      whole-device or CPU-only request — compute F_n after placing the request there; Δ = before − after.
//   3. score = ⌊100 · sigmoid(Δ / 1000)⌋ (the integer truncation is part of the published algorithm); the best
//      device choice (first among equals) is the one allocated. Equal node scores: the last node wins.
// The target workload is either given (the paper derives it from the whole trace) or learned from arrivals
// (OnArrival; rebuilt when the arrival count doubles or every 512 arrivals).
// Cacheable: scores change only when the learned target is rebuilt (ScoreEpoch); the Scheduler caches them.
// Not thread-safe: one object per scheduling loop.
#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/fragmentation.h"
#include "scheduler/policy.h"

namespace xpool {

// FragmentationPolicyBase: what FGD and xpool's `default` share — the target workload (given, or learned from
// arrivals and rebuilt at growing intervals) and the device choice for a GPU-sharing request (the best-scoring
// fitting device). Subclasses say how a device choice is scored (Evaluate) and how equal-scored devices are
// ordered (PreferOnTie). Not thread-safe.
class FragmentationPolicyBase : public PlacementPolicy {
 public:
  bool Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate, Rng& rng,
             int64_t* score, std::vector<int>* chosen_devices) final;
  void OnArrival(const TaskRequest& request) override;  // subclasses that override it call it first
  const TargetWorkload& target() const { return target_; }
  FragmentationPolicyBase(const FragmentationPolicyBase&) = delete;  // meter_ points at target_
  FragmentationPolicyBase& operator=(const FragmentationPolicyBase&) = delete;

 protected:
  // learn: rebuild the target from arrivals, every time the count doubles and then every `rebuild_step`.
  FragmentationPolicyBase(TargetWorkload target, bool learn, int64_t rebuild_step)
      : target_(std::move(target)), learn_(learn), rebuild_step_(rebuild_step), meter_(&target_) {}
  bool learning() const { return learn_; }
  // Times the learned target was rebuilt (each changes the scores).
  uint64_t target_rebuilds() const { return target_rebuilds_; }
  // meter().Weighted of the node's free state before any placement (memoised per node with that state).
  int64_t NodeWeightedBefore(const ClusterState& state, int node);
  // Drops the memoised fragmentation before placement: for subclasses whose measure changed. Not from within
  // Evaluate.
  void ClearScoreCache() { before_.clear(); }

  // Score of placing `request` on `devices` of `node`, whose free state is in scratch() and whose weighted
  // fragmentation before placement is `before`.
  virtual int64_t Evaluate(const ClusterState& state, const TaskRequest& request, int node,
                           const std::vector<int>& devices, int64_t before) = 0;
  // False when Evaluate ignores its `before` argument (it is then passed as 0 and not measured).
  virtual bool uses_weighted_before() const { return true; }
  // For a sharing request: whether device `d` should replace `best` when both score the same. Evaluate and
  // PreferOnTie must depend on a device only through its free compute and model: of several devices alike in
  // both, only the first is evaluated.
  virtual bool PreferOnTie(const ClusterState& /*state*/, int /*node*/, int /*d*/, int /*best*/) const { return false; }
  NodeFree& scratch() { return scratch_; }
  // WeightedNodeFragment against target(), by per-model tables (reset when the target is rebuilt).
  FragmentMeter& meter() { return meter_; }

 private:
  TargetWorkload target_;
  bool learn_;
  int64_t rebuild_step_;
  std::vector<WeightedShape> seen_;  // learned counts, first-seen order
  int64_t arrivals_ = 0;
  int64_t next_rebuild_ = 1;
  uint64_t target_rebuilds_ = 0;

  // A node's weighted fragmentation before placement depends only on its free CPU, free compute and models: kept
  // per node with the free state it was measured on (compared in full, so a copied or changed cluster is safe),
  // reused by every request shape scored on that state.
  struct Before {
    bool valid = false;
    int64_t cpu_milli = 0;
    std::vector<int64_t> gpu_milli;
    std::vector<std::string> gpu_model;
    // The state (identity) and description_version under which gpu_model was last found equal to the node's:
    // models change only with the description, so the string compare is skipped while both are unchanged.
    uint64_t models_identity = 0;
    uint64_t models_version = ~uint64_t{0};
    int64_t weighted = 0;
  };
  // meter_.Weighted(scratch_), scratch_ being node's free state in `state`.
  int64_t WeightedBefore(const ClusterState& state, int node);

  FragmentMeter meter_;         // over target_
  std::vector<Before> before_;  // [node]
  NodeFree scratch_;
  std::vector<int> one_device_;  // Score's one-device choice for a sharing request (no allocation)
};

class FgdPolicy final : public FragmentationPolicyBase {
 public:
  FgdPolicy() : FragmentationPolicyBase(TargetWorkload(), /*learn=*/true, 512) {}
  explicit FgdPolicy(TargetWorkload target) : FragmentationPolicyBase(std::move(target), /*learn=*/false, 512) {}

  std::string_view name() const override { return "fgd"; }
  TieBreak tie_break() const override { return TieBreak::kLast; }
  // The score is a function of the node, the request and the target, which changes only when a learned target is
  // rebuilt (ScoreEpoch). The fragmentation measure reads CPU and GPU compute only, not memory.
  ScoringTraits traits() const override {
    return {.cacheable = true, .ignores_request_memory = true, .score_bounds = true};
  }
  uint64_t ScoreEpoch() const override { return target_rebuilds(); }
  // Placing a pod never leaves less than no fragmentation: Δ = before − after ≤ before, and the score is monotone
  // in Δ, so the score of the node's fragmentation before placement bounds every request's.
  // Nodes with a device below a whole device's compute have none (a whole-device grant there would leave the
  // measure a negative free compute).
  int64_t ScoreBound(const ClusterState& state, int node) override;
  // On such a node no shape's fragment drops by more than the compute the request takes (k · d): Δ ≤ k · d.
  int64_t RequestScoreBound(const TaskRequest& request) const override;

 private:
  int64_t Evaluate(const ClusterState& state, const TaskRequest& request, int node, const std::vector<int>& devices,
                   int64_t before) override;
};

// ⌊100 · sigmoid(weighted_delta / total / 1000)⌋, FGD's bounded score (total <= 0 → 50).
int64_t FgdSigmoidScore(int64_t weighted_delta, int64_t total);

// before − after of the node's weighted fragmentation when `request` is placed on `devices` (node is restored).
int64_t FragmentationDelta(NodeFree* node, const TaskRequest& request, const std::vector<int>& devices,
                           FragmentMeter* meter, int64_t before_weighted);

}  // namespace xpool
