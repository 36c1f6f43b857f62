#pragma once
// The MIG geometry of the GPUs an agent lets the server repartition (`xpool agent --mig-dynamic`, docs/mig.md
// "Dynamic geometry"), as the node label kMigDynamicLabel carries it: per GPU its index, the profile table's
// name and its instances, e.g. "0=A100-80GB:3g.40gb@0,1g.10gb@4;1=A100-80GB:" (GPU 1 in MIG mode, empty). A GPU
// offered as one device per start slot (MigStartSlots; its free slots as DeviceMode::kMigSlot devices) names the
// position of its first slot device after its index: "0@2=A100-80GB:7g.80gb@0" — the device at position 2 + k
// stands for the k-th start slot, whatever instances come and go.
// Also the text the server sends back to apply, in `--mig-geometry`'s syntax ("0=3g.40gb,3g.40gb").
// Free functions over value types; thread-safe.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/mig_profile.h"

namespace xpool {

inline constexpr std::string_view kMigDynamicLabel = "xpool.io/mig-dynamic";

// One GPU in MIG mode: its index on the node, its profile table, its instances (valid for the table).
struct MigGpuGeometry {
  int gpu = 0;
  const MigModel* model = nullptr;  // never null in a parsed label
  std::vector<MigPlacement> instances;
  int first_device = -1;  // the position of its first slot device on the node; -1: offered as its instances only
};

// The device position that stands for the instance starting at `start` on a GPU offered by slots, or -1 (not
// offered by slots, or not a start slot of its model).
int MigSlotDevice(const MigGpuGeometry& gpu, int start);

std::string FormatMigDynamicLabel(std::span<const MigGpuGeometry> gpus);

// Checks a parsed label against the node's devices: every GPU offered by slots has its slot devices on the node,
// apart from every other GPU's, each an instance (DeviceMode::kMig) where the label has one start and a free slot
// (kMigSlot) elsewhere. InvalidArgument naming the GPU and position.
Status ValidateMigSlots(const Node& node, std::span<const MigGpuGeometry> gpus);
// InvalidArgument naming the part that is wrong: an unknown table or profile, a start the profile does not
// allow, a geometry the table's rules refuse, a GPU named twice.
Result<std::vector<MigGpuGeometry>> ParseMigDynamicLabel(std::string_view text);

// The geometry to apply, as `xpool agent --mig-geometry` reads it: "GPU=PROFILE,PROFILE;..." (a GPU without
// instances is left out: the flag's syntax has none); the instances of a GPU offered by slots with their starts
// ("0=3g.40gb@0,1g.10gb@4"), since the ones in use must stay where they are.
std::string FormatMigGeometryText(std::span<const MigGpuGeometry> gpus);

}  // namespace xpool
