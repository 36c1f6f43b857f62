#pragma once
// DefaultPolicy ("default"): xpool's own placement policy — fragmentation gradient descent made exact, with
// an online target workload. Built on the FGD paper's measure (scheduler/fragmentation.h):
//   1. Learn the target workload online: every arriving request's shape is counted (OnArrival), and the most
//      common shapes covering 95 % of arrivals so far form the target (rebuilt when the count doubles, then
//      every 256 arrivals). Nothing about future requests is used.
//   2. For each candidate node and device choice (each fitting device for a GPU-sharing request; for whole
//      devices, the first fitting ones) compute the exact change of the node's weighted fragmentation
//      Δ = Σ_m count_m (F_n(m) before − F_n(m) after), an integer — not FGD's truncated sigmoid, so small
//      differences between nodes still decide.
//   3. Ties (identical nodes, nodes without idle GPU): best fit — the node left with the least free GPU, then
//      the least free CPU; then the first node.
// The score is lexicographic: Δ first, the best-fit term below it.
// Caches each node's score per request shape until the node's generation changes. Not thread-safe.
#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/fragmentation.h"
#include "scheduler/policy.h"

namespace xpool {

class DefaultPolicy final : public PlacementPolicy {
 public:
  DefaultPolicy() = default;
  std::string_view name() const override { return "default"; }
  bool Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate, Rng& rng,
             int64_t* score, std::vector<int>* chosen_devices) override;
  void OnArrival(const TaskRequest& request) override;

  const TargetWorkload& target() const { return target_; }

 private:
  struct Entry {
    uint64_t generation = ~uint64_t{0};
    int64_t score = 0;
    int device = -1;
  };
  int64_t Evaluate(const ClusterState& state, const TaskRequest& request, int node,
                   const std::vector<int>& devices, int64_t before);

  TargetWorkload target_;
  std::vector<WeightedShape> seen_;
  int64_t arrivals_ = 0;
  int64_t next_rebuild_ = 1;

  ShapeIndex shapes_;
  std::vector<std::vector<Entry>> cache_;  // [shape id][node]
  NodeFree scratch_;
};

}  // namespace xpool
