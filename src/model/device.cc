#include "model/device.h"

#include <set>

namespace xpool {

std::string_view DeviceModeName(DeviceMode mode) {
  switch (mode) {
    case DeviceMode::kShared:
      return "shared";
    case DeviceMode::kExclusive:
      return "exclusive";
    case DeviceMode::kMig:
      return "mig";
    case DeviceMode::kMps:
      return "mps";
    case DeviceMode::kMigSlot:
      return "mig-slot";
  }
  return "shared";
}

Result<DeviceMode> ParseDeviceMode(std::string_view name) {
  for (DeviceMode m :
       {DeviceMode::kShared, DeviceMode::kExclusive, DeviceMode::kMig, DeviceMode::kMps, DeviceMode::kMigSlot}) {
    if (DeviceModeName(m) == name) return m;
  }
  return InvalidArgumentError("unknown device mode \"" + std::string(name) +
                              "\" (known: shared, exclusive, mig, mps, mig-slot)");
}

Status ValidateNode(const Node& node) {
  if (node.name.empty()) return InvalidArgumentError("node name is empty");
  const std::string where = "node " + node.name + ": ";
  if (node.cpu_milli < 0) return InvalidArgumentError(where + "cpu is negative");
  if (node.memory_mib < 0) return InvalidArgumentError(where + "memory is negative");
  std::set<std::string> uuids;
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const Device& d = node.devices[i];
    const std::string dev = where + "device " + std::to_string(i) + ": ";
    if (d.memory_mib < 0) return InvalidArgumentError(dev + "memory is negative");
    if (d.mode == DeviceMode::kMigSlot) {
      if (d.memory_mib != 0 || d.compute_milli != 0) {
        return InvalidArgumentError(dev + "a free MIG slot (mode mig-slot) has no memory or compute");
      }
    } else if (d.compute_milli <= 0) {
      return InvalidArgumentError(dev + "compute must be positive");
    }
    if (d.max_sharers < 1) return InvalidArgumentError(dev + "max sharers must be at least 1");
    if (!d.uuid.empty() && !uuids.insert(d.uuid).second) {
      return InvalidArgumentError(dev + "duplicate uuid " + d.uuid);
    }
  }
  if (!node.links.empty() && node.links.size() != static_cast<int>(node.devices.size())) {
    return InvalidArgumentError(where + "link table has " + std::to_string(node.links.size()) + " devices, node has " +
                                std::to_string(node.devices.size()));
  }
  return Status::Ok();
}

}  // namespace xpool
