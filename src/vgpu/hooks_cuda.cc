// The exported CUDA driver API hooks. Each one only forwards to the runtime (runtime.h) and the real driver
// (internal/real_table.h); no exception leaves this file (the library is built with -fno-exceptions).
#include <string.h>

#include "vgpu/internal/array_bytes.h"
#include "vgpu/internal/memory_hooks.h"
#include "vgpu/internal/real_table.h"
#include "vgpu/log.h"
#include "vgpu/runtime.h"

using namespace xpool::vgpu;

namespace {

constexpr uint64_t kPitchAlignment = 512;

uint64_t Blocks(unsigned int x, unsigned int y, unsigned int z) {
  return static_cast<uint64_t>(x) * static_cast<uint64_t>(y) * static_cast<uint64_t>(z);
}

// The one branch a launch pays without a compute limit.
inline void LaunchGate(uint64_t blocks) {
  if (__builtin_expect(g_launch_gate.load(std::memory_order_acquire) != 0, 0)) {
    EnsureCudaInit();
    ThrottleLaunch(blocks);
  }
}

// Reserve, allocate, record; or undo the reservation when the driver fails.
template <typename Call>
CUresult ChargedAlloc(int dev, uint64_t bytes, AllocKind kind, Call call, uint64_t* handle) {
  if (!MemoryLimited(dev)) return call();
  if (!Reserve(dev, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = call();
  if (rc != CUDA_SUCCESS) {
    Unreserve(dev, bytes);
    return rc;
  }
  Remember(kind, *handle, dev, bytes);
  return rc;
}

template <typename Call>
CUresult LinearAlloc(CUdeviceptr* dptr, uint64_t bytes, Call call) {
  EnsureCudaInit();
  if (!AnyMemoryLimit() || dptr == nullptr) return call();
  uint64_t handle = 0;
  auto wrapped = [&] {
    CUresult rc = call();
    if (rc == CUDA_SUCCESS) handle = *dptr;
    return rc;
  };
  return ChargedAlloc(CurrentDevice(), bytes, AllocKind::kLinear, wrapped, &handle);
}

// The charge is taken out of the tracker before the real free: once the driver has freed the address another
// thread may get it back from an allocation and record its own charge under it.
template <typename Call>
CUresult Released(AllocKind kind, uint64_t handle, Call call) {
  EnsureCudaInit();
  if (!AnyMemoryLimit()) return call();
  Charge charge;
  const bool charged = TakeCharge(kind, handle, &charge);
  CUresult rc = call();
  if (charged) {
    if (rc != CUDA_SUCCESS) {
      Remember(kind, handle, charge.device, charge.bytes, charge.pool);  // not freed: still charged
    } else if (charge.pool != 0) {
      internal::PoolAllocationFreed(charge.pool, charge.bytes);  // back in its pool, which keeps it
    } else {
      Unreserve(charge.device, charge.bytes);
    }
  }
  return rc;
}

// The stream-ordered allocations go through the pool path; `F` is the real call, with its arguments in a tuple.
template <typename F>
CUresult StreamOrderedAlloc(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream stream, F call) {
  auto trampoline = [](void* context) { return (*static_cast<F*>(context))(); };
  return internal::PoolAlloc(dptr, bytes, pool, stream, trampoline, &call);
}

using xpool::vgpu::internal::ArrayBytes;

template <typename Call>
CUresult ArrayAlloc(CUarray* handle, uint64_t bytes, Call call) {
  EnsureCudaInit();
  if (!AnyMemoryLimit() || handle == nullptr) return call();
  uint64_t key = 0;
  auto wrapped = [&] {
    CUresult rc = call();
    if (rc == CUDA_SUCCESS) key = reinterpret_cast<uint64_t>(*handle);
    return rc;
  };
  return ChargedAlloc(CurrentDevice(), bytes, AllocKind::kArray, wrapped, &key);
}

template <typename Call>
CUresult ContextCreate(CUcontext* pctx, CUdevice dev, Call call) {
  EnsureCudaInit();
  if (!MemoryLimited(dev) || pctx == nullptr) return call();
  uint64_t key = 0;
  auto wrapped = [&] {
    CUresult rc = call();
    if (rc == CUDA_SUCCESS) key = reinterpret_cast<uint64_t>(*pctx);
    return rc;
  };
  return ChargedAlloc(dev, CurrentLimits().context_reserve_bytes, AllocKind::kContext, wrapped, &key);
}

template <typename Size>
void VirtualiseMemInfo(CUresult rc, Size* free, Size* total) {
  if (rc != CUDA_SUCCESS || !AnyMemoryLimit()) return;
  int dev = CurrentDevice();
  if (!MemoryLimited(dev)) return;
  ReconcileWithDriver(dev);  // what pools and the graph pool released is free again
  uint64_t limit = LimitBytes(dev);
  uint64_t used = UsedBytes(dev);
  uint64_t left = used >= limit ? 0 : limit - used;
  const uint64_t max = static_cast<Size>(~static_cast<Size>(0));
  if (total != nullptr) *total = static_cast<Size>(limit < max ? limit : max);
  if (free != nullptr) {
    uint64_t real_free = *free;
    uint64_t value = left < real_free ? left : real_free;
    *free = static_cast<Size>(value < max ? value : max);
  }
}

// cuGetProcAddress answers with our hook for a governed symbol. The driver's answer is matched against the real
// functions we resolved by name; failing that (a driver returning an unexported entry point), by the symbol's
// base name, choosing the per-thread-stream or newest versioned variant.
void* HookForProc(const char* symbol, void* real_fn, cuuint64_t flags) {
  for (int i = 0; i < kCudaHookCount; ++i) {
    if (!CudaRealIsMissing(i) && LoadCudaReal(i) == real_fn) return CudaHookAddress(i);
  }
  size_t len = strlen(symbol);
  bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  int best = -1;
  for (int i = 0; i < kCudaHookCount; ++i) {
    const char* name = CudaFnName(static_cast<CudaFn>(i));
    if (strncmp(name, symbol, len) != 0) continue;
    const char* suffix = name + len;
    if (strcmp(suffix, "_ptsz") == 0) {
      if (per_thread) {  // the per-thread variant wins when asked for and it exists
        best = i;
        break;
      }
      continue;
    }
    bool versioned = suffix[0] == '_' && suffix[1] == 'v' && suffix[2] >= '0' && suffix[2] <= '9';
    if (suffix[0] != '\0' && !versioned) continue;
    if (best < 0 || strcmp(name, CudaFnName(static_cast<CudaFn>(best))) > 0) best = i;  // newest version
  }
  if (best < 0) return real_fn;
  if (CudaRealIsMissing(best)) StoreCudaReal(best, real_fn);
  return CudaHookAddress(best);
}

// Pitched allocations: reserve the size at the usual 512-byte pitch, then settle on the pitch the driver chose.
template <typename Ptr, typename Size, typename Call, typename Free>
CUresult PitchAlloc(Ptr* dptr, Size* pitch, uint64_t width, uint64_t height, Call call, Free free_fn) {
  EnsureCudaInit();
  if (!AnyMemoryLimit() || dptr == nullptr || pitch == nullptr) return call();
  int dev = CurrentDevice();
  if (!MemoryLimited(dev)) return call();
  uint64_t estimate = (width + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment * height;
  if (!Reserve(dev, estimate)) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = call();
  if (rc != CUDA_SUCCESS) {
    Unreserve(dev, estimate);
    return rc;
  }
  uint64_t actual = static_cast<uint64_t>(*pitch) * height;
  if (actual > estimate && !Reserve(dev, actual - estimate)) {
    free_fn(*dptr);
    Unreserve(dev, estimate);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (actual < estimate) Unreserve(dev, estimate - actual);
  Remember(AllocKind::kLinear, *dptr, dev, actual);
  return rc;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int flags) {
  EnsureCudaInit();
  return real::cuInit(flags);
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  EnsureCudaInit();
  CUresult rc = real::cuGetProcAddress(symbol, pfn, cudaVersion, flags);
  if (rc == CUDA_SUCCESS && symbol != nullptr && pfn != nullptr && *pfn != nullptr) {
    *pfn = HookForProc(symbol, *pfn, flags);
  }
  return rc;
}

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  EnsureCudaInit();
  CUresult rc = real::cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (rc == CUDA_SUCCESS && symbol != nullptr && pfn != nullptr && *pfn != nullptr) {
    *pfn = HookForProc(symbol, *pfn, flags);
  }
  return rc;
}

// ---------------------------------------------------------------- linear memory
CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  EnsureCudaInit();
  if (!AnyMemoryLimit() || dptr == nullptr) return real::cuMemAlloc(dptr, bytesize);
  int dev = CurrentDevice();
  uint64_t handle = 0;
  auto call = [&] {
    CUresult rc = real::cuMemAlloc(dptr, bytesize);
    if (rc == CUDA_SUCCESS) handle = *dptr;
    return rc;
  };
  return ChargedAlloc(dev, bytesize, AllocKind::kLinear, call, &handle);
}

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return LinearAlloc(dptr, bytesize, [&] { return real::cuMemAlloc_v2(dptr, bytesize); });
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  return LinearAlloc(dptr, bytesize, [&] { return real::cuMemAllocManaged(dptr, bytesize, flags); });
}

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return StreamOrderedAlloc(dptr, bytesize, nullptr, hStream,
                            [&] { return real::cuMemAllocAsync(dptr, bytesize, hStream); });
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return StreamOrderedAlloc(dptr, bytesize, nullptr, hStream,
                            [&] { return real::cuMemAllocAsync_ptsz(dptr, bytesize, hStream); });
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  return StreamOrderedAlloc(dptr, bytesize, pool, hStream,
                            [&] { return real::cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream); });
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  return StreamOrderedAlloc(dptr, bytesize, pool, hStream,
                            [&] { return real::cuMemAllocFromPoolAsync_ptsz(dptr, bytesize, pool, hStream); });
}

