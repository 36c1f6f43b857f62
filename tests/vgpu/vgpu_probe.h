// Shared by the probe program's files (vgpu_probe.cc, vgpu_probe_memory.cc): the driver entry points the probe
// resolves, its failure counter and CHECK macro, and the scenarios each file defines. Test-only; single-threaded
// except where a scenario says otherwise.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vgpu/cuda_abi.h"
#include "vgpu/hook_list.h"

#define PROBE_EXTRA_CUDA(X)                                                                                    \
  X(cuDeviceGet, (CUdevice * device, int ordinal), (device, ordinal))                                          \
  X(cuCtxSetCurrent, (CUcontext ctx), (ctx))                                                                   \
  X(cuDeviceGetMemPool, (CUmemoryPool * pool, CUdevice dev), (pool, dev))                                      \
  X(cuMemPoolSetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void* value), (pool, attr, value))    \
  X(cuGraphCreate, (CUgraph * graph, unsigned int flags), (graph, flags))                                      \
  X(cuGraphDestroy, (CUgraph graph), (graph))                                                                  \
  X(cuGraphAddMemAllocNode,                                                                                    \
    (CUgraphNode * node, CUgraph graph, const CUgraphNode* deps, size_t count, CUDA_MEM_ALLOC_NODE_PARAMS* p), \
    (node, graph, deps, count, p))                                                                             \
  X(cuGraphAddChildGraphNode,                                                                                  \
    (CUgraphNode * node, CUgraph graph, const CUgraphNode* deps, size_t count, CUgraph child),                 \
    (node, graph, deps, count, child))                                                                         \
  X(cuIpcGetMemHandle, (CUipcMemHandle * handle, CUdeviceptr dptr), (handle, dptr))                            \
  X(cuMemAddressReserve,                                                                                       \
    (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags),            \
    (ptr, size, alignment, addr, flags))                                                                       \
  X(cuCtxGetDevice, (CUdevice * device), (device))

#ifdef XPOOL_PROBE_LINKED
extern "C" {
#define PROBE_X(name, params, args) CUresult name params;
XPOOL_CUDA_HOOKS(PROBE_X)
PROBE_EXTRA_CUDA(PROBE_X)
#undef PROBE_X
}
#endif

namespace probe {

struct Api {
#define PROBE_X(name, params, args) CUresult(*name) params = nullptr;
  XPOOL_CUDA_HOOKS(PROBE_X)
  PROBE_EXTRA_CUDA(PROBE_X)
#undef PROBE_X
#define PROBE_X(name, params, args) nvmlReturn_t(*name) params = nullptr;
  XPOOL_NVML_HOOKS(PROBE_X)
  XPOOL_NVML_REAL_ONLY(PROBE_X)
#undef PROBE_X
  void* cuda = nullptr;
  uint64_t (*fake_launches)() = nullptr;
  uint64_t (*fake_used)(int) = nullptr;  // the fake device's physical memory in use
  int ours = 0;                          // governed entry points that resolved into libxpool-vgpu.so
  int total = 0;                         // governed entry points that resolved at all
};

inline int g_failures = 0;

#define CHECK(cond, ...)                                     \
  do {                                                       \
    if (!(cond)) {                                           \
      ++g_failures;                                          \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      printf(__VA_ARGS__);                                   \
      printf("\n");                                          \
    }                                                        \
  } while (0)

inline constexpr uint64_t kMiB = 1024ull * 1024ull;

// Retains device `dev`'s primary context and makes it current.
bool Setup(Api& api, int dev);
size_t FreeBytes(Api& api);

// vgpu_probe_memory.cc: memory that outlives one allocate/free pair.
int ScenarioPools(Api& api, uint64_t limit_mib);
int ScenarioGraphs(Api& api, uint64_t limit_mib);
int ScenarioIpcExport(Api& api, uint64_t mib);
int ScenarioIpcImport(Api& api, uint64_t limit_mib, const char* handle_hex, uint64_t exported_mib);
int ScenarioVmm(Api& api, uint64_t limit_mib);

}  // namespace probe
