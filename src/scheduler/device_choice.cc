#include "scheduler/device_choice.h"

namespace xpool {

bool TakeDevicesInOrder(const ClusterState& state, const TaskRequest& request, int node,
                        const std::vector<int>& preferred, std::vector<int>* out) {
  out->clear();
  if (!request.wants_devices()) return true;
  const int need = request.device_count;
  if (static_cast<int>(preferred.size()) < need) return false;
  if (!request.numa_bind || need == 1) {
    out->assign(preferred.begin(), preferred.begin() + need);
    return true;
  }
  // Walk the preference order counting per NUMA node; the first NUMA node to reach `need` wins.
  const Node& n = state.node(node);
  std::vector<std::pair<int, int>> counts;  // (numa, count)
  for (int d : preferred) {
    const int numa = n.devices[d].numa_node;
    auto it = std::find_if(counts.begin(), counts.end(), [numa](const auto& c) { return c.first == numa; });
    if (it == counts.end()) {
      counts.emplace_back(numa, 0);
      it = counts.end() - 1;
    }
    if (++it->second == need) {
      for (int e : preferred) {
        if (n.devices[e].numa_node == numa) out->push_back(e);
        if (static_cast<int>(out->size()) == need) break;
      }
      return true;
    }
  }
  return false;
}

}  // namespace xpool
