#include "scheduler/policy/gpu_packing.h"

#include <algorithm>

#include "scheduler/policy/share_choice.h"

namespace xpool {

bool GpuPackingPolicy::Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate,
                             Rng& /*rng*/, int64_t* score, std::vector<int>* chosen_devices) {
  const int node = candidate.node;
  const int device_total = static_cast<int>(state.node(node).devices.size());
  chosen_devices->clear();
  if (request.device_count <= 0) {
    *score = 0;
    return true;
  }
  int fully_free = 0;
  for (int d = 0; d < device_total; ++d) {
    if (state.FreeDeviceCompute(node, d) == state.node(node).devices[d].compute_milli) ++fully_free;
  }
  // Devices by least free compute first (stable: index order among equals).
  std::vector<int> order = candidate.fitting_devices;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return state.FreeDeviceCompute(node, a) < state.FreeDeviceCompute(node, b); });
  int fully_free_used = 0;
  int64_t free_percent_sum = 0;
  for (int d : order) {
    if (static_cast<int>(chosen_devices->size()) == request.device_count) break;
    chosen_devices->push_back(d);
    if (state.FreeDeviceCompute(node, d) == state.node(node).devices[d].compute_milli) ++fully_free_used;
    free_percent_sum += state.FreeDeviceCompute(node, d) * 100 / 1000;
  }
  std::sort(chosen_devices->begin(), chosen_devices->end());
  if (fully_free == device_total) {
    *score = std::max<int64_t>(100 / 3 - fully_free, fully_free);
  } else if (fully_free_used > 0) {
    *score = std::max<int64_t>(100 / 2 - fully_free_used, 100 / 3);
  } else {
    *score = std::max<int64_t>(100 - free_percent_sum / 10, 100 / 2);
  }
  return true;
}

}  // namespace xpool
