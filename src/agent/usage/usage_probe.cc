#include "agent/usage/usage_probe.h"

#include <algorithm>

#include "agent/nvml/nvml_usage.h"
#include "vgpu/region_reader.h"

namespace xpool::agent {
namespace {

constexpr int64_t kBytesPerMib = 1 << 20;
constexpr int64_t kSimulatedComputeShare = 6;  // tenths of the grant a simulated task keeps busy

const Device* FindDevice(const Node& node, int index) {
  for (const Device& d : node.devices) {
    if (d.index == index) return &d;
  }
  return nullptr;
}

}  // namespace

Result<UsageSample> SimulatedUsageProbe::Sample(const Node& node, const std::vector<TaskOnNode>& tasks) {
  UsageSample sample;
  for (const Device& d : node.devices) sample.devices[d.index] = DeviceUse{0, 0};
  for (const TaskOnNode& t : tasks) {
    int64_t task_mib = 0;
    for (const protocol::TaskDevice& td : t.devices) {
      const Device* d = FindDevice(node, td.index);
      if (d == nullptr) continue;
      const int64_t grant_mib = td.memory_mib > 0 ? td.memory_mib : d->memory_mib;
      const int64_t grant_permille =
          td.core_percent > 0 && td.core_percent < 100 ? td.core_percent * 10 : kWholeDeviceMilli;
      DeviceUse& use = sample.devices[td.index];
      use.used_memory_mib = std::min(d->memory_mib, use.used_memory_mib + grant_mib / 2);
      use.sm_permille = std::min<int64_t>(1000, use.sm_permille + grant_permille * kSimulatedComputeShare / 10);
      task_mib += grant_mib / 2;
    }
    if (!t.devices.empty()) sample.task_memory[t.task_id] = task_mib;
  }
  return sample;
}

std::map<std::string, int64_t> TaskMemoryFromRegions(const std::vector<TaskOnNode>& tasks) {
  std::map<std::string, int64_t> out;
  for (const TaskOnNode& t : tasks) {
    vgpu::RegionSnapshot region;
    std::string why;
    if (t.region_path.empty() || !vgpu::ReadRegion(t.region_path, &region, &why)) continue;
    uint64_t bytes = 0;
    for (uint64_t used : region.used) bytes += used;
    out[t.task_id] = static_cast<int64_t>((bytes + kBytesPerMib - 1) / kBytesPerMib);
  }
  return out;
}

std::unique_ptr<UsageProbe> MakeUsageProbe(std::string_view source, const std::string& nvml_library) {
  if (source == "simulated") return std::make_unique<SimulatedUsageProbe>();
  if (source == "nvml") return std::make_unique<NvmlUsageProbe>(nvml_library);
  return nullptr;
}

}  // namespace xpool::agent
