#include "k8s/node_monitor.h"

#include <map>

#include "k8s/annotations.h"
#include "k8s/internal/prometheus.h"

namespace xpool::k8s {
namespace {

struct ContainerOnNode {
  const PodInfo* pod;
  ContainerAssignment container;
};

// Region directory name → the allocated container it belongs to, for the live pods on `node`.
std::map<std::string, ContainerOnNode> ContainersByDirectory(const std::string& node,
                                                             const std::vector<PodInfo>& pods) {
  std::map<std::string, ContainerOnNode> out;
  for (const PodInfo& pod : pods) {
    if (pod.Terminated()) continue;
    auto it = pod.annotations.find(std::string(kAllocationAnnotation));
    if (it == pod.annotations.end()) continue;
    Result<PodAssignment> a = DecodeAssignment(it->second);
    if (!a.ok() || a->node != node) continue;
    for (const ContainerAssignment& c : a->containers) out[SharedRegionDirName(pod.uid, c.name)] = {&pod, c};
  }
  return out;
}

}  // namespace

std::string SharedRegionDirName(const std::string& pod_uid, const std::string& container) {
  return pod_uid + "_" + container;
}

std::string UsageMetrics(const std::string& node, const std::vector<Device>& devices, const std::vector<PodInfo>& pods,
                         const std::vector<RegionUsage>& regions) {
  std::map<std::string, std::string> labels_of;  // uuid → device labels
  std::map<std::string, int64_t> used;           // uuid → bytes
  for (const Device& d : devices) {
    labels_of[d.uuid] = internal::DeviceLabels(node, d.uuid, d.index, d.model);
    used[d.uuid] = 0;
  }
  const std::map<std::string, ContainerOnNode> containers = ContainersByDirectory(node, pods);
  std::string per_container;
  int matched = 0;
  for (const RegionUsage& r : regions) {
    auto it = containers.find(r.directory);
    if (it == containers.end()) continue;
    ++matched;
    const std::vector<AssignedDevice>& assigned = it->second.container.devices;
    for (size_t i = 0; i < assigned.size(); ++i) {
      const int64_t bytes = i < r.used_bytes.size() ? r.used_bytes[i] : 0;
      const std::string& uuid = assigned[i].uuid;
      if (used.count(uuid) != 0) used[uuid] += bytes;
      const std::string device =
          labels_of.count(uuid) != 0 ? labels_of[uuid] : internal::DeviceLabels(node, uuid, assigned[i].index, "");
      per_container += "xpool_pod_device_memory_used_bytes{" +
                       internal::PodLabels(it->second.pod->Key(), it->second.pod->uid, it->second.container.name) +
                       "," + device + "} " + std::to_string(bytes) + "\n";
    }
  }
  std::string out = internal::PromHeader("xpool_device_memory_used_bytes",
                                         "device memory in use by pods' processes (their shared regions)");
  for (const Device& d : devices) {
    out += "xpool_device_memory_used_bytes{" + labels_of[d.uuid] + "} " + std::to_string(used[d.uuid]) + "\n";
  }
  out += internal::PromHeader("xpool_pod_device_memory_used_bytes",
                              "device memory in use by one pod container's processes") +
         per_container;
  out += internal::PromHeader("xpool_device_plugin_regions",
                              "shared regions read on the node; matched=\"false\": no allocated container of a pod "
                              "on the node has that directory");
  const std::string n = "node=\"" + internal::PromLabel(node) + "\"";
  out += "xpool_device_plugin_regions{" + n + ",matched=\"true\"} " + std::to_string(matched) + "\n";
  out += "xpool_device_plugin_regions{" + n + ",matched=\"false\"} " + std::to_string(regions.size() - matched) + "\n";
  return out;
}

std::vector<std::string> StaleRegionDirs(const std::vector<std::string>& directories, const std::vector<PodInfo>& pods,
                                         const std::set<std::string>& allocated) {
  std::map<std::string, bool> terminated;  // uid → whether the pod has terminated
  for (const PodInfo& p : pods) terminated[p.uid] = p.Terminated();
  std::vector<std::string> out;
  for (const std::string& dir : directories) {
    const size_t sep = dir.find('_');
    if (sep == std::string::npos || sep == 0 || sep + 1 == dir.size()) continue;
    const std::string uid = dir.substr(0, sep);
    auto it = terminated.find(uid);
    if (it != terminated.end()) {
      if (it->second) out.push_back(dir);
      continue;
    }
    if (allocated.count(uid + "/" + dir.substr(sep + 1)) == 0) out.push_back(dir);
  }
  return out;
}

}  // namespace xpool::k8s
