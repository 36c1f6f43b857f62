#include "scheduler/policy/dot_product.h"

#include <algorithm>

#include "scheduler/policy/share_choice.h"

namespace xpool {

bool DotProductPolicy::Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate,
                             Rng& /*rng*/, int64_t* score, std::vector<int>* chosen_devices) {
  const double max_cpu = static_cast<double>(std::max<int64_t>(1, state.totals().max_node_cpu_milli));
  const double max_gpu = static_cast<double>(std::max<int64_t>(1, state.totals().max_node_device_compute_milli));
  const int node = candidate.node;
  const double cpu_term = static_cast<double>(state.FreeCpu(node)) / max_cpu *
                          static_cast<double>(request.cpu_milli) / max_cpu;
  const double request_gpu = static_cast<double>(request.device_count) *
                             static_cast<double>(request.device_compute_milli) / max_gpu;
  auto to_score = [&](int64_t gpu_free) {
    const double product = (cpu_term + static_cast<double>(gpu_free) / max_gpu * request_gpu) / 2.0;
    return static_cast<int64_t>(100.0 * (1.0 - product));
  };
  if (IsSharingRequest(request)) {
    int best = -1;
    int64_t best_score = 0;
    for (int d : candidate.fitting_devices) {
      const int64_t s = to_score(state.FreeDeviceCompute(node, d));
      if (best < 0 || s > best_score) {
        best = d;
        best_score = s;
      }
    }
    chosen_devices->assign(1, best);
    *score = best_score;
    return best >= 0;
  }
  ChooseBestFitDevices(state, request, candidate, chosen_devices);
  int64_t gpu_free = 0;
  const int devices = static_cast<int>(state.node(node).devices.size());
  for (int d = 0; d < devices; ++d) gpu_free += state.FreeDeviceCompute(node, d);
  *score = to_score(gpu_free);
  return true;
}

}  // namespace xpool
