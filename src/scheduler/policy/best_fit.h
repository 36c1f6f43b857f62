#pragma once
// BestFit: the FGD paper's BestFit baseline (Weng et al., ATC '23; kubernetes-scheduler-simulator's
// pkg/simulator/plugin/best_fit_score.go), the node whose leftover CPU and GPU after placement is smallest.
//
//   1. free_r = what is free on the node now, req_r = what the replica takes, r ∈ {CPU millicores, GPU milli
//      (sum over the node's devices)}; max_r = the largest node's capacity of r in the cluster.
//   2. s = Σ_r 0.5 · (free_r − req_r) / max_r ∈ [0, 1], lower is better.
//   3. score = int64((1 − s) · 100): truncated toward zero, exactly as the reference does it in float64 (see
//      BestFitScore), so scores tie as they do in the paper's simulator. Ties: first node in node order.
//   4. Devices: a sharing replica takes the fitting device with the least free compute (best fit within the
//      node), whole-device replicas the lowest-index free devices.
//
// Stateless; thread-compatible. Cacheable (the score depends on the node and request only).
#include <cstdint>
#include <string_view>
#include <vector>

#include "scheduler/policy.h"

namespace xpool {

// The score for a node with `free_cpu` / `free_gpu` free, a replica taking `req_cpu` / `req_gpu`, normalised by
// `max_cpu` / `max_gpu`. Exposed for tests.
int64_t BestFitScore(int64_t free_cpu, int64_t free_gpu, int64_t req_cpu, int64_t req_gpu, int64_t max_cpu,
                     int64_t max_gpu);

class BestFitPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "best-fit"; }
  bool Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate, Rng& rng,
             int64_t* score, std::vector<int>* chosen_devices) override;
  ScoringTraits traits() const override { return {.cacheable = true, .node_order_key = true}; }
  // free_cpu / max_cpu + free_gpu / max_gpu, scaled to an integer: the score falls as it grows.
  int64_t NodeOrderKey(const ClusterState& state, int node) const override;
};

}  // namespace xpool
