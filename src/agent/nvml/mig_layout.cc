#include "agent/nvml/mig_layout.h"

#include <algorithm>

#include "agent/discovery.h"
#include "common/text.h"

namespace xpool::agent {
namespace {

Result<MigWanted> ParseWanted(std::string_view item) {
  MigWanted wanted{std::string(item), 1};
  if (const size_t at = item.find('@'); at != std::string_view::npos) {
    if (!ParseWholeInt(item.substr(at + 1), &wanted.start) || wanted.start < 0 || wanted.start > 15 ||
        item.find('x') < at) {
      return InvalidArgumentError("\"" + std::string(item) + "\": expected one PROFILE@START, e.g. 1g.10gb@4");
    }
    wanted.profile = std::string(item.substr(0, at));
    RETURN_IF_ERROR(ValidateMigProfileName(wanted.profile).WithContext("\"" + std::string(item) + "\""));
    return wanted;
  }
  if (size_t x = item.find('x');
      x != std::string_view::npos && x > 0 && ParseWholeInt(item.substr(0, x), &wanted.count)) {
    wanted.profile = std::string(item.substr(x + 1));
    if (wanted.count < 1 || wanted.count > 8) {
      return InvalidArgumentError("\"" + std::string(item) + "\": a count from 1 to 8");
    }
  }
  RETURN_IF_ERROR(ValidateMigProfileName(wanted.profile).WithContext("\"" + std::string(item) + "\""));
  return wanted;
}

// Depth-first: places units[next..] next to `geometry`, lowest start first.
bool PlaceFrom(const MigModel& model, const std::vector<int>& units, size_t next, std::vector<MigPlacement>* geometry) {
  if (next == units.size()) return true;
  const MigProfile& profile = model.profiles[units[next]];
  for (int start : profile.starts) {
    if (!MigPlacementFits(model, *geometry, units[next], start)) continue;
    geometry->push_back(MigPlacement{units[next], start});
    if (PlaceFrom(model, units, next + 1, geometry)) return true;
    geometry->pop_back();
  }
  return false;
}

// The device one instance of `gpu` offers (MigInstanceDevices says what it holds).
Device InstanceDevice(const MigGpuInfo& gpu, const MigInstanceInfo& instance, const Device& parent) {
  const MigProfile& profile = gpu.model->profiles[instance.placement.profile];
  Device d = parent;
  d.model = parent.model + " MIG " + std::string(profile.name);
  d.uuid = instance.uuid;
  d.memory_mib = instance.memory_mib > 0 ? instance.memory_mib : profile.memory_mib;
  d.compute_milli = MigComputeMilli(*gpu.model, profile);
  d.max_sharers = 1;
  d.mode = DeviceMode::kMig;
  return d;
}

}  // namespace

std::vector<Device> MigInstanceDevices(const MigGpuInfo& gpu, const Device& parent) {
  std::vector<Device> devices;
  if (gpu.model == nullptr) return devices;
  for (const MigInstanceInfo& instance : gpu.instances) {
    if (instance.uuid.empty()) continue;  // no compute instance: CUDA does not see it
    devices.push_back(InstanceDevice(gpu, instance, parent));
  }
  return devices;
}

std::vector<Device> MigSlotDevices(const MigGpuInfo& gpu, const Device& parent) {
  std::vector<Device> devices;
  if (gpu.model == nullptr) return devices;
  for (int slot : MigStartSlots(*gpu.model)) {
    auto instance = std::find_if(gpu.instances.begin(), gpu.instances.end(),
                                 [&](const MigInstanceInfo& i) { return i.placement.start == slot; });
    const std::string slot_uuid = gpu.uuid + "/slot" + std::to_string(slot);
    if (instance != gpu.instances.end()) {
      Device d = InstanceDevice(gpu, *instance, parent);
      if (instance->uuid.empty()) {  // no compute instance: CUDA does not see it
        d.uuid = slot_uuid;
        d.healthy = false;
      }
      devices.push_back(std::move(d));
      continue;
    }
    Device d = parent;
    d.model = parent.model + " MIG slot " + std::to_string(slot);
    d.uuid = slot_uuid;
    d.memory_mib = 0;
    d.compute_milli = 0;
    d.max_sharers = 1;
    d.mode = DeviceMode::kMigSlot;
    devices.push_back(std::move(d));
  }
  return devices;
}

Node ExpandMigDevices(const Node& node, std::span<const MigGpuInfo> gpus, std::vector<MigGpuGeometry>* slotted) {
  Node out = node;
  out.devices.clear();
  std::vector<int> origin;  // new position → old position
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const Device& d = node.devices[i];
    auto gpu = std::find_if(gpus.begin(), gpus.end(), [&](const MigGpuInfo& g) {
      return g.index == d.index && g.mig_enabled && g.model != nullptr && d.vendor == Vendor::kNvidia;
    });
    std::vector<Device> replacement;
    if (gpu == gpus.end()) {
      replacement = {d};
    } else if (slotted != nullptr) {
      MigGpuGeometry& g = slotted->emplace_back();
      g.gpu = gpu->index;
      g.model = gpu->model;
      g.first_device = static_cast<int>(out.devices.size());
      for (const MigInstanceInfo& instance : gpu->instances) g.instances.push_back(instance.placement);
      replacement = MigSlotDevices(*gpu, d);
    } else {
      replacement = MigInstanceDevices(*gpu, d);
    }
    for (Device& r : replacement) {
      r.index = static_cast<int>(out.devices.size());  // the scheduler's grants name devices by position
      out.devices.push_back(std::move(r));
      origin.push_back(static_cast<int>(i));
    }
  }
  if (node.links.empty()) return out;
  out.links = LinkTable(static_cast<int>(out.devices.size()));
  for (size_t a = 0; a < origin.size(); ++a) {
    for (size_t b = a + 1; b < origin.size(); ++b) {
      const int score = origin[a] == origin[b] ? kLinkSameBoard : node.links.Score(origin[a], origin[b]);
      out.links.Set(static_cast<int>(a), static_cast<int>(b), score);
    }
  }
  return out;
}

