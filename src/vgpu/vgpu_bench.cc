// What libxpool-vgpu.so adds per driver call, measured against the fake driver (no GPU). The binary calls the
// driver API directly; run it without and with LD_PRELOAD and compare (docs/PERFORMANCE.md has the commands):
//   BM_LaunchKernel      one cuLaunchKernel (the fake's launch is a counter increment)
//   BM_MemAllocFree      one cuMemAlloc_v2 + cuMemFree_v2 pair of 1 MiB
//   BM_MemGetInfo        one cuMemGetInfo_v2
//   BM_MemAllocAsyncFree one cuMemAllocAsync + cuMemFreeAsync pair of 1 MiB from the device's pool (which keeps it)
//   BM_*Driver           the same calls made on the fake driver's own entry points (never hooked), in the same
//                        process: run with --benchmark_enable_random_interleaving=true and the difference to the
//                        row above is the interposer's cost with the machine's noise largely cancelled
// The label says whether the calls went through the preloaded hooks and which limits were set. With a compute
// limit, run with XPOOL_FAKE_SM_UTIL below the limit so the controller opens up (the warm-up waits for that) and
// the number is the limiter's bookkeeping, not throttling.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <string>

#include "vgpu/cuda_abi.h"

extern "C" {
CUresult cuInit(unsigned int flags);
CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra);
CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemGetInfo_v2(size_t* free, size_t* total);
CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
void* xpoolFakeEntryPoint(const char* name);  // the fake driver's own functions, bypassing any interposer
}

namespace {

std::string Label() {
  Dl_info info;
  bool hooked = dladdr(reinterpret_cast<void*>(&cuLaunchKernel), &info) != 0 && info.dli_fname != nullptr &&
                strstr(info.dli_fname, "libxpool-vgpu") != nullptr;
  std::string label = hooked ? "preloaded" : "direct";
  if (const char* m = getenv("XPOOL_DEVICE_MEMORY_LIMIT_0")) label += " mem=" + std::string(m) + "MiB";
  if (const char* c = getenv("XPOOL_DEVICE_CORE_LIMIT_0")) label += " core=" + std::string(c) + "%";
  return label;
}

// Once per process: a current context, and (with a compute limit) two seconds of launches so the controller has
// raised the budget past what the benchmark needs.
bool Setup() {
  static const bool ok = [] {
    CUcontext ctx = nullptr;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
      return false;
    }
    if (getenv("XPOOL_DEVICE_CORE_LIMIT_0") != nullptr) {
      struct timespec start, now;
      clock_gettime(CLOCK_MONOTONIC, &start);
      do {
        cuLaunchKernel(reinterpret_cast<CUfunction>(0x1), 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr);
        clock_gettime(CLOCK_MONOTONIC, &now);
      } while (now.tv_sec - start.tv_sec < 3);
    }
    return true;
  }();
  return ok;
}

void BM_LaunchKernel(benchmark::State& state) {
  if (!Setup()) {
    state.SkipWithError("no fake device");
    return;
  }
  CUfunction f = reinterpret_cast<CUfunction>(0x1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  }
  state.SetLabel(Label());
}
BENCHMARK(BM_LaunchKernel);

using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void**, void**);
using AllocFn = CUresult (*)(CUdeviceptr*, size_t);
using FreeFn = CUresult (*)(CUdeviceptr);

void BM_LaunchKernelDriver(benchmark::State& state) {
  auto launch = reinterpret_cast<LaunchFn>(xpoolFakeEntryPoint("cuLaunchKernel"));
  if (!Setup() || launch == nullptr) {
    state.SkipWithError("no fake device");
    return;
  }
  CUfunction f = reinterpret_cast<CUfunction>(0x1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(launch(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  }
  state.SetLabel("fake driver entry point");
}
BENCHMARK(BM_LaunchKernelDriver);

void BM_MemAllocFreeDriver(benchmark::State& state) {
  auto alloc = reinterpret_cast<AllocFn>(xpoolFakeEntryPoint("cuMemAlloc_v2"));
  auto free_fn = reinterpret_cast<FreeFn>(xpoolFakeEntryPoint("cuMemFree_v2"));
  if (!Setup() || alloc == nullptr || free_fn == nullptr) {
    state.SkipWithError("no fake device");
    return;
  }
  for (auto _ : state) {
    CUdeviceptr p = 0;
    if (alloc(&p, 1 << 20) != CUDA_SUCCESS) {
      state.SkipWithError("cuMemAlloc_v2 failed");
      break;
    }
    free_fn(p);
  }
  state.SetLabel("fake driver entry point");
}
BENCHMARK(BM_MemAllocFreeDriver);

void BM_MemAllocFree(benchmark::State& state) {
  if (!Setup()) {
    state.SkipWithError("no fake device");
    return;
  }
  for (auto _ : state) {
    CUdeviceptr p = 0;
    if (cuMemAlloc_v2(&p, 1 << 20) != CUDA_SUCCESS) {
      state.SkipWithError("cuMemAlloc_v2 failed");
      break;
    }
    cuMemFree_v2(p);
  }
  state.SetLabel(Label());
}
BENCHMARK(BM_MemAllocFree);

using AllocAsyncFn = CUresult (*)(CUdeviceptr*, size_t, CUstream);
using FreeAsyncFn = CUresult (*)(CUdeviceptr, CUstream);

void AllocAsyncLoop(benchmark::State& state, AllocAsyncFn alloc, FreeAsyncFn free_fn) {
  if (!Setup() || alloc == nullptr || free_fn == nullptr) {
    state.SkipWithError("no fake device");
    return;
  }
  for (auto _ : state) {
    CUdeviceptr p = 0;
    if (alloc(&p, 1 << 20, nullptr) != CUDA_SUCCESS) {
      state.SkipWithError("cuMemAllocAsync failed");
      break;
    }
    free_fn(p, nullptr);
  }
}

void BM_MemAllocAsyncFreeDriver(benchmark::State& state) {
  AllocAsyncLoop(state, reinterpret_cast<AllocAsyncFn>(xpoolFakeEntryPoint("cuMemAllocAsync")),
                 reinterpret_cast<FreeAsyncFn>(xpoolFakeEntryPoint("cuMemFreeAsync")));
  state.SetLabel("fake driver entry point");
}
BENCHMARK(BM_MemAllocAsyncFreeDriver);

void BM_MemAllocAsyncFree(benchmark::State& state) {
  AllocAsyncLoop(state, &cuMemAllocAsync, &cuMemFreeAsync);
  state.SetLabel(Label());
}
BENCHMARK(BM_MemAllocAsyncFree);

void BM_MemGetInfo(benchmark::State& state) {
  if (!Setup()) {
    state.SkipWithError("no fake device");
    return;
  }
  for (auto _ : state) {
    size_t free = 0, total = 0;
    benchmark::DoNotOptimize(cuMemGetInfo_v2(&free, &total));
  }
  state.SetLabel(Label());
}
BENCHMARK(BM_MemGetInfo);

}  // namespace

BENCHMARK_MAIN();
