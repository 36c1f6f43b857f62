// The fake CUDA driver (libcuda.so.1) used by the CPU-only tests and the benchmark: devices from
// XPOOL_FAKE_DEVICES, contexts, streams, a no-op kernel launch, cuGetProcAddress, and memory that is tracked per
// device so that over-allocating the *physical* device fails too (no memory is really allocated). Linked
// -Wl,-Bsymbolic so that, like the real driver, its internal references never bind to the preloaded hooks.
// Thread-safe (one mutex around the bookkeeping; launches only bump an atomic counter).
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "vgpu/cuda_abi.h"
#include "vgpu/fake_driver/fake_devices.h"
#include "vgpu/fake_driver/fake_memory.h"
#include "vgpu/hook_list.h"
#include "vgpu/internal/array_bytes.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

// Every entry point the interposer governs or uses; some are defined in fake_memory.cc.
#define FAKE_X(name, params, args) FAKE_EXPORT CUresult name params;
XPOOL_CUDA_HOOKS(FAKE_X)
XPOOL_CUDA_REAL_ONLY(FAKE_X)
#undef FAKE_X
FAKE_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value);
FAKE_EXPORT CUresult cuGraphCreate(CUgraph* graph, unsigned int flags);
FAKE_EXPORT CUresult cuGraphDestroy(CUgraph graph);
FAKE_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t count,
                                            CUDA_MEM_ALLOC_NODE_PARAMS* params);
FAKE_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t count,
                                              CUgraph child);
FAKE_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr dptr);
FAKE_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                         unsigned long long flags);
FAKE_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size);

namespace xpool::vgpu::fake {
CUresult LaunchGraphMemory(CUgraphExec exec);
}

namespace {

using xpool::vgpu::fake::Devices;
using xpool::vgpu::fake::kMaxFakeDevices;
using xpool::vgpu::internal::ArrayBytes;

struct CUctx_st_fake {
  int device;
  bool primary;
};

struct Allocation {
  int device;
  uint64_t bytes;
};

struct State {
  std::mutex mutex;
  bool initialised = false;
  uint64_t used[kMaxFakeDevices] = {};
  int primary_refs[kMaxFakeDevices] = {};
  CUctx_st_fake primary[kMaxFakeDevices];
  std::unordered_map<uint64_t, Allocation> allocations;  // device pointers, VMM handles, arrays
  uint64_t next_address = 0x7f0000000000ull;
  uint64_t next_address_v1 = 0x10000000ull;
  uint64_t next_handle = 1;
};

State& S() {
  static State* state = new State();
  return *state;
}

std::atomic<uint64_t> g_launches{0};
std::atomic<uint64_t> g_blocks{0};  // thread blocks launched (the fake NVML turns them into utilisation)
thread_local CUctx_st_fake* t_current = nullptr;

CUresult CheckInit() { return S().initialised ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED; }

int CurrentDevice() { return t_current != nullptr ? t_current->device : -1; }

// Reserves `bytes` of the physical device and returns a fresh address (or handle) for them.
CUresult Allocate(int dev, uint64_t bytes, bool v1, bool handle, unsigned long long* out) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (dev >= Devices().count) return CUDA_ERROR_INVALID_DEVICE;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > Devices().bytes - s.used[dev]) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t key;
  if (handle) {
    key = s.next_handle++;
  } else if (v1) {
    if (bytes > 0x70000000ull - s.next_address_v1) return CUDA_ERROR_OUT_OF_MEMORY;
    key = s.next_address_v1;
    s.next_address_v1 += (bytes + 511) / 512 * 512;
  } else {
    key = s.next_address;
    s.next_address += (bytes + 511) / 512 * 512 + 512;
  }
  s.used[dev] += bytes;
  s.allocations[key] = Allocation{dev, bytes};
  *out = key;
  return CUDA_SUCCESS;
}

CUresult Free(uint64_t key) {
  State& s = S();
  std::unique_lock<std::mutex> lock(s.mutex);
  if (!s.initialised) return CUDA_ERROR_NOT_INITIALIZED;
  auto it = s.allocations.find(key);
  if (it == s.allocations.end()) {
    lock.unlock();
    return xpool::vgpu::fake::FreePoolAllocation(key) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  }
  s.used[it->second.device] -= it->second.bytes;
  s.allocations.erase(it);
  return CUDA_SUCCESS;
}

