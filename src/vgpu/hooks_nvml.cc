// The exported NVML hooks: memory queries report the task's limit and usage; the process listing shows the task's
// processes with what they are charged. Devices without a memory limit pass through unchanged.
#include "vgpu/internal/real_table.h"
#include "vgpu/runtime.h"

using namespace xpool::vgpu;

namespace {

// The CUDA ordinal of a limited device, or -1 when `device` is not memory-limited.
int LimitedOrdinal(nvmlDevice_t device) {
  EnsureInit();
  if (!AnyMemoryLimit()) return -1;
  int ordinal = VisibleIndexOfNvmlDevice(device);
  return MemoryLimited(ordinal) ? ordinal : -1;
}

void Virtualise(int ordinal, unsigned long long* total, unsigned long long* free, unsigned long long* used) {
  uint64_t limit = LimitBytes(ordinal);
  uint64_t in_use = UsedBytes(ordinal);
  *total = limit;
  *used = in_use;
  *free = in_use >= limit ? 0 : limit - in_use;
}

template <typename Info, typename Fill>
nvmlReturn_t ListProcesses(int ordinal, unsigned int* infoCount, Info* infos, Fill fill) {
  if (infoCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedRegion::ProcessUsage procs[kRegionSlots];
  int n = ListTaskProcesses(ordinal, procs, kRegionSlots);
  if (n > kRegionSlots) n = kRegionSlots;
  unsigned int capacity = *infoCount;
  *infoCount = static_cast<unsigned int>(n);
  if (static_cast<unsigned int>(n) > capacity || (n > 0 && infos == nullptr)) return NVML_ERROR_INSUFFICIENT_SIZE;
  for (int i = 0; i < n; ++i) fill(&infos[i], procs[i]);
  return NVML_SUCCESS;
}

void FillV1(nvmlProcessInfo_v1_t* info, const SharedRegion::ProcessUsage& proc) {
  info->pid = static_cast<unsigned int>(proc.pid);
  info->usedGpuMemory = proc.bytes;
}

void FillV2(nvmlProcessInfo_t* info, const SharedRegion::ProcessUsage& proc) {
  info->pid = static_cast<unsigned int>(proc.pid);
  info->usedGpuMemory = proc.bytes;
  info->gpuInstanceId = XPOOL_NVML_VALUE_NOT_AVAILABLE;
  info->computeInstanceId = XPOOL_NVML_VALUE_NOT_AVAILABLE;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  EnsureNvml();
  nvmlReturn_t rc = real::nvmlDeviceGetMemoryInfo(device, memory);
  if (rc != NVML_SUCCESS || memory == nullptr) return rc;
  int ordinal = LimitedOrdinal(device);
  if (ordinal >= 0) Virtualise(ordinal, &memory->total, &memory->free, &memory->used);
  return rc;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  EnsureNvml();
  nvmlReturn_t rc = real::nvmlDeviceGetMemoryInfo_v2(device, memory);
  if (rc != NVML_SUCCESS || memory == nullptr) return rc;
  int ordinal = LimitedOrdinal(device);
  if (ordinal >= 0) {
    Virtualise(ordinal, &memory->total, &memory->free, &memory->used);
    memory->reserved = 0;
  }
  return rc;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                  nvmlProcessInfo_v1_t* infos) {
  EnsureNvml();
  int ordinal = LimitedOrdinal(device);
  if (ordinal < 0) return real::nvmlDeviceGetComputeRunningProcesses(device, infoCount, infos);
  return ListProcesses(ordinal, infoCount, infos, &FillV1);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) {
  EnsureNvml();
  int ordinal = LimitedOrdinal(device);
  if (ordinal < 0) return real::nvmlDeviceGetComputeRunningProcesses_v2(device, infoCount, infos);
  return ListProcesses(ordinal, infoCount, infos, &FillV2);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) {
  EnsureNvml();
  int ordinal = LimitedOrdinal(device);
  if (ordinal < 0) return real::nvmlDeviceGetComputeRunningProcesses_v3(device, infoCount, infos);
  return ListProcesses(ordinal, infoCount, infos, &FillV2);
}

}  // extern "C"