CUresult cuMemAllocPitch(CUdeviceptr_v1* dptr, unsigned int* pPitch, unsigned int widthInBytes, unsigned int height,
                         unsigned int elementSizeBytes) {
  return PitchAlloc(
      dptr, pPitch, widthInBytes, height,
      [&] { return real::cuMemAllocPitch(dptr, pPitch, widthInBytes, height, elementSizeBytes); },
      [](CUdeviceptr_v1 p) { real::cuMemFree(p); });
}

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t widthInBytes, size_t height,
                            unsigned int elementSizeBytes) {
  return PitchAlloc(
      dptr, pPitch, widthInBytes, height,
      [&] { return real::cuMemAllocPitch_v2(dptr, pPitch, widthInBytes, height, elementSizeBytes); },
      [](CUdeviceptr p) { real::cuMemFree_v2(p); });
}

CUresult cuMemFree(CUdeviceptr_v1 dptr) {
  return Released(AllocKind::kLinear, dptr, [&] { return real::cuMemFree(dptr); });
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return Released(AllocKind::kLinear, dptr, [&] { return real::cuMemFree_v2(dptr); });
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return Released(AllocKind::kLinear, dptr, [&] { return real::cuMemFreeAsync(dptr, hStream); });
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return Released(AllocKind::kLinear, dptr, [&] { return real::cuMemFreeAsync_ptsz(dptr, hStream); });
}

