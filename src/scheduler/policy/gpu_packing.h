#pragma once
// GpuPackingPolicy ("gpu-packing"): the FGD paper's GPU packing baseline. Scores on the 0–100 scale of the
// Kubernetes framework, as the paper's simulator does (the integer scale makes ties, broken by node order):
//   1. GPU-sharing or whole-device request that fits entirely on already-used devices (the least free first):
//      100 − (Σ free% of the devices used)/10, at least 50.
//   2. It needs fully free devices on a partly used node: 50 − (fully free devices used), at least 33.
//   3. The node is idle: max(33 − free devices, free devices).
//   4. A request without devices scores 0 everywhere.
// Devices: the fitting ones with the least free compute first. Stateless; thread-compatible.
#include "scheduler/policy.h"

namespace xpool {

class GpuPackingPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "gpu-packing"; }
  bool Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate, Rng& rng,
             int64_t* score, std::vector<int>* chosen_devices) override;
  // Score reads only the node, the request (not its memory) and max_node_*.
  ScoringTraits traits() const override { return {.cacheable = true, .ignores_request_memory = true}; }
};

}  // namespace xpool