CUresult CreateArray(uint64_t w, uint64_t h, uint64_t d, CUarray_format format, unsigned channels,
                     unsigned long long* key) {
  uint64_t bytes = ArrayBytes(w, h, d, format, channels);
  return Allocate(CurrentDevice(), bytes, false, false, key);
}

CUresult CreateContext(CUcontext* pctx, CUdevice dev) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= Devices().count) return CUDA_ERROR_INVALID_DEVICE;
  auto* ctx = new CUctx_st_fake{dev, false};
  t_current = ctx;
  *pctx = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}

CUresult DestroyContext(CUcontext ctx) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  auto* fake = reinterpret_cast<CUctx_st_fake*>(ctx);
  if (fake == nullptr || fake->primary) return CUDA_ERROR_INVALID_CONTEXT;
  if (t_current == fake) t_current = nullptr;
  delete fake;
  return CUDA_SUCCESS;
}

CUresult PrimaryRelease(CUdevice dev) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= Devices().count) return CUDA_ERROR_INVALID_DEVICE;
  if (s.primary_refs[dev] == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --s.primary_refs[dev];
  return CUDA_SUCCESS;
}

CUresult MemInfo(uint64_t* free, uint64_t* total) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.initialised) return CUDA_ERROR_NOT_INITIALIZED;
  int dev = CurrentDevice();
  if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
  *total = Devices().bytes;
  *free = Devices().bytes - s.used[dev];
  return CUDA_SUCCESS;
}

CUresult Launch(CUfunction f, uint64_t blocks) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  g_launches.fetch_add(1, std::memory_order_relaxed);
  g_blocks.fetch_add(blocks, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

}  // namespace

namespace xpool::vgpu::fake {

bool TakePhysical(int dev, uint64_t bytes) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (dev < 0 || dev >= Devices().count || bytes > Devices().bytes - s.used[dev]) return false;
  s.used[dev] += bytes;
  return true;
}

void GivePhysical(int dev, uint64_t bytes) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (dev < 0 || dev >= kMaxFakeDevices) return;
  s.used[dev] -= bytes < s.used[dev] ? bytes : s.used[dev];
}

bool Initialised() {
  std::lock_guard<std::mutex> lock(S().mutex);
  return S().initialised;
}

int CurrentDevice() { return ::CurrentDevice(); }

uint64_t NewAddress(uint64_t bytes) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  uint64_t address = s.next_address;
  s.next_address += (bytes + 511) / 512 * 512 + 512;
  return address;
}

bool LinearAllocation(uint64_t address, uint64_t* bytes, int* dev) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocations.find(address);
  if (it == s.allocations.end()) return false;
  *bytes = it->second.bytes;
  *dev = it->second.device;
  return true;
}

}  // namespace xpool::vgpu::fake

// ---------------------------------------------------------------- test-only introspection
FAKE_EXPORT uint64_t xpoolFakeLaunchCount() { return g_launches.load(); }
FAKE_EXPORT uint64_t xpoolFakeLaunchedBlocks() { return g_blocks.load(); }
FAKE_EXPORT uint64_t xpoolFakeUsedBytes(int dev) {
  std::lock_guard<std::mutex> lock(S().mutex);
  return dev >= 0 && dev < kMaxFakeDevices ? S().used[dev] : 0;
}

// ---------------------------------------------------------------- initialisation, devices, contexts
FAKE_EXPORT CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(S().mutex);
  S().initialised = true;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = 13000;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetCount(int* count) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = Devices().count;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= Devices().count) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= Devices().count) return CUDA_ERROR_INVALID_DEVICE;
  strncpy(name, "xpool fake GPU", static_cast<size_t>(len) - 1);
  name[len - 1] = '\0';
  return CUDA_SUCCESS;
}

