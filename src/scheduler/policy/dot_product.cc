#include "scheduler/policy/dot_product.h"

#include <algorithm>

#include "scheduler/policy/share_choice.h"

namespace xpool {

bool DotProductPolicy::Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate,
                             Rng& /*rng*/, int64_t* score, std::vector<int>* chosen_devices) {
  const double max_cpu = static_cast<double>(std::max<int64_t>(1, state.totals().max_node_cpu_milli));
  const double max_gpu = static_cast<double>(std::max<int64_t>(1, state.totals().max_node_device_compute_milli));
  const int node = candidate.node;
  // Step 1: each vector normalised first, then multiplied, in the published order: the truncation below makes
  // the rounding of exact-looking values (75.0 vs 74.999…) decide ties.
  const double cpu_term =
      (static_cast<double>(state.FreeCpu(node)) / max_cpu) * (static_cast<double>(request.cpu_milli) / max_cpu);
  const double request_gpu =
      static_cast<double>(request.device_count) * static_cast<double>(request.device_compute_milli) / max_gpu;
  // Step 2: the node's free GPU is merged into one dimension (every device, partly used or idle).
  const double gpu_term = static_cast<double>(NodeFreeCompute(state, node)) / max_gpu * request_gpu;
  // Step 3.
  *score = static_cast<int64_t>(100.0 * (1.0 - (cpu_term + gpu_term) / 2.0));
  // Step 4: the tightest fitting device(s), first among equals.
  ChooseBestFitDevices(state, request, candidate, chosen_devices);
  return true;
}

}  // namespace xpool
