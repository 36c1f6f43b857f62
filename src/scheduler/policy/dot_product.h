#pragma once
// DotProductPolicy ("dot-product"): the Tetris-style alignment baseline of the FGD paper (DotProd), as the
// paper's simulator scores it (its DotProductScore plugin with `dimExtMethod: share, normMethod: max`, the
// configuration of the published runs):
//   1. Two dimensions, CPU and GPU compute, each divided by the largest node's capacity in that dimension
//      (the simulator's MaxSpecCpu / MaxSpecGpu are openb's largest node: 128 CPUs, 8 GPUs).
//   2. The node is split into "virtual nodes", one per device choice, each sharing the node's free CPU:
//      for a GPU-sharing request, every partly used fitting device (its free compute as the GPU dimension),
//      plus — when the request fits in the idle devices — all idle fitting devices together (their summed
//      compute as the GPU dimension; the first idle device is the one allocated); for a whole-device request
//      the idle fitting devices together. The request vector is (CPU, total GPU compute).
//   3. For each choice, product = (free · request) / 2 and score = 1 − product; the best choice by the exact
//      (float) score — first among equals, partly used devices before the idle group — is the device choice, and
//      ⌊100 · its score⌋ the node's score (the smallest product wins); equal node scores: the first node.
// Step 2's idle group is what the published simulator does and what this file did not before: scoring a sharing
// pod against one idle device (instead of the node's whole idle compute) put it on idle nodes too readily
// (dot-product was 0.84 above the published mean on cpu250 and 0.75 below it on gpushare100), and so did
// choosing the device by the truncated score (the simulator compares devices by the float score).
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
  bool ignores_request_memory() const override { return true; }  // CPU and GPU dimensions only
};

}  // namespace xpool