// Enough attributes and module calls for tests/gpu/gpu_check.cc to run against the fake (its kernels do nothing).
FAKE_EXPORT CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice dev) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= Devices().count) return CUDA_ERROR_INVALID_DEVICE;
  *value = attribute == 16 ? 132 : attribute == 13 ? 1980000 : 0;  // multiprocessors, clock (kHz)
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleLoadData(void** module, const void* image) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  static int fake_module;
  *module = &fake_module;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction* function, void* module, const char* name) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (function == nullptr || module == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  static int fake_function;
  *function = reinterpret_cast<CUfunction>(&fake_function);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= Devices().count) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = Devices().bytes;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) {
  size_t total = 0;
  CUresult rc = cuDeviceTotalMem_v2(&total, dev);
  if (rc == CUDA_SUCCESS) *bytes = total > 0xffffffffull ? 0xffffffffu : static_cast<unsigned int>(total);
  return rc;
}

FAKE_EXPORT CUresult cuCtxCreate(CUcontext* pctx, unsigned int, CUdevice dev) { return CreateContext(pctx, dev); }
FAKE_EXPORT CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int, CUdevice dev) { return CreateContext(pctx, dev); }
FAKE_EXPORT CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam*, int, unsigned int, CUdevice dev) {
  return CreateContext(pctx, dev);
}
FAKE_EXPORT CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams*, unsigned int, CUdevice dev) {
  return CreateContext(pctx, dev);
}
FAKE_EXPORT CUresult cuCtxDestroy(CUcontext ctx) { return DestroyContext(ctx); }
FAKE_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) { return DestroyContext(ctx); }

FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  t_current = reinterpret_cast<CUctx_st_fake*>(ctx);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext* pctx) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pctx = reinterpret_cast<CUcontext>(t_current);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *device = t_current->device;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxSynchronize(void) {
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  xpool::vgpu::fake::SynchronisePools();
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= Devices().count) return CUDA_ERROR_INVALID_DEVICE;
  s.primary[dev] = CUctx_st_fake{dev, true};
  ++s.primary_refs[dev];
  *pctx = reinterpret_cast<CUcontext>(&s.primary[dev]);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return PrimaryRelease(dev); }
FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return PrimaryRelease(dev); }

FAKE_EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned int) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (stream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  static std::atomic<uintptr_t> next{0x1000};
  *stream = reinterpret_cast<CUstream>(next.fetch_add(16));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream) { return CheckInit(); }
FAKE_EXPORT CUresult cuStreamSynchronize(CUstream) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  xpool::vgpu::fake::SynchronisePools();
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream stream) { return cuStreamSynchronize(stream); }

// ---------------------------------------------------------------- memory
FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return Allocate(CurrentDevice(), bytesize, false, false, dptr);
}

FAKE_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned long long key = 0;
  CUresult rc = Allocate(CurrentDevice(), bytesize, true, false, &key);
  if (rc == CUDA_SUCCESS) *dptr = static_cast<CUdeviceptr_v1>(key);
  return rc;
}

FAKE_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height, unsigned int) {
  if (dptr == nullptr || pitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pitch = (width + 511) / 512 * 512;
  return Allocate(CurrentDevice(), *pitch * height, false, false, dptr);
}

FAKE_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1* dptr, unsigned int* pitch, unsigned int width, unsigned int height,
                                     unsigned int) {
  if (dptr == nullptr || pitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pitch = (width + 511) / 512 * 512;
  unsigned long long key = 0;
  CUresult rc = Allocate(CurrentDevice(), static_cast<uint64_t>(*pitch) * height, true, false, &key);
  if (rc == CUDA_SUCCESS) *dptr = static_cast<CUdeviceptr_v1>(key);
  return rc;
}

FAKE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  if (dptr == nullptr || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return Allocate(CurrentDevice(), bytesize, false, false, dptr);
}

FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) { return Free(dptr); }
FAKE_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr) { return Free(dptr); }
FAKE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream) { return Free(dptr); }
FAKE_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream) { return Free(dptr); }

FAKE_EXPORT CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t f = 0, t = 0;
  CUresult rc = MemInfo(&f, &t);
  if (rc == CUDA_SUCCESS) {
    *free = f;
    *total = t;
  }
  return rc;
}

FAKE_EXPORT CUresult cuMemGetInfo(unsigned int* free, unsigned int* total) {
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t f = 0, t = 0;
  CUresult rc = MemInfo(&f, &t);
  if (rc == CUDA_SUCCESS) {
    *free = f > 0xffffffffull ? 0xffffffffu : static_cast<unsigned int>(f);
    *total = t > 0xffffffffull ? 0xffffffffu : static_cast<unsigned int>(t);
  }
  return rc;
}

