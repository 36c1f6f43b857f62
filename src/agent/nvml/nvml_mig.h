#pragma once
// NvmlMig: the MIG geometry of this node's NVIDIA GPUs through NVML. It reads each GPU's MIG mode and instances,
// turns MIG mode on, and brings a GPU to a wanted geometry (model/mig_profile.h placements): first the instances
// not wanted are destroyed (their compute instance, then the GPU instance), then the missing ones are created (a
// GPU instance at its placement, then its full-size compute instance). The driver refuses to destroy an instance a
// process uses, and ApplyGeometry refuses before touching anything when such an instance is named busy.
//
// A GPU instance's NVML profile is found from the table's profile (compute and memory slices, media extensions)
// through nvmlDeviceGetGpuInstanceProfileInfo, whose id is what the driver's create and list calls take.
//
// NVML is opened with dlopen and initialised for the object's lifetime. Owned by the agent; not thread-safe.
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "agent/nvml/mig_layout.h"
#include "common/status.h"

namespace xpool::agent {

class NvmlMig {
 public:
  // Opens `library` (a name searched the usual dlopen way, or a path) and initialises NVML. FailedPrecondition when
  // the library cannot be opened or lacks the MIG calls; Unavailable when nvmlInit fails.
  static Result<std::unique_ptr<NvmlMig>> Open(const std::string& library);
  ~NvmlMig();
  NvmlMig(const NvmlMig&) = delete;
  NvmlMig& operator=(const NvmlMig&) = delete;

  // Every GPU, by index. A GPU without MIG support has mig_capable false and no instances.
  Result<std::vector<MigGpuInfo>> ReadGpus();

  // Turns MIG mode on (a no-op when it is on). PermissionDenied when the driver refuses (not root, or a GPU that
  // must be reset first: the message says which); FailedPrecondition for a GPU without MIG.
  Status EnableMig(int gpu);

  // Brings `gpu` (MIG on) to exactly `wanted`: instances already at a wanted placement stay, the others are
  // destroyed, the missing ones created. InvalidArgument when `wanted` is not a valid geometry for the GPU's model;
  // FailedPrecondition, before any change, when an instance that would be destroyed has its uuid in `busy_uuids`;
  // the driver's refusal otherwise, naming the instance.
  Status ApplyGeometry(int gpu, std::span<const MigPlacement> wanted, std::span<const std::string> busy_uuids = {});

  struct Api;  // the resolved NVML entry points (nvml_mig.cc)

 private:
  NvmlMig(void* library, std::unique_ptr<Api> api);
  void* library_;
  std::unique_ptr<Api> api_;
};

// Applies a parsed --mig-geometry: for each GPU named, MIG on, then ApplyGeometry with PlaceMigWanted's geometry
// — unless the GPU already holds exactly the demanded profiles (at the starts given, if given), which is left as
// it is. Stops at the first error,
// naming the GPU.
Status ApplyMigGeometry(NvmlMig& nvml, const std::map<int, std::vector<MigWanted>>& geometry);

}  // namespace xpool::agent
