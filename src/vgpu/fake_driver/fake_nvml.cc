// The fake NVML (libnvidia-ml.so.1) used by the CPU-only tests: the devices of XPOOL_FAKE_DEVICES with their
// physical memory (nothing used), a process list holding the calling process, and per-process SM utilisation
// samples for the calling process: XPOOL_FAKE_SM_UTIL percent, or, with XPOOL_FAKE_SM_CAPACITY=<blocks per second>,
// the utilisation that the blocks launched through the fake driver would cause on such a device (a closed loop for
// the compute limiter); NOT_SUPPORTED when neither is set. Linked -Wl,-Bsymbolic like the fake driver.
// Thread-safe (a mutex around the utilisation model).
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mutex>

#include "vgpu/cuda_abi.h"
#include "vgpu/fake_driver/fake_devices.h"
#include "vgpu/vgpu_env.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using xpool::vgpu::fake::Devices;
using xpool::vgpu::fake::kMaxFakeDevices;

struct nvmlDevice_st_fake {
  unsigned int index;
};
nvmlDevice_st_fake g_devices[kMaxFakeDevices] = {{0}, {1}, {2},  {3},  {4},  {5},  {6},  {7},
                                                 {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}};

int IndexOf(nvmlDevice_t device) {
  auto* fake = reinterpret_cast<nvmlDevice_st_fake*>(device);
  if (fake < &g_devices[0] || fake >= &g_devices[Devices().count]) return -1;
  return static_cast<int>(fake->index);
}

unsigned long long NowUs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<unsigned long long>(ts.tv_sec) * 1000000ull + static_cast<unsigned long long>(ts.tv_nsec) / 1000;
}

// A device that runs `capacity` thread blocks per second: the utilisation since the previous sample is the fake
// driver's launched blocks over that interval divided by what the device could have run (at most 100 %).
unsigned int ModelledUtilisation(double capacity) {
  static std::mutex mutex;
  static uint64_t last_blocks = 0;
  static unsigned long long last_us = 0;
  auto blocks_fn = reinterpret_cast<uint64_t (*)()>(dlsym(RTLD_DEFAULT, "xpoolFakeLaunchedBlocks"));
  if (blocks_fn == nullptr || capacity <= 0) return 0;
  std::lock_guard<std::mutex> lock(mutex);
  uint64_t blocks = blocks_fn();
  unsigned long long now = NowUs();
  double util = 0;
  if (last_us != 0 && now > last_us) {
    util = 100.0 * static_cast<double>(blocks - last_blocks) / (capacity * static_cast<double>(now - last_us) / 1e6);
  }
  last_blocks = blocks;
  last_us = now;
  return static_cast<unsigned int>(util > 100 ? 100 : util);
}

template <typename Info>
nvmlReturn_t ListSelf(nvmlDevice_t device, unsigned int* count, Info* infos) {
  if (IndexOf(device) < 0 || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int capacity = *count;
  *count = 1;
  if (capacity < 1 || infos == nullptr) return NVML_ERROR_INSUFFICIENT_SIZE;
  memset(&infos[0], 0, sizeof(Info));
  infos[0].pid = static_cast<unsigned int>(getpid());
  infos[0].usedGpuMemory = 0;
  return NVML_SUCCESS;
}

}  // namespace

FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void) { return NVML_SUCCESS; }
FAKE_EXPORT nvmlReturn_t nvmlInit(void) { return NVML_SUCCESS; }
FAKE_EXPORT nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned int>(Devices().count);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (device == nullptr || index >= static_cast<unsigned int>(Devices().count)) return NVML_ERROR_INVALID_ARGUMENT;
  *device = reinterpret_cast<nvmlDevice_t>(&g_devices[index]);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  int i = IndexOf(device);
  if (i < 0 || index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *index = static_cast<unsigned int>(i);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  int i = IndexOf(device);
  if (i < 0 || uuid == nullptr || length < 41) return NVML_ERROR_INVALID_ARGUMENT;
  snprintf(uuid, length, "GPU-00000000-0000-0000-0000-0000000000%02d", i);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (IndexOf(device) < 0 || memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = Devices().bytes;
  memory->free = Devices().bytes;
  memory->used = 0;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  if (IndexOf(device) < 0 || memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = Devices().bytes;
  memory->reserved = 0;
  memory->free = Devices().bytes;
  memory->used = 0;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* count,
                                                              nvmlProcessInfo_v1_t* infos) {
  return ListSelf(device, count, infos);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* count,
                                                                 nvmlProcessInfo_t* infos) {
  return ListSelf(device, count, infos);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                                 nvmlProcessInfo_t* infos) {
  return ListSelf(device, count, infos);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t* samples,
                                                         unsigned int* count, unsigned long long) {
  if (IndexOf(device) < 0 || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const char* util = getenv(XPOOL_ENV_FAKE_SM_UTIL);
  const char* capacity_env = getenv(XPOOL_ENV_FAKE_SM_CAPACITY);
  if (util == nullptr && capacity_env == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  unsigned int room = *count;
  *count = 1;
  if (room < 1 || samples == nullptr) return NVML_ERROR_INSUFFICIENT_SIZE;
  unsigned int sm = util != nullptr ? static_cast<unsigned int>(atoi(util)) : 0;
  if (capacity_env != nullptr) sm = ModelledUtilisation(atof(capacity_env));
  samples[0] = nvmlProcessUtilizationSample_t{static_cast<unsigned int>(getpid()), NowUs(), sm, 0, 0, 0};
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  if (IndexOf(device) < 0 || utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const char* util = getenv(XPOOL_ENV_FAKE_SM_UTIL);
  utilization->gpu = util != nullptr ? static_cast<unsigned int>(atoi(util)) : 0;
  utilization->memory = 0;
  return NVML_SUCCESS;
}