FAKE_EXPORT CUresult cuArrayCreate_v2(CUarray* handle, const CUDA_ARRAY_DESCRIPTOR* d) {
  if (handle == nullptr || d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned long long key = 0;
  CUresult rc = CreateArray(d->Width, d->Height, 1, d->Format, d->NumChannels, &key);
  if (rc == CUDA_SUCCESS) *handle = reinterpret_cast<CUarray>(key);
  return rc;
}

FAKE_EXPORT CUresult cuArrayCreate(CUarray* handle, const CUDA_ARRAY_DESCRIPTOR_v1* d) {
  if (handle == nullptr || d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned long long key = 0;
  CUresult rc = CreateArray(d->Width, d->Height, 1, d->Format, d->NumChannels, &key);
  if (rc == CUDA_SUCCESS) *handle = reinterpret_cast<CUarray>(key);
  return rc;
}

FAKE_EXPORT CUresult cuArray3DCreate_v2(CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  if (handle == nullptr || d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned long long key = 0;
  CUresult rc = CreateArray(d->Width, d->Height, d->Depth, d->Format, d->NumChannels, &key);
  if (rc == CUDA_SUCCESS) *handle = reinterpret_cast<CUarray>(key);
  return rc;
}

FAKE_EXPORT CUresult cuArray3DCreate(CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR_v1* d) {
  if (handle == nullptr || d == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned long long key = 0;
  CUresult rc = CreateArray(d->Width, d->Height, d->Depth, d->Format, d->NumChannels, &key);
  if (rc == CUDA_SUCCESS) *handle = reinterpret_cast<CUarray>(key);
  return rc;
}

FAKE_EXPORT CUresult cuArrayDestroy(CUarray handle) { return Free(reinterpret_cast<uint64_t>(handle)); }

FAKE_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray* handle, const CUDA_ARRAY3D_DESCRIPTOR* d,
                                            unsigned int levels) {
  if (handle == nullptr || d == nullptr || levels == 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t bytes = 0;
  uint64_t w = d->Width, h = d->Height, z = d->Depth;
  for (unsigned int level = 0; level < levels && level < 32; ++level) {
    bytes += ArrayBytes(w, h, z, d->Format, d->NumChannels);
    w = w > 1 ? w / 2 : 1;
    h = h > 1 ? h / 2 : h;
    z = z > 1 ? z / 2 : z;
  }
  unsigned long long key = 0;
  CUresult rc = Allocate(CurrentDevice(), bytes, false, false, &key);
  if (rc == CUDA_SUCCESS) *handle = reinterpret_cast<CUmipmappedArray>(key);
  return rc;
}

FAKE_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray handle) {
  return Free(reinterpret_cast<uint64_t>(handle));
}

// ---------------------------------------------------------------- launches (no-ops)
FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int,
                                    unsigned int, unsigned int, unsigned int, CUstream, void**, void**) {
  return Launch(f, static_cast<uint64_t>(gx) * gy * gz);
}
FAKE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int,
                                         unsigned int, unsigned int, unsigned int, CUstream, void**, void**) {
  return Launch(f, static_cast<uint64_t>(gx) * gy * gz);
}
FAKE_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void**, void**) {
  return c == nullptr ? CUDA_ERROR_INVALID_VALUE
                      : Launch(f, static_cast<uint64_t>(c->gridDimX) * c->gridDimY * c->gridDimZ);
}
FAKE_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* c, CUfunction f, void**, void**) {
  return c == nullptr ? CUDA_ERROR_INVALID_VALUE
                      : Launch(f, static_cast<uint64_t>(c->gridDimX) * c->gridDimY * c->gridDimZ);
}
FAKE_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                               unsigned int, unsigned int, unsigned int, unsigned int, CUstream,
                                               void**) {
  return Launch(f, static_cast<uint64_t>(gx) * gy * gz);
}
FAKE_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                                    unsigned int, unsigned int, unsigned int, unsigned int, CUstream,
                                                    void**) {
  return Launch(f, static_cast<uint64_t>(gx) * gy * gz);
}
FAKE_EXPORT CUresult cuGraphLaunch(CUgraphExec graph, CUstream) {
  if (CUresult rc = Launch(reinterpret_cast<CUfunction>(graph), 1024); rc != CUDA_SUCCESS) return rc;
  return xpool::vgpu::fake::LaunchGraphMemory(graph);
}
FAKE_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec graph, CUstream stream) { return cuGraphLaunch(graph, stream); }

