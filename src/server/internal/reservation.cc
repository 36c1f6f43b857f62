#include "server/internal/reservation.h"

#include <algorithm>

namespace xpool::server::internal {

Allocation FreePartOf(const ClusterState& state, const Allocation& planned) {
  Allocation free;
  free.node = planned.node;
  free.mps_user = planned.mps_user;
  if (planned.node < 0 || planned.node >= state.node_count()) return free;
  free.cpu_milli = std::clamp<int64_t>(state.FreeCpu(planned.node), 0, planned.cpu_milli);
  free.memory_mib = std::clamp<int64_t>(state.FreeMemory(planned.node), 0, planned.memory_mib);
  const Node& node = state.node(planned.node);
  for (const DeviceGrant& g : planned.devices) {
    if (g.device < 0 || g.device >= static_cast<int>(node.devices.size())) continue;
    const DeviceUsage& used = state.usage(planned.node).devices[g.device];
    if (used.exclusive || used.sharers >= node.devices[g.device].max_sharers) continue;
    if (MpsServesAnotherUser(node.devices[g.device], used, planned.mps_user)) continue;  // until the victims leave
    DeviceGrant part;
    part.device = g.device;
    part.memory_mib = std::clamp<int64_t>(state.FreeDeviceMemory(planned.node, g.device), 0, g.memory_mib);
    part.compute_milli = std::clamp<int64_t>(state.FreeDeviceCompute(planned.node, g.device), 0, g.compute_milli);
    // A whole-device grant is only held whole once nobody else is on the device (Apply's exclusivity rule).
    if (part.compute_milli >= node.devices[g.device].compute_milli && used.sharers > 0) {
      part.compute_milli = node.devices[g.device].compute_milli - 1;
    }
    if (part.memory_mib == 0 && part.compute_milli == 0) continue;
    free.devices.push_back(part);
  }
  return free;
}

std::vector<Allocation> MpsDevicesKeptFor(const ClusterState& state, const Allocation& planned) {
  std::vector<Allocation> out;
  if (planned.node < 0 || planned.node >= state.node_count()) return out;
  const Node& node = state.node(planned.node);
  for (const DeviceGrant& g : planned.devices) {
    if (g.device < 0 || g.device >= static_cast<int>(node.devices.size())) continue;
    const Device& device = node.devices[g.device];
    const DeviceUsage& used = state.usage(planned.node).devices[g.device];
    if (!MpsServesAnotherUser(device, used, planned.mps_user)) continue;
    if (used.exclusive) continue;  // nobody else fits beside it anyway
    Allocation rest;
    rest.node = planned.node;
    rest.mps_user = used.mps_user;
    // All of the rest but a whole device's compute, which Apply takes for an exclusive grant (nobody beside it).
    rest.devices.push_back({g.device, state.FreeDeviceMemory(planned.node, g.device),
                            std::min(state.FreeDeviceCompute(planned.node, g.device), device.compute_milli - 1)});
    for (int sharer = used.sharers; sharer < device.max_sharers; ++sharer) {
      out.push_back(rest);
      rest.devices.front().memory_mib = 0;  // the first takes the memory and compute, the others a place each
      rest.devices.front().compute_milli = 0;
    }
  }
  return out;
}

}  // namespace xpool::server::internal
