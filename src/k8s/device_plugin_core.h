#pragma once
// The device plugin's decisions, without gRPC (the kubelet API v1beta1 server that will wrap them is not built
// yet; see docs/kubernetes.md):
//
//   MatchAllocate   kubelet's Allocate names device slots, not the pod. Among the pods the extender bound to this
//                   node (xpool.io/allocation) that are still Pending and whose containers have not been
//                   allocated, it picks the container asking for that many devices, earliest bound first
//                   (xpool.io/bind-time, then namespace/name). The plugin keeps the "allocated" set itself: no
//                   node-wide lock annotation, nothing that can time out (HAMi #338, #596).
//   ContainerEnv    what the container gets:
//                   - the vendor's visible-devices variable with the device uuids; for NVIDIA also
//                     NVIDIA_VISIBLE_DEVICES (the NVIDIA container runtime mounts exactly these; it overrides an
//                     image's "all"), the DeviceSpecs /dev/nvidia<index>, /dev/nvidiactl, /dev/nvidia-uvm,
//                     /dev/nvidia-uvm-tools, and with `cdi` the CDI names nvidia.com/gpu=<uuid>;
//                   - the limits the runtime library enforces (XPOOL_DEVICE_MEMORY_LIMIT_<i> in MiB,
//                     XPOOL_DEVICE_CORE_LIMIT_<i> in percent, omitted when compute is not limited);
//                   - the runtime library, mounted read-only, injected by a mounted /etc/ld.so.preload (the user
//                     cannot unset it; LD_PRELOAD instead when `preload_file` is empty);
//                   - the shared accounting region on the host, one directory per pod and container
//                     (<shared_region_host_dir>/<pod uid>_<container>, mounted read-write at shared_region_dir),
//                     so the node sees real usage and a restarted container finds its region again.
//   SlotIds         the IDs advertised to kubelet: each device as `split` schedulable slots "<uuid>::<k>".
// Stateless functions over value types; thread-safe.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "k8s/annotations.h"
#include "k8s/kube_objects.h"
#include "model/device.h"

namespace xpool::k8s {

// Written on a pod by the device plugin after each Allocate: the names of its containers already answered
// (comma-separated), so that a restarted plugin does not hand them out again.
inline constexpr std::string_view kServedAnnotation = "xpool.io/device-plugin-served";

struct AllocateMatch {
  std::string pod_uid;
  std::string pod_key;  // namespace/name
  ContainerAssignment container;
  // "uid/container": what to add to the plugin's allocated set once the answer is sent.
  std::string allocated_key;
  // The pod's kServedAnnotation value including this container (what to write back).
  std::string served;
};

// NotFound (with what was looked at) when no pending container on `node` asks for `device_count` devices.
// A container counts as allocated when `allocated` holds "uid/name" or the pod's kServedAnnotation names it.
Result<AllocateMatch> MatchAllocate(const std::vector<PodInfo>& pods, const std::string& node, int device_count,
                                    const std::set<std::string>& allocated);

struct Mount {
  std::string host_path;
  std::string container_path;
  bool read_only = true;
};

struct DeviceNode {
  std::string host_path;
  std::string container_path;
  std::string permissions = "rw";
};

struct ContainerResponse {
  std::map<std::string, std::string> envs;
  std::vector<Mount> mounts;
  std::vector<DeviceNode> devices;
  std::vector<std::string> cdi_devices;
};

struct PluginPaths {
  std::string library_dir = "/usr/local/xpool";  // host directory holding libxpool-vgpu.so
  std::string container_library_dir = "/usr/local/xpool";
  // Host file mounted at /etc/ld.so.preload (it names the library); "" = LD_PRELOAD in the environment instead.
  std::string preload_file = "/usr/local/xpool/ld.so.preload";
  // Host directory holding one directory per pod container with its shared accounting region.
  std::string shared_region_host_dir = "/var/lib/xpool/containers";
  std::string shared_region_dir = "/tmp/xpool";  // where that directory appears inside the container
  // Where the plugin sees the host's /dev: a device node missing there is left out of the answer.
  std::string dev_root = "/dev";
  bool cdi = false;  // also answer CDI device names
};

inline constexpr std::string_view kSharedRegionFile = "region.cache";
inline constexpr std::string_view kLdPreloadPath = "/etc/ld.so.preload";

// The host directory of one container's shared region: <shared_region_host_dir>/<pod uid>_<container>.
std::string SharedRegionHostDir(const PluginPaths& paths, const std::string& pod_uid, const std::string& container);

ContainerResponse ContainerEnv(const AllocateMatch& match, const PluginPaths& paths);

std::vector<std::string> SlotIds(const std::vector<Device>& devices, int split);

}  // namespace xpool::k8s