// ---------------------------------------------------------------- cuGetProcAddress
FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult* status);
FAKE_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, nullptr);
}

namespace {
// The real driver may answer cuGetProcAddress with an entry point it does not export by name. The fake does so for
// cuMemAllocAsync_ptsz, so the tests cover the interposer's by-name fallback.
CUresult UnexportedMemAllocAsyncPtsz(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  return cuMemAllocAsync_ptsz(dptr, bytesize, stream);
}

struct ProcEntry {
  const char* name;
  void* fn;
};
#define FAKE_ENTRY(name) \
  { #name, reinterpret_cast < void*>(&name) }
const ProcEntry kProcTable[] = {
    FAKE_ENTRY(cuInit),
    FAKE_ENTRY(cuDriverGetVersion),
    FAKE_ENTRY(cuDeviceGetCount),
    FAKE_ENTRY(cuDeviceGet),
    FAKE_ENTRY(cuDeviceGetName),
    FAKE_ENTRY(cuDeviceTotalMem),
    FAKE_ENTRY(cuDeviceTotalMem_v2),
    FAKE_ENTRY(cuCtxCreate),
    FAKE_ENTRY(cuCtxCreate_v2),
    FAKE_ENTRY(cuCtxCreate_v3),
    FAKE_ENTRY(cuCtxCreate_v4),
    FAKE_ENTRY(cuCtxDestroy),
    FAKE_ENTRY(cuCtxDestroy_v2),
    FAKE_ENTRY(cuCtxSetCurrent),
    FAKE_ENTRY(cuCtxGetCurrent),
    FAKE_ENTRY(cuCtxGetDevice),
    FAKE_ENTRY(cuCtxSynchronize),
    FAKE_ENTRY(cuDevicePrimaryCtxRetain),
    FAKE_ENTRY(cuDevicePrimaryCtxRelease),
    FAKE_ENTRY(cuDevicePrimaryCtxRelease_v2),
    FAKE_ENTRY(cuStreamCreate),
    FAKE_ENTRY(cuStreamDestroy_v2),
    FAKE_ENTRY(cuStreamSynchronize),
    FAKE_ENTRY(cuMemAlloc),
    FAKE_ENTRY(cuMemAlloc_v2),
    FAKE_ENTRY(cuMemAllocPitch),
    FAKE_ENTRY(cuMemAllocPitch_v2),
    FAKE_ENTRY(cuMemAllocManaged),
    FAKE_ENTRY(cuMemAllocAsync),
    {"cuMemAllocAsync_ptsz", reinterpret_cast<void*>(&UnexportedMemAllocAsyncPtsz)},
    FAKE_ENTRY(cuMemAllocFromPoolAsync),
    FAKE_ENTRY(cuMemAllocFromPoolAsync_ptsz),
    FAKE_ENTRY(cuMemFree),
    FAKE_ENTRY(cuMemFree_v2),
    FAKE_ENTRY(cuMemFreeAsync),
    FAKE_ENTRY(cuMemFreeAsync_ptsz),
    FAKE_ENTRY(cuMemGetInfo),
    FAKE_ENTRY(cuMemGetInfo_v2),
    FAKE_ENTRY(cuMemCreate),
    FAKE_ENTRY(cuMemRelease),
    FAKE_ENTRY(cuMemMap),
    FAKE_ENTRY(cuMemUnmap),
    FAKE_ENTRY(cuMemAddressReserve),
    FAKE_ENTRY(cuMemAddressFree),
    FAKE_ENTRY(cuMemRetainAllocationHandle),
    FAKE_ENTRY(cuMemExportToShareableHandle),
    FAKE_ENTRY(cuMemImportFromShareableHandle),
    FAKE_ENTRY(cuMemGetAddressRange_v2),
    FAKE_ENTRY(cuDeviceGetMemPool),
    FAKE_ENTRY(cuMemPoolCreate),
    FAKE_ENTRY(cuMemPoolDestroy),
    FAKE_ENTRY(cuMemPoolTrimTo),
    FAKE_ENTRY(cuMemPoolSetAttribute),
    FAKE_ENTRY(cuMemPoolGetAttribute),
    FAKE_ENTRY(cuStreamIsCapturing),
    FAKE_ENTRY(cuStreamSynchronize_ptsz),
    FAKE_ENTRY(cuGraphCreate),
    FAKE_ENTRY(cuGraphDestroy),
    FAKE_ENTRY(cuGraphAddMemAllocNode),
    FAKE_ENTRY(cuGraphAddChildGraphNode),
    FAKE_ENTRY(cuGraphGetNodes),
    FAKE_ENTRY(cuGraphNodeGetType),
    FAKE_ENTRY(cuGraphMemAllocNodeGetParams),
    FAKE_ENTRY(cuGraphChildGraphNodeGetGraph),
    FAKE_ENTRY(cuGraphInstantiateWithFlags),
    FAKE_ENTRY(cuGraphInstantiate),
    FAKE_ENTRY(cuGraphInstantiate_v2),
    FAKE_ENTRY(cuGraphInstantiateWithParams),
    FAKE_ENTRY(cuGraphInstantiateWithParams_ptsz),
    FAKE_ENTRY(cuGraphExecDestroy),
    FAKE_ENTRY(cuDeviceGraphMemTrim),
    FAKE_ENTRY(cuDeviceGetGraphMemAttribute),
    FAKE_ENTRY(cuIpcGetMemHandle),
    FAKE_ENTRY(cuIpcOpenMemHandle),
    FAKE_ENTRY(cuIpcOpenMemHandle_v2),
    FAKE_ENTRY(cuIpcCloseMemHandle),
    FAKE_ENTRY(cuArrayCreate),
    FAKE_ENTRY(cuArrayCreate_v2),
    FAKE_ENTRY(cuArray3DCreate),
    FAKE_ENTRY(cuArray3DCreate_v2),
    FAKE_ENTRY(cuArrayDestroy),
    FAKE_ENTRY(cuMipmappedArrayCreate),
    FAKE_ENTRY(cuMipmappedArrayDestroy),
    FAKE_ENTRY(cuLaunchKernel),
    FAKE_ENTRY(cuLaunchKernel_ptsz),
    FAKE_ENTRY(cuLaunchKernelEx),
    FAKE_ENTRY(cuLaunchKernelEx_ptsz),
    FAKE_ENTRY(cuLaunchCooperativeKernel),
    FAKE_ENTRY(cuLaunchCooperativeKernel_ptsz),
    FAKE_ENTRY(cuGraphLaunch),
    FAKE_ENTRY(cuGraphLaunch_ptsz),
    FAKE_ENTRY(cuGetProcAddress),
    FAKE_ENTRY(cuGetProcAddress_v2),
    FAKE_ENTRY(cuDeviceGetAttribute),
    FAKE_ENTRY(cuModuleLoadData),
    FAKE_ENTRY(cuModuleGetFunction),
};
#undef FAKE_ENTRY

void* FindProc(const char* name) {
  for (const ProcEntry& entry : kProcTable) {
    if (strcmp(entry.name, name) == 0) return entry.fn;
  }
  return nullptr;
}
}  // namespace

// Test-only: the fake's own entry point for `name` (never a hook), so a benchmark can call the driver directly
// in the same process as through the interposer.
FAKE_EXPORT void* xpoolFakeEntryPoint(const char* name) { return name != nullptr ? FindProc(name) : nullptr; }

// Like the real driver, the caller names the base symbol ("cuMemAlloc") and gets the newest variant; with
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the _ptsz one where it exists.
FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  char name[128];
  void* fn = nullptr;
  if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0) {
    snprintf(name, sizeof(name), "%s_ptsz", symbol);
    fn = FindProc(name);
  }
  for (int version = 4; fn == nullptr && version >= 2; --version) {
    snprintf(name, sizeof(name), "%s_v%d", symbol, version);
    fn = FindProc(name);
  }
  if (fn == nullptr) fn = FindProc(symbol);
  *pfn = fn;
  if (status != nullptr) *status = fn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return fn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
