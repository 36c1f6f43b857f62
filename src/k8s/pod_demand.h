#pragma once
// PodDemand: what a pod asks of xpool, read from HAMi's resource names and annotations.
//
// For every vendor profile (model/vendor.h) a container may set, in limits (or requests when limits lack it):
//   <count_resource>           devices for this container             e.g. nvidia.com/gpu: 2
//   <memory_resource>          per-device memory, in the profile's    e.g. nvidia.com/gpumem: 8000
//                              memory unit (MiB for most vendors)
//   <memory_percent_resource>  per-device memory as a percentage      e.g. nvidia.com/gpumem-percentage: 50
//   <cores_resource>           per-device compute percentage 0..100   e.g. nvidia.com/gpucores: 30
// and the pod may carry the profile's annotations (comma-separated lists):
//   <use_type_annotation> / <nouse_type_annotation>   device model substrings to require / to avoid
//   <use_uuid_annotation> / <nouse_uuid_annotation>   device uuids to require / to avoid
// Defaults follow HAMi: memory or cores without a count means 1 device; no memory given means 100% of each
// device's memory; no cores means compute shared freely. xpool additions: annotation `xpool.io/numa-bind: "true"`
// (all of a container's devices on one NUMA node) and `xpool.io/policy` (or HAMi's `hami.io/gpu-scheduler-policy`)
// to choose the placement policy for this pod.
// Stateless functions over value types; thread-safe.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "k8s/kube_objects.h"
#include "model/task_request.h"

namespace xpool::k8s {

inline constexpr std::string_view kNumaBindAnnotation = "xpool.io/numa-bind";
inline constexpr std::string_view kPolicyAnnotation = "xpool.io/policy";
inline constexpr std::string_view kHamiPolicyAnnotation = "hami.io/gpu-scheduler-policy";

// When a container holds its devices (Kubernetes' pod resource rule: the pod needs the larger of its biggest init
// container and the sum of its app containers and sidecars).
enum class ContainerPhase : uint8_t {
  kApp,      // spec.containers: all run at the same time
  kInit,     // spec.initContainers: one at a time, before the app containers; devices reused by the later ones
  kSidecar,  // spec.initContainers with restartPolicy Always: starts in order, then runs beside the app containers
};

struct ContainerDemand {
  std::string container;
  TaskRequest request;  // devices only: cpu and memory are kube-scheduler's business
  ContainerPhase phase = ContainerPhase::kApp;
};

struct PodDemand {
  // One entry per container that asks for managed devices: init containers first, then app containers, each in
  // spec order (the order kubelet allocates them in). Empty = xpool does not manage the pod.
  std::vector<ContainerDemand> containers;
  std::string policy;  // "" = the extender's default

  bool managed() const { return !containers.empty(); }
};

// True when any container names any managed resource (of any vendor, or an NVIDIA MIG instance
// nvidia.com/mig-<profile>), even with a malformed value.
bool RequestsManagedResources(const PodInfo& pod);

// Every managed resource name of every vendor profile, and nvidia.com/mig-<profile> for every tabled MIG profile
// (for managedResources and the webhook).
std::vector<std::string> ManagedResourceNames();

// Quantities are read as Kubernetes reads them (k8s/quantity.h: "8k", "3Ki", "1e2", "4000000m" are whole numbers).
// Maps a pod to its demand. A malformed quantity or annotation is InvalidArgument with a message naming the
// container, the resource and what is wrong, e.g.
//   container "train": nvidia.com/gpumem "8.5" is not a whole number (it counts MiB)
Result<PodDemand> PodToDemand(const PodInfo& pod);

}  // namespace xpool::k8s
