#pragma once
// The two annotations through which xpool's Kubernetes components talk (formats documented in
// docs/kubernetes.md):
//
//   Node  xpool.io/node-devices  written by the device plugin, read by the extender:
//     {"version":1,"devices":[{"uuid":"GPU-0a1b","index":0,"vendor":"nvidia","model":"A100-SXM4-80GB",
//       "memoryMiB":81920,"computeMilli":1000,"maxSharers":10,"numa":0,"mode":"shared","healthy":true}]}
//   Pod   xpool.io/allocation    written by the extender at bind, read by the device plugin and on resync:
//     {"version":1,"node":"gpu-node-1","containers":[{"name":"train","devices":[{"uuid":"GPU-0a1b","index":0,
//       "vendor":"nvidia","memoryMiB":40960,"computeMilli":500}]}]}
//     (an init container's entry carries "init":true; init containers come first, in the order kubelet allocates)
//
// Decoding validates everything and names the bad field; it never throws. Stateless; thread-safe.
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "k8s/kube_objects.h"
#include "model/device.h"

namespace xpool::k8s {

inline constexpr std::string_view kNodeDevicesAnnotation = "xpool.io/node-devices";
inline constexpr std::string_view kAllocationAnnotation = "xpool.io/allocation";
// Written with the allocation: when the extender bound the pod (microseconds since the epoch, decimal), so the
// device plugin can serve pending pods in bind order.
inline constexpr std::string_view kBindTimeAnnotation = "xpool.io/bind-time";

std::string EncodeNodeDevices(const std::vector<Device>& devices);
Result<std::vector<Device>> DecodeNodeDevices(std::string_view text);

// The xpool Node for a Kubernetes node: its devices from the annotation (none when it is absent), ready and
// cordoned from the node's condition and spec. CPU and memory are left 0: kube-scheduler places those.
Result<Node> NodeFromKube(const KubeNode& kube);

struct AssignedDevice {
  std::string uuid;
  int index = 0;
  Vendor vendor = Vendor::kNvidia;
  int64_t memory_mib = 0;
  int64_t compute_milli = 0;
};

struct ContainerAssignment {
  std::string name;
  std::vector<AssignedDevice> devices;
  // A regular init container ("init":true): it runs before the app containers, so its devices count only where
  // they exceed what the app containers hold on the same device (Kubernetes' max(init, sum(app)) rule).
  bool init = false;
  // An init container with restartPolicy Always ("sidecar":true): held like an app container, but its devices
  // are not free for the init containers that start after it.
  bool sidecar = false;
};

struct PodAssignment {
  std::string node;
  std::vector<ContainerAssignment> containers;
};

std::string EncodeAssignment(const PodAssignment& assignment);
Result<PodAssignment> DecodeAssignment(std::string_view text);

}  // namespace xpool::k8s
