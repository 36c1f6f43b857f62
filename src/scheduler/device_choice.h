#pragma once
// Device choice helpers shared by the policies: take request.device_count devices from a candidate's fitting
// devices in a preference order, honouring NUMA binding. Free functions; thread-compatible.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "model/cluster_state.h"
#include "model/task_request.h"
#include "scheduler/policy.h"

namespace xpool {

// Takes the first request.device_count devices of `preferred` (a permutation of candidate.fitting_devices, best
// first). With numa_bind, all from one NUMA node: the NUMA node whose count-th preferred device comes earliest.
// Returns false when that is impossible. Device-less requests: clears `out`, returns true.
bool TakeDevicesInOrder(const ClusterState& state, const TaskRequest& request, int node,
                        const std::vector<int>& preferred, std::vector<int>* out);

// Orders the fitting devices by `key(device)` ascending (ties: lower index first) and takes them as above.
template <typename KeyFn>
bool TakeDevicesByKey(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate, KeyFn key,
                      std::vector<int>* out) {
  out->clear();
  if (!request.wants_devices()) return true;
  const int need = request.device_count;
  const auto& fitting = candidate.fitting_devices;
  if (static_cast<int>(fitting.size()) < need) return false;
  if (!request.numa_bind || need == 1) {
    if (static_cast<int>(fitting.size()) == need) {
      out->assign(fitting.begin(), fitting.end());
      std::stable_sort(out->begin(), out->end(), [&](int a, int b) { return key(a) < key(b); });
      return true;
    }
    // Partial selection by (key, index).
    std::vector<std::pair<int64_t, int>> keyed;
    keyed.reserve(fitting.size());
    for (int d : fitting) keyed.emplace_back(static_cast<int64_t>(key(d)), d);
    std::partial_sort(keyed.begin(), keyed.begin() + need, keyed.end());
    for (int i = 0; i < need; ++i) out->push_back(keyed[i].second);
    return true;
  }
  std::vector<int> preferred(fitting.begin(), fitting.end());
  std::stable_sort(preferred.begin(), preferred.end(), [&](int a, int b) { return key(a) < key(b); });
  return TakeDevicesInOrder(state, request, candidate.node, preferred, out);
}

}  // namespace xpool
