#pragma once
// MIG profiles as data: for each MIG-capable NVIDIA GPU model, the GPU-instance profiles it offers (`1g.10gb`,
// `3g.40gb`, ...) and the placement rules the driver enforces, written from NVIDIA's Multi-Instance GPU user guide
// ("Supported MIG Profiles") and the placements `nvidia-smi mig -lgipp` prints.
//
// The placement model: a GPU has `slots` memory slices (8; 4 on the A30) and `compute_slices` compute slices (7;
// 4 on the A30). An instance of a profile occupies `memory_slices` consecutive slots starting at one of the
// profile's `starts`; instances never share a slot, a profile has at most `max_count` instances on a GPU, and
// the instances' compute slices add up to at most the GPU's.
//
// The tables are immutable after static initialisation; every function here is pure and thread-safe.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/device.h"

namespace xpool {

// One GPU-instance profile of one GPU model.
struct MigProfile {
  std::string_view name;  // "1g.10gb", "1g.10gb+me": as nvidia-smi names it, without the "MIG " prefix
  int compute_slices;     // the "g" count
  int memory_slices;      // slots one instance spans
  // Nominal memory: the name's GB × 1024 (HAMi's dynamic-mig figures). The driver reports a little less usable
  // memory (e.g. 9.75 GiB for an H100 1g.10gb).
  int64_t memory_mib;
  int max_count;                // instances of this profile one GPU holds at most
  std::span<const int> starts;  // slots an instance may start at, ascending
  bool media_extensions;        // "+me": holds the GPU's media engines; scarce, chosen only when named
};

// One MIG-capable GPU model and its profiles, smallest first.
struct MigModel {
  std::string_view name;  // "A100-SXM4-40GB", "H200-141GB"
  int compute_slices;     // 7 (A30: 4)
  int slots;              // memory slices: 8 (A30: 4)
  int64_t memory_mib;     // nominal device memory
  std::span<const MigProfile> profiles;
};

// Every tabled model: A30-24GB, A100-SXM4-40GB, A100-80GB, H100-80GB, H100-94GB, H100-96GB, H200-141GB,
// GH200-144GB, B200-180GB, GB200-186GB, B300-269GB.
std::span<const MigModel> AllMigModels();

// The table of that name ("A100-80GB", as MigModel::name); nullptr if none.
const MigModel* MigModelNamed(std::string_view table_name);

// The table for an NVML / CUDA device name ("NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3", "NVIDIA H200",
// "A100" as xpool's Device::model writes it), case-insensitive, the "NVIDIA " prefix optional. Where the name does
// not tell the memory size (an A100 without "40GB" / "80GB"; an H100, 80 GB unless "NVL" or "94GB"; a GH200 or H20,
// 96 GB unless "144G" / "H20-3e"), `memory_mib` > 0 decides. nullptr when the model has no MIG or is not tabled
// (H20 141GB, GB300, RTX PRO Blackwell).
const MigModel* FindMigModel(std::string_view device_name, int64_t memory_mib = 0);

// The profile of that name on the model (exact, case-sensitive, as nvidia-smi writes it); nullptr if none.
const MigProfile* FindMigProfile(const MigModel& model, std::string_view profile_name);
// Every slot some profile of the model may start at, in order: a GPU offered by slots (docs/mig.md, "Dynamic
// geometry") has one device per entry.
std::vector<int> MigStartSlots(const MigModel& model);

// Index of the profile in model.profiles; -1 if none.
int MigProfileIndex(const MigModel& model, std::string_view profile_name);

// The compute share of one instance in milli-devices, rounded down: a 1g on a 7-slice GPU is 142.
int64_t MigComputeMilli(const MigModel& model, const MigProfile& profile);

// OK when some tabled model has a profile of this name; otherwise InvalidArgument naming the known ones.
Status ValidateMigProfileName(std::string_view profile_name);
// Every profile name some model offers, smallest first (compute slices, then memory), comma-separated.
std::string KnownMigProfileNames();

// NVIDIA's Kubernetes device plugin (mixed strategy) resource for a profile and back: "nvidia.com/mig-1g.10gb"
// ↔ "1g.10gb"; the plugin writes a profile's "+" as ".", so "nvidia.com/mig-1g.10gb.me" ↔ "1g.10gb+me".
// The parser refuses other resources and profiles no model has (InvalidArgument).
Result<std::string> MigProfileFromResourceName(std::string_view resource_name);
std::string MigResourceName(std::string_view profile_name);

// HAMi's dynamic-mig choice: the smallest profile of the model (fewest slots, then fewest compute slices, then
// least memory) with at least `memory_mib` of memory and at least `compute_milli` of the device's compute; 0
// means no requirement. Media-extension profiles are never chosen. nullptr when no profile covers the request.
const MigProfile* SmallestCoveringMigProfile(const MigModel& model, int64_t memory_mib, int64_t compute_milli);

// Dynamic MIG's choice for one device asked by memory and compute (docs/mig.md, "Dynamic geometry"): the smallest
// covering profile, with the memory counted against 95 % of each profile's nominal memory, what the driver reports
// usable at least (an A100 80GB's 1g.10gb has 9,728 MiB of 10,240). nullptr when none covers the request.
const MigProfile* MigProfileForRequest(const MigModel& model, int64_t memory_mib, int64_t compute_milli);

// The profile of a device that is a MIG instance: mode kMig and a model named as NVML names MIG devices, "<GPU>
// MIG <profile>" ("A100-SXM4-80GB MIG 1g.10gb" → "1g.10gb"). Empty for any other device.
std::string_view MigProfileOfDevice(const Device& device);

// One instance on a GPU: a profile (index into MigModel::profiles) at a start slot.
struct MigPlacement {
  int profile = 0;
  int start = 0;
  friend bool operator==(const MigPlacement&, const MigPlacement&) = default;
};

// Checks a whole geometry against the model's rules: known profile, an allowed start, inside the GPU, no slot
// shared, at most max_count per profile, compute slices within the GPU's. InvalidArgument naming the first rule
// broken.
Status ValidateMigGeometry(const MigModel& model, std::span<const MigPlacement> geometry);

// True when an instance of `profile` could start at `start` next to `geometry` (assumed valid) without breaking
// a rule.
bool MigPlacementFits(const MigModel& model, std::span<const MigPlacement> geometry, int profile, int start);

}  // namespace xpool
