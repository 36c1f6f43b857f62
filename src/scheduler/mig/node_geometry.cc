#include "scheduler/mig/node_geometry.h"

#include <algorithm>
#include <string>

namespace xpool {

std::optional<ReplannableMig> ReplannableMigOf(const Node& node, const NodeUsage& usage) {
  auto label = node.labels.find(std::string(kMigDynamicLabel));
  if (label == node.labels.end()) return std::nullopt;
  auto geometries = ParseMigDynamicLabel(label->second);
  if (!geometries.ok()) return std::nullopt;  // refused when the node registered
  ReplannableMig out;
  out.slotted =
      std::all_of(geometries->begin(), geometries->end(), [](const MigGpuGeometry& g) { return g.first_device >= 0; });
  const bool any_allocated =
      std::any_of(usage.devices.begin(), usage.devices.end(), [](const DeviceUsage& d) { return d.allocated(); });
  if (!out.slotted && any_allocated) return std::nullopt;
  for (const MigGpuGeometry& g : *geometries) {
    MigGpu& gpu = out.gpus.emplace_back();
    gpu.model = g.model;
    for (const MigPlacement& placement : g.instances) {
      const int device = MigSlotDevice(g, placement.start);
      const bool busy = device >= 0 && static_cast<size_t>(device) < usage.devices.size() &&
                        usage.devices[static_cast<size_t>(device)].allocated();
      gpu.instances.push_back({placement, busy});
    }
  }
  out.geometries = std::move(*geometries);
  return out;
}

bool MigDemandCanBeServedOn(const Node& node, const NodeUsage& usage, const MigDemand& demand) {
  if (demand.count <= 0) return true;
  std::optional<ReplannableMig> mig = ReplannableMigOf(node, usage);
  if (!mig) return false;
  auto plan = PlanMigGeometry(mig->gpus, std::span<const MigDemand>(&demand, 1));
  return plan.ok() && plan->served.size() == 1 && plan->served[0] >= demand.count;
}

}  // namespace xpool
