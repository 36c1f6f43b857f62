#pragma once
// DotProductPolicy ("dot-product"): the Tetris-style alignment baseline of the FGD paper (DotProd), as the
// paper's simulator scores it:
//   1. Two dimensions, CPU and GPU compute, each divided by the largest node's capacity in that dimension.
//   2. For every device choice (each fitting device for a GPU-sharing request, its free compute as the GPU
//      dimension; for a whole-device or CPU-only request the node's total free GPU) take the dot product of
//      the free vector and the request vector, divided by the number of dimensions.
//   3. score = ⌊100 · (1 − product)⌋ — the smallest product wins; the integer scale makes ties (first node).
// The published score is a float formula; it is computed in double here and truncated, as published.
// Stateless; thread-compatible.
#include "scheduler/policy.h"

namespace xpool {

class DotProductPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "dot-product"; }
  bool Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate, Rng& rng,
             int64_t* score, std::vector<int>* chosen_devices) override;
  bool cacheable() const override { return true; }  // Score reads only the node, request, max_node_*
};

}  // namespace xpool
