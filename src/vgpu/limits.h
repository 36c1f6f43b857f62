// The limits a task's launcher hands to libxpool-vgpu.so through the environment (vgpu/vgpu_env.h), parsed once.
// xpool's names (XPOOL_DEVICE_MEMORY_LIMIT_<i> in MiB, XPOOL_DEVICE_CORE_LIMIT_<i> in percent) win; for a device
// without them HAMi-core's names apply (CUDA_DEVICE_MEMORY_LIMIT_<i>, then CUDA_DEVICE_MEMORY_LIMIT; likewise
// CUDA_DEVICE_SM_LIMIT), parsed as HAMi-core parses them. A value that does not parse fails closed: the device gets
// a 0 MiB memory limit / a 1 % core limit and an error is recorded, so a typo never silently lifts a limit.
// Value type; thread-compatible.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace xpool::vgpu {

inline constexpr int kMaxDevices = 16;
inline constexpr uint64_t kMiB = 1024ull * 1024ull;
inline constexpr uint64_t kDefaultContextReserveMiB = 256;

struct DeviceLimits {
  bool has_memory_limit = false;
  uint64_t memory_bytes = 0;
  int core_percent = 0;  // 0: no compute limit; 1..99: throttled; 100 is "no limit"
};

struct Limits {
  DeviceLimits device[kMaxDevices];
  uint64_t context_reserve_bytes = kDefaultContextReserveMiB * kMiB;
  bool any_memory_limit = false;
  bool any_core_limit = false;
  int error_count = 0;          // values that did not parse (each logged by the caller via first_error)
  char first_error[160] = {0};  // "XPOOL_DEVICE_MEMORY_LIMIT_0='abc' is not a number of MiB"

  bool any_limit() const { return any_memory_limit || any_core_limit; }
  bool memory_limited(int dev) const { return dev >= 0 && dev < kMaxDevices && device[dev].has_memory_limit; }
  bool core_limited(int dev) const {
    return dev >= 0 && dev < kMaxDevices && device[dev].core_percent > 0 && device[dev].core_percent < 100;
  }
};

// Parses the limits out of an environment block (NULL-terminated "NAME=value" strings, like environ).
Limits ParseLimits(const char* const* envp);

// Strict decimal parse of a whole string; false on empty, sign, junk or overflow.
bool ParseUint64(const char* text, uint64_t* out);

// A HAMi-core quantity: digits as C's strtoul with base 0 reads them (decimal, 0x hex, 0 octal), then an optional
// K/M/G (any case; 1024-based) suffix; no suffix means bytes. Unlike HAMi-core, trailing junk, a sign or overflow is
// an error (false) rather than ignored.
bool ParseHamiQuantity(const char* text, uint64_t* out);

// The shared region's path from the environment: XPOOL_SHARED_REGION, else a file in XPOOL_SHARED_REGION_DIR, else
// CUDA_DEVICE_MEMORY_SHARED_CACHE. Returns the variable it came from, or nullptr (no region: per-process limits).
const char* ResolveRegionPath(const char* const* envp, char* out, size_t out_len);

}  // namespace xpool::vgpu
