#pragma once
// The pure side of MIG on a node: what a GPU's instances look like to the agent (MigGpuInfo, filled by
// nvml_mig.h's NvmlMig), the devices they offer tasks, and the `--mig-geometry` flag — parsed, and laid out on a
// model's placement rules (model/mig_profile.h). Free functions over value types; thread-safe.
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/device.h"
#include "model/mig_label.h"
#include "model/mig_profile.h"

namespace xpool::agent {

// `count` instances of the profile named `profile` ("1g.10gb"), as --mig-geometry asks for them; one at start slot
// `start` when given ("1g.10gb@4").
struct MigWanted {
  std::string profile;
  int count = 0;
  int start = -1;  // -1: wherever it fits
  friend bool operator==(const MigWanted&, const MigWanted&) = default;
};

// One GPU instance as the driver reports it.
struct MigInstanceInfo {
  MigPlacement placement;  // profile index into the GPU's MigModel and start slot
  unsigned int gpu_instance_id = 0;
  std::string uuid;        // "MIG-...": what CUDA_VISIBLE_DEVICES takes; empty while it has no compute instance
  int64_t memory_mib = 0;  // as the driver reports it (a little below the profile's nominal memory)
};

// One GPU and its MIG state.
struct MigGpuInfo {
  int index = 0;
  std::string uuid;
  std::string model_name;           // NVML's name without "NVIDIA "
  const MigModel* model = nullptr;  // the profile table; null when xpool has none for this GPU
  bool mig_capable = false;         // NVML reports a MIG mode for it
  bool mig_enabled = false;
  std::vector<MigInstanceInfo> instances;  // by start slot
};

// The devices a GPU in MIG mode offers tasks, one per instance that has a compute instance: the parent's vendor,
// NUMA node and health; the instance's uuid and memory; model "<parent model> MIG <profile>"; compute share
// of the model's slices; mode kMig; held whole by one task (max_sharers 1).
std::vector<Device> MigInstanceDevices(const MigGpuInfo& gpu, const Device& parent);

// A node's devices with every GPU in MIG mode replaced by its instances (MigInstanceDevices), in order, and every
// device's index renumbered to its position (the scheduler's grants name devices by position; tasks then see
// their devices by uuid, task_env.h VisibleDeviceNames). Links between devices keep their GPUs' scores, instances
// of one GPU score kLinkSameBoard. `gpus` by index as ReadGpus returns them; GPUs it does not name stay.
//
// With `slotted` (an agent run with --mig-dynamic), each such GPU is one device per start slot of its model
// instead (MigSlotDevices), so that positions stay when instances come and go; `slotted` gets the GPUs'
// geometries with the position of their first slot device, what the node's kMigDynamicLabel carries.
Node ExpandMigDevices(const Node& node, std::span<const MigGpuInfo> gpus,
                      std::vector<MigGpuGeometry>* slotted = nullptr);

// A GPU in MIG mode as one device per start slot of its model (MigStartSlots), in slot order: the instance that
// starts there (as MigInstanceDevices makes it; unhealthy while it has no compute instance, which CUDA cannot
// see), else a free slot: mode kMigSlot, no memory or compute, uuid "<GPU uuid>/slot<S>", model "<parent model>
// MIG slot <S>", never offered to a task.
std::vector<Device> MigSlotDevices(const MigGpuInfo& gpu, const Device& parent);

// `--mig-geometry`: "0=2x1g.10gb,3g.40gb;1=7g.80gb" → GPU index → the instances wanted on it (an optional "<N>x"
// repeats a profile; "1g.10gb@4" places one at start slot 4, as the server asks an agent run with --mig-dynamic;
// "0=" turns MIG mode on with no instance, for --mig-dynamic to make them as requests come).
// InvalidArgument naming the part that is wrong.
Result<std::map<int, std::vector<MigWanted>>> ParseMigGeometry(std::string_view text);

// A geometry holding `demand` on `model`: profiles taken largest first, each at the lowest start that still lets
// the rest fit (a search; at most 8 instances); when every entry gives its start, exactly those placements.
// InvalidArgument naming a profile the model lacks, starts given for some entries only, or when the demand does
// not fit on one GPU (or the placements given break the model's rules).
Result<std::vector<MigPlacement>> PlaceMigWanted(const MigModel& model, std::span<const MigWanted> demand);

}  // namespace xpool::agent
