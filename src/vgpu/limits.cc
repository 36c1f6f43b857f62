#include "vgpu/limits.h"

#include <stdio.h>
#include <string.h>

#include "vgpu/vgpu_env.h"

namespace xpool::vgpu {
namespace {

void NoteError(Limits* limits, const char* name, const char* value, const char* what) {
  if (limits->error_count++ == 0) {
    snprintf(limits->first_error, sizeof(limits->first_error), "%s='%s' is not %s", name, value, what);
  }
}

// Matches "<prefix><index>=<value>"; returns the device index or -1.
int DeviceIndexOf(const char* entry, const char* prefix, const char** value) {
  size_t prefix_len = strlen(prefix);
  if (strncmp(entry, prefix, prefix_len) != 0) return -1;
  const char* p = entry + prefix_len;
  int index = 0;
  int digits = 0;
  while (*p >= '0' && *p <= '9' && digits < 3) {
    index = index * 10 + (*p - '0');
    ++p;
    ++digits;
  }
  if (digits == 0 || *p != '=' || index >= kMaxDevices) return -1;
  *value = p + 1;
  return index;
}

}  // namespace

bool ParseUint64(const char* text, uint64_t* out) {
  if (text == nullptr || *text == '\0') return false;
  uint64_t value = 0;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9') return false;
    uint64_t digit = static_cast<uint64_t>(*p - '0');
    if (value > (UINT64_MAX - digit) / 10) return false;
    value = value * 10 + digit;
  }
  *out = value;
  return true;
}

Limits ParseLimits(const char* const* envp) {
  Limits limits;
  if (envp == nullptr) return limits;
  char name[64];
  for (const char* const* e = envp; *e != nullptr; ++e) {
    const char* value = nullptr;
    int dev = DeviceIndexOf(*e, XPOOL_ENV_DEVICE_MEMORY_LIMIT_PREFIX, &value);
    if (dev >= 0) {
      snprintf(name, sizeof(name), "%s%d", XPOOL_ENV_DEVICE_MEMORY_LIMIT_PREFIX, dev);
      uint64_t mib = 0;
      DeviceLimits& d = limits.device[dev];
      d.has_memory_limit = true;
      limits.any_memory_limit = true;
      if (!ParseUint64(value, &mib) || mib > (UINT64_MAX / kMiB)) {
        NoteError(&limits, name, value, "a number of MiB (limit set to 0)");
        d.memory_bytes = 0;
      } else {
        d.memory_bytes = mib * kMiB;
      }
      continue;
    }
    dev = DeviceIndexOf(*e, XPOOL_ENV_DEVICE_CORE_LIMIT_PREFIX, &value);
    if (dev >= 0) {
      snprintf(name, sizeof(name), "%s%d", XPOOL_ENV_DEVICE_CORE_LIMIT_PREFIX, dev);
      uint64_t percent = 0;
      DeviceLimits& d = limits.device[dev];
      if (!ParseUint64(value, &percent) || percent < 1 || percent > 100) {
        NoteError(&limits, name, value, "a percentage in 1..100 (limit set to 1)");
        percent = 1;
      }
      d.core_percent = static_cast<int>(percent);
      if (limits.core_limited(dev)) limits.any_core_limit = true;
      continue;
    }
    size_t len = strlen(XPOOL_ENV_VGPU_CONTEXT_RESERVE_MIB);
    if (strncmp(*e, XPOOL_ENV_VGPU_CONTEXT_RESERVE_MIB, len) == 0 && (*e)[len] == '=') {
      uint64_t mib = 0;
      if (!ParseUint64(*e + len + 1, &mib) || mib > (1ull << 20)) {
        NoteError(&limits, XPOOL_ENV_VGPU_CONTEXT_RESERVE_MIB, *e + len + 1, "a number of MiB (default kept)");
      } else {
        limits.context_reserve_bytes = mib * kMiB;
      }
    }
  }
  return limits;
}

}  // namespace xpool::vgpu
