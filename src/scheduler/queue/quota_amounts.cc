#include "scheduler/queue/quota_amounts.h"

#include <algorithm>

namespace xpool {

int64_t QuotaGpuComputeMilli(int64_t devices, int64_t device_compute_milli, int64_t unset) {
  if (devices >= 0 && device_compute_milli >= 0) return std::min(device_compute_milli, devices * 1000);
  if (devices >= 0) return devices * 1000;
  if (device_compute_milli >= 0) return device_compute_milli;
  return unset;
}

ResourceAmounts CapGuaranteeAtLimit(const ResourceAmounts& guaranteed, const ResourceAmounts& limit) {
  ResourceAmounts out;  // running_jobs is never guaranteed
  out.gpu_compute_milli = std::min(guaranteed.gpu_compute_milli, limit.gpu_compute_milli);
  out.gpu_memory_mib = std::min(guaranteed.gpu_memory_mib, limit.gpu_memory_mib);
  out.cpu_milli = std::min(guaranteed.cpu_milli, limit.cpu_milli);
  return out;
}

}  // namespace xpool
