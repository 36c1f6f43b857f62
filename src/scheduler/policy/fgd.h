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
// Scores are cached per (node, request shape) and reused while the node's generation is unchanged.
// Not thread-safe: one object per scheduling loop.
#include <cstdint>
#include <vector>

#include "scheduler/fragmentation.h"
#include "scheduler/policy.h"

namespace xpool {

class FgdPolicy final : public PlacementPolicy {
 public:
  FgdPolicy() = default;  // learns the target workload from OnArrival
  explicit FgdPolicy(TargetWorkload target) : target_(std::move(target)), learn_(false) {}

  std::string_view name() const override { return "fgd"; }
  bool Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate, Rng& rng,
             int64_t* score, std::vector<int>* chosen_devices) override;
  TieBreak tie_break() const override { return TieBreak::kLast; }
  // With a given target the score is a function of the node and the request only.
  bool cacheable() const override { return !learn_; }
  void OnArrival(const TaskRequest& request) override;

  const TargetWorkload& target() const { return target_; }

 private:
  struct Entry {
    uint64_t generation = ~uint64_t{0};
    int64_t score = 0;
    int device = -1;  // the chosen device of a sharing request
  };
  void SetTarget(TargetWorkload target);

  TargetWorkload target_;
  bool learn_ = true;
  std::vector<WeightedShape> seen_;  // learned counts, first-seen order
  int64_t arrivals_ = 0;
  int64_t next_rebuild_ = 1;

  ShapeIndex shapes_;                        // request shapes scored so far
  std::vector<std::vector<Entry>> cache_;    // [shape id][node]
  NodeFree scratch_;
};

// Δ-based FGD score of placing `request` on `candidate` with `devices` given the node's current free view:
// the weighted fragmentation before and after. Exposed for the `default` policy and tests.
int64_t FragmentationDelta(NodeFree* node, const TaskRequest& request, const std::vector<int>& devices,
                           const TargetWorkload& target, int64_t before_weighted);

}  // namespace xpool
