#include "k8s/device_plugin_core.h"

#include <algorithm>

#include "k8s/node_monitor.h"
#include "model/vendor.h"
#include "vgpu/vgpu_env.h"

namespace xpool::k8s {
namespace {

struct Candidate {
  std::string bind_time;  // decimal micros; "" sorts last
  std::string key;
  AllocateMatch match;
};

bool Earlier(const Candidate& a, const Candidate& b) {
  if (a.bind_time.empty() != b.bind_time.empty()) return !a.bind_time.empty();
  if (a.bind_time.size() != b.bind_time.size()) return a.bind_time.size() < b.bind_time.size();  // numeric order
  if (a.bind_time != b.bind_time) return a.bind_time < b.bind_time;
  return a.key < b.key;
}

// Whether the comma-separated `list` holds `name`.
bool InList(const std::string& list, const std::string& name) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    if (list.compare(start, end - start, name) == 0) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

Result<AllocateMatch> MatchAllocate(const std::vector<PodInfo>& pods, const std::string& node, int device_count,
                                    const std::set<std::string>& allocated) {
  std::vector<Candidate> candidates;
  int pending_on_node = 0;
  for (const PodInfo& pod : pods) {
    if (pod.Terminated() || pod.deleting || pod.phase == "Running") continue;
    auto annotation = pod.annotations.find(std::string(kAllocationAnnotation));
    if (annotation == pod.annotations.end()) continue;
    Result<PodAssignment> a = DecodeAssignment(annotation->second);
    if (!a.ok() || a->node != node) continue;
    if (!pod.node_name.empty() && pod.node_name != node) continue;
    ++pending_on_node;
    auto served_it = pod.annotations.find(std::string(kServedAnnotation));
    const std::string served = served_it == pod.annotations.end() ? "" : served_it->second;
    for (const ContainerAssignment& c : a->containers) {
      const std::string key = pod.uid + "/" + c.name;
      if (allocated.count(key) != 0 || InList(served, c.name)) continue;
      if (static_cast<int>(c.devices.size()) != device_count) continue;
      auto bind_time = pod.annotations.find(std::string(kBindTimeAnnotation));
      Candidate cand;
      cand.bind_time = bind_time == pod.annotations.end() ? "" : bind_time->second;
      cand.key = pod.Key();
      cand.match = {pod.uid, pod.Key(), c, key, served.empty() ? c.name : served + "," + c.name};
      candidates.push_back(std::move(cand));
      break;  // kubelet allocates a pod's containers in order: the first unallocated one
    }
  }
  if (candidates.empty()) {
    return NotFoundError("no pending pod on node " + node + " has an unallocated container with " +
                         std::to_string(device_count) + " xpool device(s) (" + std::to_string(pending_on_node) +
                         " pending pod(s) carry an allocation)");
  }
  std::sort(candidates.begin(), candidates.end(), Earlier);
  return candidates.front().match;
}

std::string SharedRegionHostDir(const PluginPaths& paths, const std::string& pod_uid, const std::string& container) {
  return paths.shared_region_host_dir + "/" + SharedRegionDirName(pod_uid, container);
}

ContainerResponse ContainerEnv(const AllocateMatch& match, const PluginPaths& paths) {
  ContainerResponse out;
  std::string visible;
  bool nvidia = false;
  for (size_t i = 0; i < match.container.devices.size(); ++i) {
    const AssignedDevice& d = match.container.devices[i];
    if (!visible.empty()) visible += ',';
    visible += d.uuid;
    if (d.vendor == Vendor::kNvidia) {
      nvidia = true;
      const std::string node = "nvidia" + std::to_string(d.index);
      out.devices.push_back({"/dev/" + node, "/dev/" + node, "rw"});
      if (paths.cdi) out.cdi_devices.push_back("nvidia.com/gpu=" + d.uuid);
    }
    out.envs[XPOOL_ENV_DEVICE_MEMORY_LIMIT_PREFIX + std::to_string(i)] = std::to_string(d.memory_mib);
    if (d.compute_milli > 0 && d.compute_milli < kWholeDeviceMilli) {
      out.envs[XPOOL_ENV_DEVICE_CORE_LIMIT_PREFIX + std::to_string(i)] = std::to_string(d.compute_milli / 10);
    }
  }
  if (!match.container.devices.empty()) {
    out.envs[std::string(ProfileFor(match.container.devices[0].vendor).visible_devices_env)] = visible;
  }
  if (nvidia) {
    out.envs["NVIDIA_VISIBLE_DEVICES"] = visible;
    for (const char* node : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"}) {
      out.devices.push_back({std::string("/dev/") + node, std::string("/dev/") + node, "rw"});
    }
  }
  out.envs[XPOOL_ENV_SHARED_REGION] = paths.shared_region_dir + "/" + std::string(kSharedRegionFile);
  out.mounts.push_back({SharedRegionHostDir(paths, match.pod_uid, match.container.name), paths.shared_region_dir,
                        /*read_only=*/false});
  out.mounts.push_back({paths.library_dir, paths.container_library_dir, true});
  if (paths.preload_file.empty()) {
    out.envs["LD_PRELOAD"] = paths.container_library_dir + "/" + XPOOL_VGPU_LIBRARY_NAME;
  } else {
    out.mounts.push_back({paths.preload_file, std::string(kLdPreloadPath), true});
  }
  return out;
}

std::vector<std::string> SlotIds(const std::vector<Device>& devices, int split) {
  std::vector<std::string> out;
  for (const Device& d : devices) {
    for (int k = 0; k < split; ++k) out.push_back(d.uuid + "::" + std::to_string(k));
  }
  return out;
}

}  // namespace xpool::k8s
