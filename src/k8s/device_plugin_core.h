#pragma once
// The device plugin's decisions, without gRPC (the kubelet API v1beta1 server that will wrap them is not built
// yet; see docs/kubernetes.md):
//
//   MatchAllocate   kubelet's Allocate names device slots, not the pod. Among the pods the extender bound to this
//                   node (xpool.io/allocation) that are still Pending and whose containers have not been
//                   allocated, it picks the container asking for that many devices, earliest bound first
//                   (xpool.io/bind-time, then namespace/name). The plugin keeps the "allocated" set itself: no
//                   node-wide lock annotation, nothing that can time out (HAMi #338, #596).
//   ContainerEnv    what the container gets: the vendor's visible-devices variable (device uuids), the limits the
//                   runtime library enforces (XPOOL_DEVICE_MEMORY_LIMIT_<i> in MiB, XPOOL_DEVICE_CORE_LIMIT_<i> in
//                   percent, omitted when compute is not limited), XPOOL_SHARED_REGION, and LD_PRELOAD with the
//                   mount that brings libxpool-vgpu.so in.
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

struct ContainerResponse {
  std::map<std::string, std::string> envs;
  std::vector<Mount> mounts;
};

struct PluginPaths {
  std::string library_dir = "/usr/local/xpool";  // host directory holding libxpool-vgpu.so
  std::string container_library_dir = "/usr/local/xpool";
  std::string shared_region_dir = "/tmp/xpool";  // inside the container, per-task accounting files
};

ContainerResponse ContainerEnv(const AllocateMatch& match, const PluginPaths& paths);

std::vector<std::string> SlotIds(const std::vector<Device>& devices, int split);

}  // namespace xpool::k8s
