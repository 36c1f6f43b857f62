// CUDA ordinal <-> NVML device mapping (runtime.h). NVML numbers every GPU the process can see in PCI order;
// CUDA numbers the devices named by CUDA_VISIBLE_DEVICES (indices or UUIDs) in that order.
#include <stdlib.h>
#include <string.h>

#include "vgpu/internal/real_table.h"
#include "vgpu/runtime.h"

namespace xpool::vgpu {
namespace {

// The NVML index behind CUDA ordinal `ordinal`, or -1.
int NvmlIndexOfOrdinal(int ordinal) {
  const char* visible = getenv("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr) return ordinal;
  const char* p = visible;
  for (int i = 0; *p != '\0'; ++i) {
    const char* end = strchr(p, ',');
    size_t len = end != nullptr ? static_cast<size_t>(end - p) : strlen(p);
    if (i == ordinal) {
      char token[96];
      if (len == 0 || len >= sizeof(token)) return -1;
      memcpy(token, p, len);
      token[len] = '\0';
      char* rest = nullptr;
      long index = strtol(token, &rest, 10);
      if (rest != token && *rest == '\0') return index >= 0 ? static_cast<int>(index) : -1;
      // A UUID (GPU-..., possibly abbreviated): find the NVML device whose UUID starts with it.
      unsigned int count = 0;
      if (real::nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS) return -1;
      for (unsigned int n = 0; n < count; ++n) {
        nvmlDevice_t device;
        char uuid[96];
        if (real::nvmlDeviceGetHandleByIndex_v2(n, &device) == NVML_SUCCESS &&
            real::nvmlDeviceGetUUID(device, uuid, sizeof(uuid)) == NVML_SUCCESS && strncmp(uuid, token, len) == 0) {
          return static_cast<int>(n);
        }
      }
      return -1;
    }
    if (end == nullptr) break;
    p = end + 1;
  }
  return -1;
}

}  // namespace

int VisibleIndexOfNvmlDevice(nvmlDevice_t device) {
  unsigned int index = 0;
  if (real::nvmlDeviceGetIndex(device, &index) != NVML_SUCCESS) return -1;
  for (int ordinal = 0; ordinal < kMaxDevices; ++ordinal) {
    if (NvmlIndexOfOrdinal(ordinal) == static_cast<int>(index)) return ordinal;
  }
  return -1;
}

bool NvmlDeviceOfVisibleIndex(int ordinal, nvmlDevice_t* device) {
  int index = NvmlIndexOfOrdinal(ordinal);
  return index >= 0 && real::nvmlDeviceGetHandleByIndex_v2(static_cast<unsigned int>(index), device) == NVML_SUCCESS;
}

}  // namespace xpool::vgpu
