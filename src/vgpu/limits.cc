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

bool ParseHamiQuantity(const char* text, uint64_t* out) {
  if (text == nullptr || *text == '\0') return false;
  size_t len = strlen(text);
  uint64_t scale = 1;
  switch (text[len - 1]) {
    case 'G':
    case 'g':
      scale = 1024ull * 1024 * 1024;
      break;
    case 'M':
    case 'm':
      scale = 1024ull * 1024;
      break;
    case 'K':
    case 'k':
      scale = 1024;
      break;
    default:
      break;
  }
  if (scale != 1) --len;
  if (len == 0 || len >= 32) return false;
  char digits[32];
  memcpy(digits, text, len);
  digits[len] = '\0';
  unsigned base = 10;
  const char* p = digits;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    base = 16;
    p += 2;
  } else if (p[0] == '0' && p[1] != '\0') {
    base = 8;
    ++p;
  }
  if (*p == '\0') return false;
  uint64_t value = 0;
  for (; *p != '\0'; ++p) {
    unsigned digit;
    if (*p >= '0' && *p <= '9') {
      digit = static_cast<unsigned>(*p - '0');
    } else if (*p >= 'a' && *p <= 'f') {
      digit = static_cast<unsigned>(*p - 'a' + 10);
    } else if (*p >= 'A' && *p <= 'F') {
      digit = static_cast<unsigned>(*p - 'A' + 10);
    } else {
      return false;
    }
    if (digit >= base || value > (UINT64_MAX - digit) / base) return false;
    value = value * base + digit;
  }
  if (value > UINT64_MAX / scale) return false;
  *out = value * scale;
  return true;
}

namespace {

// What the environment said for one kind of limit on each device: xpool's value, HAMi's per-device value, and
// HAMi's value for every device.
struct Candidates {
  const char* xpool[kMaxDevices] = {};
  const char* hami[kMaxDevices] = {};
  const char* hami_all = nullptr;
};

bool IsExactly(const char* entry, const char* name, const char** value) {
  size_t len = strlen(name);
  if (strncmp(entry, name, len) != 0 || entry[len] != '=') return false;
  *value = entry + len + 1;
  return true;
}

void ApplyMemory(Limits* limits, int dev, const char* name, const char* value, bool hami) {
  uint64_t bytes = 0;
  bool ok;
  if (hami) {
    ok = ParseHamiQuantity(value, &bytes);
    if (ok && bytes == 0) return;  // HAMi-core: 0 means "not set"
  } else {
    uint64_t mib = 0;
    ok = ParseUint64(value, &mib) && mib <= UINT64_MAX / kMiB;
    bytes = mib * kMiB;
  }
  DeviceLimits& d = limits->device[dev];
  d.has_memory_limit = true;
  limits->any_memory_limit = true;
  if (!ok) {
    NoteError(limits, name, value,
              hami ? "a size like 8000m or 8g (limit set to 0)" : "a number of MiB (limit set to 0)");
    bytes = 0;
  }
  d.memory_bytes = bytes;
}

void ApplyCore(Limits* limits, int dev, const char* name, const char* value, bool hami) {
  uint64_t percent = 0;
  bool ok = hami ? ParseHamiQuantity(value, &percent) : ParseUint64(value, &percent);
  if (hami && ok && percent == 0) return;  // HAMi-core: 0 means "not set"
  if (!ok || percent < 1 || percent > 100) {
    NoteError(limits, name, value, "a percentage in 1..100 (limit set to 1)");
    percent = 1;
  }
  limits->device[dev].core_percent = static_cast<int>(percent);
  if (limits->core_limited(dev)) limits->any_core_limit = true;
}

// HAMi-core reads 0 as "not set": the value for every device applies instead.
bool HamiZero(const char* value) {
  uint64_t v = 0;
  return ParseHamiQuantity(value, &v) && v == 0;
}

// Per device: xpool's value, else HAMi's for the device, else HAMi's for every device.
template <typename Apply>
void Resolve(Limits* limits, const Candidates& c, const char* xpool_prefix, const char* hami_name, Apply apply) {
  char name[64];
  for (int dev = 0; dev < kMaxDevices; ++dev) {
    if (c.xpool[dev] != nullptr) {
      snprintf(name, sizeof(name), "%s%d", xpool_prefix, dev);
      apply(limits, dev, name, c.xpool[dev], false);
    } else if (c.hami[dev] != nullptr && !HamiZero(c.hami[dev])) {
      snprintf(name, sizeof(name), "%s_%d", hami_name, dev);
      apply(limits, dev, name, c.hami[dev], true);
    } else if (c.hami_all != nullptr) {
      apply(limits, dev, hami_name, c.hami_all, true);
    }
  }
}

}  // namespace

