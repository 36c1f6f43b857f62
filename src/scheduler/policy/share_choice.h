#pragma once
// Device choice shared by the FGD-paper baseline policies (random, dot_product, gpu_packing, gpu_clustering,
// fgd): the fitting devices with the least free compute first — for a GPU-sharing request the tightest device
// that fits, for whole devices the first free ones. Pure functions over scheduler/device_choice.h; thread-safe.
#include <cstdint>
#include <vector>

#include "model/cluster_state.h"
#include "model/task_request.h"
#include "scheduler/device_choice.h"
#include "scheduler/policy.h"

namespace xpool {

// True for a one-device request asking for part of a device's compute.
inline bool IsSharingRequest(const TaskRequest& request) {
  return request.device_count == 1 && request.device_compute_milli > 0 && request.device_compute_milli < 1000;
}

// The fitting devices with the least free compute first (lower index among equals), NUMA-aware.
inline void ChooseBestFitDevices(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate,
                                 std::vector<int>* chosen) {
  if (!TakeDevicesByKey(
          state, request, candidate, [&](int d) { return state.FreeDeviceCompute(candidate.node, d); }, chosen)) {
    chosen->clear();
  }
}

// Sum of the free compute of every device of a node.
inline int64_t NodeFreeCompute(const ClusterState& state, int node) {
  int64_t sum = 0;
  const int n = static_cast<int>(state.node(node).devices.size());
  for (int d = 0; d < n; ++d) sum += state.FreeDeviceCompute(node, d);
  return sum;
}

}  // namespace xpool
