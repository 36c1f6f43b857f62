#include "model/mig_label.h"

#include <algorithm>

#include "common/text.h"

namespace xpool {

std::string FormatMigDynamicLabel(std::span<const MigGpuGeometry> gpus) {
  std::string text;
  for (const MigGpuGeometry& g : gpus) {
    if (!text.empty()) text += ';';
    text += std::to_string(g.gpu);
    if (g.first_device >= 0) text += "@" + std::to_string(g.first_device);
    text += "=" + std::string(g.model->name) + ":";
    for (size_t i = 0; i < g.instances.size(); ++i) {
      if (i > 0) text += ',';
      text += std::string(g.model->profiles[g.instances[i].profile].name) + "@" + std::to_string(g.instances[i].start);
    }
  }
  return text;
}

Result<std::vector<MigGpuGeometry>> ParseMigDynamicLabel(std::string_view text) {
  std::vector<MigGpuGeometry> gpus;
  if (text.empty()) return gpus;
  for (std::string_view part : SplitText(text, ';')) {
    const size_t eq = part.find('='), colon = part.find(':');
    MigGpuGeometry g;
    const std::string_view head = part.substr(0, std::min(eq, part.size()));
    const size_t first = head.find('@');
    if (eq == std::string_view::npos || colon == std::string_view::npos || colon < eq ||
        !ParseWholeInt(head.substr(0, first), &g.gpu) || g.gpu < 0 ||
        (first != std::string_view::npos &&
         (!ParseWholeInt(head.substr(first + 1), &g.first_device) || g.first_device < 0 || g.first_device > 4096))) {
      return InvalidArgumentError("\"" + std::string(part) + "\": expected GPU[@FIRST-DEVICE]=TABLE:PROFILE@START,...");
    }
    g.model = MigModelNamed(part.substr(eq + 1, colon - eq - 1));
    if (g.model == nullptr) {
      return InvalidArgumentError("\"" + std::string(part) + "\": no MIG table named \"" +
                                  std::string(part.substr(eq + 1, colon - eq - 1)) + "\"");
    }
    const std::string_view list = part.substr(colon + 1);
    for (std::string_view item : list.empty() ? std::vector<std::string_view>{} : SplitText(list, ',')) {
      const size_t at = item.find('@');
      MigPlacement p;
      p.profile = at == std::string_view::npos ? -1 : MigProfileIndex(*g.model, item.substr(0, at));
      if (p.profile < 0 || !ParseWholeInt(item.substr(at + 1), &p.start)) {
        return InvalidArgumentError("\"" + std::string(item) + "\": expected a " + std::string(g.model->name) +
                                    " profile and its start, e.g. 1g.10gb@3");
      }
      g.instances.push_back(p);
    }
    RETURN_IF_ERROR(ValidateMigGeometry(*g.model, g.instances).WithContext("GPU " + std::to_string(g.gpu)));
    if (std::any_of(gpus.begin(), gpus.end(), [&](const MigGpuGeometry& o) { return o.gpu == g.gpu; })) {
      return InvalidArgumentError("GPU " + std::to_string(g.gpu) + " is named twice");
    }
    gpus.push_back(std::move(g));
  }
  return gpus;
}

int MigSlotDevice(const MigGpuGeometry& gpu, int start) {
  if (gpu.first_device < 0 || gpu.model == nullptr) return -1;
  const std::vector<int> slots = MigStartSlots(*gpu.model);
  auto it = std::find(slots.begin(), slots.end(), start);
  return it == slots.end() ? -1 : gpu.first_device + static_cast<int>(it - slots.begin());
}

Status ValidateMigSlots(const Node& node, std::span<const MigGpuGeometry> gpus) {
  std::vector<bool> taken(node.devices.size(), false);
  for (const MigGpuGeometry& g : gpus) {
    if (g.first_device < 0) continue;
    const std::string where = "GPU " + std::to_string(g.gpu) + ": ";
    const std::vector<int> slots = MigStartSlots(*g.model);
    if (static_cast<size_t>(g.first_device) + slots.size() > node.devices.size()) {
      return InvalidArgumentError(where + std::to_string(slots.size()) + " slot devices from position " +
                                  std::to_string(g.first_device) + " but the node has " +
                                  std::to_string(node.devices.size()) + " devices");
    }
    for (size_t k = 0; k < slots.size(); ++k) {
      const size_t at = static_cast<size_t>(g.first_device) + k;
      if (taken[at]) return InvalidArgumentError(where + "device " + std::to_string(at) + " is another GPU's slot");
      taken[at] = true;
      const bool instance = std::any_of(g.instances.begin(), g.instances.end(),
                                        [&](const MigPlacement& p) { return p.start == slots[k]; });
      const DeviceMode want = instance ? DeviceMode::kMig : DeviceMode::kMigSlot;
      if (node.devices[at].mode != want) {
        return InvalidArgumentError(where + "device " + std::to_string(at) + " (slot " + std::to_string(slots[k]) +
                                    ") is in mode " + std::string(DeviceModeName(node.devices[at].mode)) +
                                    ", expected " + std::string(DeviceModeName(want)));
      }
    }
  }
  return Status::Ok();
}

std::string FormatMigGeometryText(std::span<const MigGpuGeometry> gpus) {
  std::string text;
  for (const MigGpuGeometry& g : gpus) {
    if (g.instances.empty()) continue;
    if (!text.empty()) text += ';';
    text += std::to_string(g.gpu) + "=";
    for (size_t i = 0; i < g.instances.size(); ++i) {
      if (i > 0) text += ',';
      text += g.model->profiles[g.instances[i].profile].name;
      if (g.first_device >= 0) text += "@" + std::to_string(g.instances[i].start);
    }
  }
  return text;
}

}  // namespace xpool