Limits ParseLimits(const char* const* envp) {
  Limits limits;
  if (envp == nullptr) return limits;
  Candidates memory, core;
  char hami_memory_prefix[64], hami_core_prefix[64];
  snprintf(hami_memory_prefix, sizeof(hami_memory_prefix), "%s_", XPOOL_HAMI_ENV_MEMORY_LIMIT);
  snprintf(hami_core_prefix, sizeof(hami_core_prefix), "%s_", XPOOL_HAMI_ENV_SM_LIMIT);
  for (const char* const* e = envp; *e != nullptr; ++e) {
    const char* value = nullptr;
    int dev;
    if ((dev = DeviceIndexOf(*e, XPOOL_ENV_DEVICE_MEMORY_LIMIT_PREFIX, &value)) >= 0) {
      memory.xpool[dev] = value;
    } else if ((dev = DeviceIndexOf(*e, XPOOL_ENV_DEVICE_CORE_LIMIT_PREFIX, &value)) >= 0) {
      core.xpool[dev] = value;
    } else if ((dev = DeviceIndexOf(*e, hami_memory_prefix, &value)) >= 0) {
      memory.hami[dev] = value;
    } else if ((dev = DeviceIndexOf(*e, hami_core_prefix, &value)) >= 0) {
      core.hami[dev] = value;
    } else if (IsExactly(*e, XPOOL_HAMI_ENV_MEMORY_LIMIT, &value)) {
      memory.hami_all = value;
    } else if (IsExactly(*e, XPOOL_HAMI_ENV_SM_LIMIT, &value)) {
      core.hami_all = value;
    } else if (IsExactly(*e, XPOOL_ENV_VGPU_CONTEXT_RESERVE_MIB, &value)) {
      uint64_t mib = 0;
      if (!ParseUint64(value, &mib) || mib > (1ull << 20)) {
        NoteError(&limits, XPOOL_ENV_VGPU_CONTEXT_RESERVE_MIB, value, "a number of MiB (default kept)");
      } else {
        limits.context_reserve_bytes = mib * kMiB;
      }
    }
  }
  Resolve(&limits, memory, XPOOL_ENV_DEVICE_MEMORY_LIMIT_PREFIX, XPOOL_HAMI_ENV_MEMORY_LIMIT, ApplyMemory);
  Resolve(&limits, core, XPOOL_ENV_DEVICE_CORE_LIMIT_PREFIX, XPOOL_HAMI_ENV_SM_LIMIT, ApplyCore);
  return limits;
}

namespace {

const char* Lookup(const char* const* envp, const char* name) {
  const char* value = nullptr;
  for (const char* const* e = envp; e != nullptr && *e != nullptr; ++e) {
    if (IsExactly(*e, name, &value)) return value;
  }
  return nullptr;
}

// Keeps [A-Za-z0-9_-] and '.' (not as the first character), turning anything else (slashes above all) into '_':
// the name stays one file inside the directory.
void AppendSanitized(char* out, size_t out_len, const char* text) {
  size_t n = strlen(out);
  for (const char* p = text; *p != '\0' && n + 1 < out_len; ++p) {
    char c = *p;
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                (c == '.' && p != text);
    out[n++] = keep ? c : '_';
  }
  out[n] = '\0';
}

}  // namespace

const char* ResolveRegionPath(const char* const* envp, char* out, size_t out_len) {
  if (out == nullptr || out_len == 0) return nullptr;
  out[0] = '\0';
  const char* path = Lookup(envp, XPOOL_ENV_SHARED_REGION);
  if (path != nullptr && *path != '\0') {
    snprintf(out, out_len, "%s", path);
    return XPOOL_ENV_SHARED_REGION;
  }
  const char* dir = Lookup(envp, XPOOL_ENV_SHARED_REGION_DIR);
  if (dir != nullptr && *dir != '\0') {
    const char* job = Lookup(envp, XPOOL_ENV_JOB_ID);
    const char* replica = Lookup(envp, XPOOL_ENV_REPLICA);
    snprintf(out, out_len, "%s/", dir);
    if (job != nullptr && *job != '\0') {
      AppendSanitized(out, out_len, job);
      strncat(out, ".", out_len - strlen(out) - 1);
      AppendSanitized(out, out_len, replica != nullptr && *replica != '\0' ? replica : "0");
      strncat(out, ".region", out_len - strlen(out) - 1);
    } else {
      strncat(out, XPOOL_SHARED_REGION_DEFAULT_NAME, out_len - strlen(out) - 1);
    }
    return XPOOL_ENV_SHARED_REGION_DIR;
  }
  path = Lookup(envp, XPOOL_HAMI_ENV_SHARED_CACHE);
  if (path != nullptr && *path != '\0') {
    snprintf(out, out_len, "%s", path);
    return XPOOL_HAMI_ENV_SHARED_CACHE;
  }
  return nullptr;
}

}  // namespace xpool::vgpu