Result<std::map<int, std::vector<MigWanted>>> ParseMigGeometry(std::string_view text) {
  std::map<int, std::vector<MigWanted>> geometry;
  if (text.empty()) return InvalidArgumentError("empty MIG geometry: expected e.g. 0=2x1g.10gb,3g.40gb;1=7g.80gb");
  for (std::string_view part : SplitText(text, ';')) {
    const size_t eq = part.find('=');
    int gpu = -1;
    if (eq == std::string_view::npos || !ParseWholeInt(part.substr(0, eq), &gpu) || gpu < 0 || gpu > 255) {
      return InvalidArgumentError("\"" + std::string(part) + "\": expected GPU=PROFILE[,PROFILE...], e.g. 0=2x1g.10gb");
    }
    if (geometry.count(gpu) != 0) return InvalidArgumentError("GPU " + std::to_string(gpu) + " is named twice");
    std::vector<MigWanted>& wanted = geometry[gpu];
    if (eq + 1 == part.size()) continue;  // "0=": MIG mode on, no instance (dynamic MIG makes them on demand)
    for (std::string_view item : SplitText(part.substr(eq + 1), ',')) {
      ASSIGN_OR_RETURN(MigWanted w, ParseWanted(item));
      wanted.push_back(std::move(w));
    }
  }
  return geometry;
}

Result<std::vector<MigPlacement>> PlaceMigWanted(const MigModel& model, std::span<const MigWanted> demand) {
  const auto placed = std::count_if(demand.begin(), demand.end(), [](const MigWanted& w) { return w.start >= 0; });
  if (placed > 0 && static_cast<size_t>(placed) != demand.size()) {
    return InvalidArgumentError("give a start slot for every instance of a GPU or for none");
  }
  if (placed > 0) {
    std::vector<MigPlacement> geometry;
    for (const MigWanted& w : demand) {
      const int profile = MigProfileIndex(model, w.profile);
      if (profile < 0) {
        return InvalidArgumentError(std::string(model.name) + " has no MIG profile \"" + w.profile + "\"");
      }
      geometry.push_back({profile, w.start});
    }
    RETURN_IF_ERROR(ValidateMigGeometry(model, geometry).WithContext(std::string(model.name)));
    return geometry;
  }
  std::vector<int> units;
  for (const MigWanted& w : demand) {
    const int profile = MigProfileIndex(model, w.profile);
    if (profile < 0) {
      return InvalidArgumentError(std::string(model.name) + " has no MIG profile \"" + w.profile + "\"");
    }
    units.insert(units.end(), static_cast<size_t>(std::max(w.count, 0)), profile);
  }
  std::stable_sort(units.begin(), units.end(), [&](int a, int b) {
    const MigProfile& pa = model.profiles[a];
    const MigProfile& pb = model.profiles[b];
    if (pa.memory_slices != pb.memory_slices) return pa.memory_slices > pb.memory_slices;
    return pa.compute_slices > pb.compute_slices;
  });
  std::vector<MigPlacement> geometry;
  if (units.size() > static_cast<size_t>(model.slots) || !PlaceFrom(model, units, 0, &geometry)) {
    std::string names;
    for (int u : units) names += (names.empty() ? "" : ", ") + std::string(model.profiles[u].name);
    return InvalidArgumentError("these MIG instances do not fit on one " + std::string(model.name) + ": " + names);
  }
  return geometry;
}

}  // namespace xpool::agent