// ---------------------------------------------------------------- arrays
CUresult cuArrayCreate(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR_v1* desc) {
  uint64_t bytes = desc == nullptr ? 0 : ArrayBytes(desc->Width, desc->Height, 1, desc->Format, desc->NumChannels);
  return ArrayAlloc(pHandle, bytes, [&] { return real::cuArrayCreate(pHandle, desc); });
}

CUresult cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* desc) {
  uint64_t bytes = desc == nullptr ? 0 : ArrayBytes(desc->Width, desc->Height, 1, desc->Format, desc->NumChannels);
  return ArrayAlloc(pHandle, bytes, [&] { return real::cuArrayCreate_v2(pHandle, desc); });
}

CUresult cuArray3DCreate(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1* desc) {
  uint64_t bytes =
      desc == nullptr ? 0 : ArrayBytes(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels);
  return ArrayAlloc(pHandle, bytes, [&] { return real::cuArray3DCreate(pHandle, desc); });
}

CUresult cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  uint64_t bytes =
      desc == nullptr ? 0 : ArrayBytes(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels);
  return ArrayAlloc(pHandle, bytes, [&] { return real::cuArray3DCreate_v2(pHandle, desc); });
}

CUresult cuArrayDestroy(CUarray hArray) {
  return Released(AllocKind::kArray, reinterpret_cast<uint64_t>(hArray), [&] { return real::cuArrayDestroy(hArray); });
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* desc,
                                unsigned int numMipmapLevels) {
  EnsureCudaInit();
  auto call = [&] { return real::cuMipmappedArrayCreate(pHandle, desc, numMipmapLevels); };
  if (!AnyMemoryLimit() || pHandle == nullptr || desc == nullptr) return call();
  uint64_t bytes = 0;
  uint64_t w = desc->Width, h = desc->Height, d = desc->Depth;
  for (unsigned int level = 0; level < (numMipmapLevels == 0 ? 1 : numMipmapLevels) && level < 32; ++level) {
    bytes += ArrayBytes(w, h, d, desc->Format, desc->NumChannels);
    w = w > 1 ? w / 2 : 1;
    h = h > 1 ? h / 2 : h;
    d = d > 1 ? d / 2 : d;
  }
  uint64_t key = 0;
  auto wrapped = [&] {
    CUresult rc = call();
    if (rc == CUDA_SUCCESS) key = reinterpret_cast<uint64_t>(*pHandle);
    return rc;
  };
  return ChargedAlloc(CurrentDevice(), bytes, AllocKind::kMipmappedArray, wrapped, &key);
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  return Released(AllocKind::kMipmappedArray, reinterpret_cast<uint64_t>(hMipmappedArray),
                  [&] { return real::cuMipmappedArrayDestroy(hMipmappedArray); });
}

