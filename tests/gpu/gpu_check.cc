// GPU-only checks of libxpool-vgpu.so with the real driver (run by run_gpu_checks.sh, which skips without a GPU).
// Needs no CUDA toolkit: the driver is loaded with dlopen and the kernel is PTX text JIT-compiled by the driver.
//
//   gpu_check memory <limit MiB> <context MiB>   allocate 64 MiB chunks until the driver says no; report where, and
//   check that
//                                  it is CUDA_ERROR_OUT_OF_MEMORY at the limit (minus the context's charge)
//   gpu_check calibrate            time one full-device spin kernel with the device to ourselves ("kernel_ms X")
//   gpu_check spin <seconds> <ms>  launch those kernels for <seconds>; print the share of the device's time this
//                                  process got ("share <percent>"), given the kernel's time alone
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vgpu/cuda_abi.h"

namespace {

typedef struct CUmod_st* CUmodule;
constexpr int kAttrMultiprocessorCount = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrClockRate = 13;            // CU_DEVICE_ATTRIBUTE_CLOCK_RATE (kHz)

struct Driver {
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)(void);
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, size_t);
  CUresult (*cuMemGetInfo_v2)(size_t*, size_t*);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**);
};

bool Load(Driver* d) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW);
  if (h == nullptr) return false;
#define LOAD(name)                                                \
  d->name = reinterpret_cast<decltype(d->name)>(dlsym(h, #name)); \
  if (d->name == nullptr) return false
  LOAD(cuInit);
  LOAD(cuDevicePrimaryCtxRetain);
  LOAD(cuCtxSetCurrent);
  LOAD(cuCtxSynchronize);
  LOAD(cuMemAlloc_v2);
  LOAD(cuMemGetInfo_v2);
  LOAD(cuDeviceGetAttribute);
  LOAD(cuModuleLoadData);
  LOAD(cuModuleGetFunction);
  LOAD(cuLaunchKernel);
#undef LOAD
  CUcontext ctx = nullptr;
  return d->cuInit(0) == CUDA_SUCCESS && d->cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS &&
         d->cuCtxSetCurrent(ctx) == CUDA_SUCCESS;
}

// Spins each block for `cycles` SM clocks.
const char kSpinPtx[] = R"(
.version 6.0
.target sm_50
.address_size 64
.visible .entry spin(.param .u64 cycles)
{
  .reg .pred %p;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [cycles];
  mov.u64 %rd2, %clock64;
LOOP:
  mov.u64 %rd3, %clock64;
  sub.s64 %rd4, %rd3, %rd2;
  setp.lt.s64 %p, %rd4, %rd1;
  @%p bra LOOP;
  ret;
}
)";

double NowS() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int Memory(Driver& d, uint64_t limit_mib, uint64_t context_mib) {
  size_t free = 0, total = 0;
  d.cuMemGetInfo_v2(&free, &total);
  printf("cuMemGetInfo total %zu MiB free %zu MiB\n", total >> 20, free >> 20);
  uint64_t allocated = 0;
  CUresult rc = CUDA_SUCCESS;
  for (;;) {
    CUdeviceptr p = 0;
    rc = d.cuMemAlloc_v2(&p, 64ull << 20);
    if (rc != CUDA_SUCCESS) break;
    allocated += 64ull << 20;
  }
  printf("allocated %llu MiB, then error %d\n", static_cast<unsigned long long>(allocated >> 20), rc);
  // The primary context is charged context_mib; the rest of the limit is what 64 MiB chunks can take.
  const uint64_t expected = (limit_mib - context_mib) / 64 * 64;
  bool ok = rc == CUDA_ERROR_OUT_OF_MEMORY && total == (limit_mib << 20) && (allocated >> 20) == expected;
  printf("%s\n", ok ? "memory check passed" : "FAIL memory check");
  return ok ? 0 : 1;
}

// Launches the spin kernel for `seconds` (0: 20 launches, to time one launch alone). Prints the kernel time
// (calibration) or the share of the device this process got, given the kernel's time alone.
int Spin(Driver& d, double seconds, double kernel_ms_alone) {
  CUmodule module = nullptr;
  CUfunction spin = nullptr;
  if (d.cuModuleLoadData(&module, kSpinPtx) != CUDA_SUCCESS ||
      d.cuModuleGetFunction(&spin, module, "spin") != CUDA_SUCCESS) {
    printf("FAIL cannot load the spin kernel\n");
    return 1;
  }
  int sms = 0, khz = 0;
  d.cuDeviceGetAttribute(&sms, kAttrMultiprocessorCount, 0);
  d.cuDeviceGetAttribute(&khz, kAttrClockRate, 0);
  unsigned long long cycles = static_cast<unsigned long long>(khz) * 2;  // about 2 ms per block
  void* params[] = {&cycles};
  const unsigned grid = static_cast<unsigned>(sms) * 4;  // every SM busy (4 x 128-thread blocks each)
  if (seconds <= 0) {
    d.cuLaunchKernel(spin, grid, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr);  // warm-up (JIT, first launch)
    d.cuCtxSynchronize();
    double t0 = NowS();
    for (int i = 0; i < 20; ++i) d.cuLaunchKernel(spin, grid, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr);
    d.cuCtxSynchronize();
    printf("kernel_ms %.4f\n", (NowS() - t0) / 20 * 1e3);
    return 0;
  }
  const double kernel_s = kernel_ms_alone / 1e3;
  double start = NowS();
  long launches = 0;
  while (NowS() - start < seconds) {
    for (int i = 0; i < 4; ++i, ++launches) {
      d.cuLaunchKernel(spin, grid, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr);
    }
    d.cuCtxSynchronize();
  }
  double elapsed = NowS() - start;
  printf("share %.1f\n", 100.0 * launches * kernel_s / elapsed);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s memory <limit MiB> <context MiB> | calibrate | spin <seconds> <kernel ms>\n", argv[0]);
    return 64;
  }
  Driver d;
  if (!Load(&d)) {
    printf("no usable CUDA driver\n");
    return 77;
  }
  if (strcmp(argv[1], "memory") == 0 && argc >= 4) {
    return Memory(d, strtoull(argv[2], nullptr, 10), strtoull(argv[3], nullptr, 10));
  }
  if (strcmp(argv[1], "calibrate") == 0) return Spin(d, 0, 0);
  if (strcmp(argv[1], "spin") == 0 && argc >= 4) return Spin(d, atof(argv[2]), atof(argv[3]));
  return 64;
}
