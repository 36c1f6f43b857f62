#pragma once
// What the device plugin reads on its node besides kubelet's calls: the shared accounting regions the runtime
// library keeps in the per-container host directories (<shared_region_host_dir>/<pod uid>_<container>, made at
// Allocate; device_plugin_core.h), matched to the pods bound to the node through their xpool.io/allocation.
//
//   UsageMetrics     Prometheus text, base units, labelled like the extender's allocation series so they join
//                    (node/nodeid/Hostname, UUID/deviceuuid, deviceidx/gpu, device, model; pods by
//                    podnamespace/podname/ poduid/container): the device memory really in use per device (every device
//                    present, at zero when nothing runs on it) and per container and device.
//   StaleRegionDirs  the region directories whose pod is gone from the node (or has terminated), to remove.
//
// Reading the region files needs vgpu's region reader, which k8s does not link (docs/ARCHITECTURE.md: k8s uses
// scheduler, model and common): the caller (`xpool k8s device-plugin`, in src/cli) reads them and passes
// RegionUsage values. Stateless functions over value types; thread-safe.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "k8s/kube_objects.h"
#include "model/device.h"

namespace xpool::k8s {

// One container's shared region as read on the node.
struct RegionUsage {
  std::string directory;            // the region directory's name: "<pod uid>_<container>"
  std::vector<int64_t> used_bytes;  // per device the container sees, in its CUDA ordinal order (its allocation's)
  int live_processes = 0;
};

// The name of one container's region directory under the host directory: "<pod uid>_<container>".
std::string SharedRegionDirName(const std::string& pod_uid, const std::string& container);

// `devices`: this node's; `pods`: the pods bound to it. Regions whose directory matches no pod's allocated
// container are counted in xpool_device_plugin_regions{matched="false"} and attributed to no device.
std::string UsageMetrics(const std::string& node, const std::vector<Device>& devices, const std::vector<PodInfo>& pods,
                         const std::vector<RegionUsage>& regions);

// Of `directories` (names under the host directory), those to remove: named "<uid>_<container>" with a pod uid
// that is not among `pods` (every pod bound to the node, listed before the directories were) or whose pod has
// terminated, unless `allocated` (the plugin's "uid/container" set, taken after the listing) holds it — a
// container allocated after the pods were listed. Names without "_" are not the plugin's and are kept.
std::vector<std::string> StaleRegionDirs(const std::vector<std::string>& directories, const std::vector<PodInfo>& pods,
                                         const std::set<std::string>& allocated);

}  // namespace xpool::k8s