// ---------------------------------------------------------------- contexts (their own footprint)
CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return ContextCreate(pctx, dev, [&] { return real::cuCtxCreate(pctx, flags, dev); });
}

CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return ContextCreate(pctx, dev, [&] { return real::cuCtxCreate_v2(pctx, flags, dev); });
}

CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams, unsigned int flags,
                        CUdevice dev) {
  return ContextCreate(pctx, dev, [&] { return real::cuCtxCreate_v3(pctx, paramsArray, numParams, flags, dev); });
}

CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* params, unsigned int flags, CUdevice dev) {
  return ContextCreate(pctx, dev, [&] { return real::cuCtxCreate_v4(pctx, params, flags, dev); });
}

CUresult cuCtxDestroy(CUcontext ctx) {
  return Released(AllocKind::kContext, reinterpret_cast<uint64_t>(ctx), [&] { return real::cuCtxDestroy(ctx); });
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  return Released(AllocKind::kContext, reinterpret_cast<uint64_t>(ctx), [&] { return real::cuCtxDestroy_v2(ctx); });
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  EnsureCudaInit();
  if (!RetainPrimaryContextCharge(dev)) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = real::cuDevicePrimaryCtxRetain(pctx, dev);
  if (rc != CUDA_SUCCESS) UndoPrimaryContextCharge(dev);
  return rc;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  EnsureCudaInit();
  CUresult rc = real::cuDevicePrimaryCtxRelease(dev);
  if (rc == CUDA_SUCCESS) ReleasePrimaryContextCharge(dev);
  return rc;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  EnsureCudaInit();
  CUresult rc = real::cuDevicePrimaryCtxRelease_v2(dev);
  if (rc == CUDA_SUCCESS) ReleasePrimaryContextCharge(dev);
  return rc;
}

// ---------------------------------------------------------------- virtualised queries
CUresult cuMemGetInfo(unsigned int* free, unsigned int* total) {
  EnsureCudaInit();
  CUresult rc = real::cuMemGetInfo(free, total);
  VirtualiseMemInfo(rc, free, total);
  return rc;
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  EnsureCudaInit();
  CUresult rc = real::cuMemGetInfo_v2(free, total);
  VirtualiseMemInfo(rc, free, total);
  return rc;
}

CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) {
  EnsureCudaInit();
  CUresult rc = real::cuDeviceTotalMem(bytes, dev);
  if (rc == CUDA_SUCCESS && bytes != nullptr && MemoryLimited(dev) && LimitBytes(dev) < *bytes) {
    *bytes = static_cast<unsigned int>(LimitBytes(dev));
  }
  return rc;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  EnsureCudaInit();
  CUresult rc = real::cuDeviceTotalMem_v2(bytes, dev);
  if (rc == CUDA_SUCCESS && bytes != nullptr && MemoryLimited(dev) && LimitBytes(dev) < *bytes) {
    *bytes = LimitBytes(dev);
  }
  return rc;
}

// ---------------------------------------------------------------- launches (compute limit)
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  LaunchGate(Blocks(gridDimX, gridDimY, gridDimZ));
  return real::cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                              kernelParams, extra);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                             unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                             unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  LaunchGate(Blocks(gridDimX, gridDimY, gridDimZ));
  return real::cuLaunchKernel_ptsz(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                                   hStream, kernelParams, extra);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra) {
  LaunchGate(config == nullptr ? 1 : Blocks(config->gridDimX, config->gridDimY, config->gridDimZ));
  return real::cuLaunchKernelEx(config, f, kernelParams, extra);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra) {
  LaunchGate(config == nullptr ? 1 : Blocks(config->gridDimX, config->gridDimY, config->gridDimZ));
  return real::cuLaunchKernelEx_ptsz(config, f, kernelParams, extra);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                   unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                   unsigned int sharedMemBytes, CUstream hStream, void** kernelParams) {
  LaunchGate(Blocks(gridDimX, gridDimY, gridDimZ));
  return real::cuLaunchCooperativeKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                                         sharedMemBytes, hStream, kernelParams);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                        void** kernelParams) {
  LaunchGate(Blocks(gridDimX, gridDimY, gridDimZ));
  return real::cuLaunchCooperativeKernel_ptsz(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                                              sharedMemBytes, hStream, kernelParams);
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  LaunchGate(kGraphLaunchCost);
  return real::cuGraphLaunch(hGraphExec, hStream);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  LaunchGate(kGraphLaunchCost);
  return real::cuGraphLaunch_ptsz(hGraphExec, hStream);
}

}  // extern "C"
