#pragma once
// Vendor profiles: each accelerator vendor's resource names and sharing rules, as data, so one Fit serves all.
// The table is immutable after static initialisation; thread-safe.
#include <cstdint>
#include <span>
#include <string_view>

#include "common/status.h"

namespace xpool {

enum class Vendor : uint8_t { kNvidia, kAscend, kCambricon, kHygon, kIluvatar, kMetax };

struct VendorProfile {
  Vendor vendor;
  std::string_view name;                     // "nvidia"; what users write in `vendor:`
  std::string_view count_resource;           // devices per replica, e.g. "nvidia.com/gpu"
  std::string_view memory_resource;          // per-device memory, e.g. "nvidia.com/gpumem"
  std::string_view memory_percent_resource;  // "" when the vendor has none
  std::string_view cores_resource;           // "" when cores cannot be limited
  std::string_view use_type_annotation;      // device-type include list annotation
  std::string_view nouse_type_annotation;    // device-type exclude list annotation
  std::string_view use_uuid_annotation;
  std::string_view nouse_uuid_annotation;
  std::string_view visible_devices_env;  // e.g. "CUDA_VISIBLE_DEVICES"
  int default_max_sharers;               // tasks per device (HAMi's split count)
  int64_t memory_unit_mib;               // the memory resource counts units of this size (1 = MiB)
  // Memory granted is rounded up to a multiple of this (e.g. Ascend vNPU templates); 1 = exact.
  int64_t memory_granularity_mib;
  bool supports_core_limit;
};

// All profiles, one per Vendor value.
std::span<const VendorProfile> AllVendorProfiles();
const VendorProfile& ProfileFor(Vendor vendor);
// Accepts the profile name ("nvidia", "ascend", "cambricon", "hygon", "iluvatar", "metax"), case-insensitive.
Result<Vendor> ParseVendor(std::string_view name);
std::string_view VendorName(Vendor vendor);

}  // namespace xpool
