// Probe scenarios for memory that outlives one allocate/free pair (see vgpu_probe.cc for how the probe runs): each
// tries to exceed the task's limit through one path the driver offers, and checks both what the interposer answers
// and that the fake device's physical memory never went past the limit.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>

#include "vgpu_probe.h"

namespace probe {
namespace {

// Physical memory of fake device 0 stays within the limit (the fake tells the truth the interposer must keep to).
void CheckPhysical(Api& api, uint64_t limit, const char* when) {
  if (api.fake_used == nullptr) return;
  CHECK(api.fake_used(0) <= limit, "%s: the device holds %llu bytes, over the limit %llu", when,
        static_cast<unsigned long long>(api.fake_used(0)), static_cast<unsigned long long>(limit));
}

CUresult AllocAsync(Api& api, uint64_t bytes, CUdeviceptr* p) { return api.cuMemAllocAsync(p, bytes, nullptr); }

CUmemAllocationProp Prop(CUmemLocationType type, int id) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = type;
  prop.location.id = id;
  return prop;
}

CUresult Create(Api& api, uint64_t bytes, const CUmemAllocationProp& prop, CUmemGenericAllocationHandle* h) {
  return api.cuMemCreate(h, bytes, &prop, 0);
}

CUresult AddAllocNode(Api& api, CUgraph graph, uint64_t bytes) {
  CUDA_MEM_ALLOC_NODE_PARAMS params;
  memset(&params, 0, sizeof(params));
  params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  params.poolProps.location.id = 0;
  params.bytesize = bytes;
  CUgraphNode node = nullptr;
  return api.cuGraphAddMemAllocNode(&node, graph, nullptr, 0, &params);
}

CUresult MallocFree(Api& api, uint64_t bytes) {
  CUdeviceptr p = 0;
  CUresult rc = api.cuMemAlloc_v2(&p, bytes);
  if (rc == CUDA_SUCCESS) api.cuMemFree_v2(p);
  return rc;
}

}  // namespace

int ScenarioPools(Api& api, uint64_t limit_mib) {
  if (!Setup(api, 0)) return 1;
  const uint64_t limit = limit_mib * kMiB, half = limit / 2;
  CUmemoryPool pool = nullptr;
  CHECK(api.cuDeviceGetMemPool(&pool, 0) == CUDA_SUCCESS, "cuDeviceGetMemPool");
  cuuint64_t keep_all = UINT64_MAX;
  CHECK(api.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all) == CUDA_SUCCESS, "threshold");

  // The pool keeps what it handed out, freed and synchronised: that memory is still the task's.
  CUdeviceptr a = 0, b = 0;
  CHECK(AllocAsync(api, half, &a) == CUDA_SUCCESS && AllocAsync(api, half, &b) == CUDA_SUCCESS, "async allocations");
  CHECK(api.cuMemFreeAsync(a, nullptr) == CUDA_SUCCESS && api.cuMemFreeAsync(b, nullptr) == CUDA_SUCCESS, "frees");
  CHECK(api.cuStreamSynchronize(nullptr) == CUDA_SUCCESS, "synchronize");
  CUresult rc = MallocFree(api, half);
  CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc beside a pool that keeps the limit -> %d", rc);
  CHECK(FreeBytes(api) == 0, "free beside a full pool is %zu", FreeBytes(api));
  CheckPhysical(api, limit, "pool keeps its memory");

  // The pool's own allocations reuse what it keeps.
  CHECK(AllocAsync(api, half, &a) == CUDA_SUCCESS, "a pool allocation reusing kept memory");
  CHECK(api.cuMemFreeAsync(a, nullptr) == CUDA_SUCCESS, "free");

  // Trimming gives it back.
  CHECK(api.cuMemPoolTrimTo(pool, 0) == CUDA_SUCCESS, "trim");
  CHECK(FreeBytes(api) == limit, "free after a trim is %zu", FreeBytes(api));
  rc = MallocFree(api, half);
  CHECK(rc == CUDA_SUCCESS, "cuMemAlloc after a trim -> %d", rc);

  // With the default threshold (0) a synchronisation gives it back; until then the pool holds it.
  cuuint64_t keep_none = 0;
  CHECK(api.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_none) == CUDA_SUCCESS, "threshold");
  CHECK(AllocAsync(api, limit, &a) == CUDA_SUCCESS, "an allocation of the whole limit");
  CHECK(api.cuMemFreeAsync(a, nullptr) == CUDA_SUCCESS, "free");
  rc = MallocFree(api, half);
  CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc before the pool synchronised -> %d", rc);
  CheckPhysical(api, limit, "before the synchronisation");
  CHECK(api.cuCtxSynchronize() == CUDA_SUCCESS, "synchronize");
  CHECK(FreeBytes(api) == limit, "free after a synchronisation is %zu", FreeBytes(api));
  rc = MallocFree(api, limit);
  CHECK(rc == CUDA_SUCCESS, "cuMemAlloc of the limit after the synchronisation -> %d", rc);

  // The pool reserves whole granules: what the driver holds is what is charged.
  CHECK(AllocAsync(api, kMiB, &a) == CUDA_SUCCESS, "1 MiB from the pool");
  CHECK(FreeBytes(api) == limit - 2 * kMiB, "free with one 2 MiB granule in the pool is %zu", FreeBytes(api));
  api.cuMemFreeAsync(a, nullptr);
  api.cuCtxSynchronize();

  // Growth the request did not show (a whole granule for 1 MiB) that does not fit: refused, and the pool gives it
  // back at once.
  CUdeviceptr linear = 0;
  CHECK(api.cuMemAlloc_v2(&linear, limit - kMiB) == CUDA_SUCCESS, "linear allocation of all but 1 MiB");
  rc = AllocAsync(api, kMiB, &a);
  CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "1 MiB whose pool granule does not fit -> %d", rc);
  CheckPhysical(api, limit, "refused pool growth");
  api.cuMemFree_v2(linear);
  api.cuCtxSynchronize();
  CHECK(FreeBytes(api) == limit, "free after the refused growth is %zu", FreeBytes(api));

  // A pool of host memory takes nothing from the device.
  CUmemPoolProps props;
  memset(&props, 0, sizeof(props));
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_HOST;
  CUmemoryPool host = nullptr;
  CHECK(api.cuMemPoolCreate(&host, &props) == CUDA_SUCCESS, "host pool");
  rc = api.cuMemAllocFromPoolAsync(&a, 2 * limit, host, nullptr);
  CHECK(rc == CUDA_SUCCESS, "host pool allocation of twice the limit -> %d", rc);
  CHECK(FreeBytes(api) == limit, "host memory is not charged to the device: free %zu", FreeBytes(api));
  api.cuMemFreeAsync(a, nullptr);
  CHECK(api.cuMemPoolDestroy(host) == CUDA_SUCCESS, "destroy the host pool");
  CheckPhysical(api, limit, "end");
  return g_failures == 0 ? 0 : 1;
}

int ScenarioGraphs(Api& api, uint64_t limit_mib) {
  if (!Setup(api, 0)) return 1;
  const uint64_t limit = limit_mib * kMiB, most = limit / 4 * 3;
  CUgraph graph = nullptr;
  CHECK(api.cuGraphCreate(&graph, 0) == CUDA_SUCCESS && AddAllocNode(api, graph, most) == CUDA_SUCCESS, "graph");

  // An instantiated graph is charged what its allocation nodes need.
  CUgraphExec exec = nullptr;
  CUresult rc = api.cuGraphInstantiateWithFlags(&exec, graph, 0);
  CHECK(rc == CUDA_SUCCESS, "instantiate -> %d", rc);
  rc = MallocFree(api, limit / 2);
  CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc beside an instantiated graph -> %d", rc);
  CHECK(api.cuGraphLaunch(exec, nullptr) == CUDA_SUCCESS, "launch");
  CheckPhysical(api, limit, "after the launch");

  // The device's graph pool keeps the memory after the exec is gone, until it is trimmed.
  CHECK(api.cuGraphExecDestroy(exec) == CUDA_SUCCESS, "destroy the exec");
  rc = MallocFree(api, limit / 2);
  CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc beside the graph pool's memory -> %d", rc);
  CHECK(api.cuDeviceGraphMemTrim(0) == CUDA_SUCCESS, "trim");
  rc = MallocFree(api, limit / 2);
  CHECK(rc == CUDA_SUCCESS, "cuMemAlloc after the trim -> %d", rc);

  // Two graphs that each fit but not together: the second cannot be instantiated, in any variant.
  CUgraphExec first = nullptr, second = nullptr;
  CHECK(api.cuGraphInstantiateWithFlags(&first, graph, 0) == CUDA_SUCCESS, "first instantiation");
  CUgraph other = nullptr;
  CHECK(api.cuGraphCreate(&other, 0) == CUDA_SUCCESS && AddAllocNode(api, other, most) == CUDA_SUCCESS, "graph");
  rc = api.cuGraphInstantiateWithFlags(&second, other, 0);
  CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "cuGraphInstantiateWithFlags past the limit -> %d", rc);
  if (api.cuGraphInstantiate_v2 != nullptr) {
    rc = api.cuGraphInstantiate_v2(&second, other, nullptr, nullptr, 0);
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "cuGraphInstantiate_v2 past the limit -> %d", rc);
  }
  if (api.cuGraphInstantiateWithParams != nullptr) {
    CUDA_GRAPH_INSTANTIATE_PARAMS params;
    memset(&params, 0, sizeof(params));
    rc = api.cuGraphInstantiateWithParams(&second, other, &params);
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "cuGraphInstantiateWithParams past the limit -> %d", rc);
  }
  CHECK(api.cuGraphExecDestroy(first) == CUDA_SUCCESS, "destroy the first");
  rc = api.cuGraphInstantiateWithFlags(&second, other, 0);
  CHECK(rc == CUDA_SUCCESS, "the second once the first is gone -> %d", rc);
  CHECK(api.cuGraphLaunch(second, nullptr) == CUDA_SUCCESS, "launch the second");
  CheckPhysical(api, limit, "after the second launch");
  api.cuGraphExecDestroy(second);
  api.cuDeviceGraphMemTrim(0);

  // Allocation nodes inside a child graph count too.
  CUgraph child = nullptr, parent = nullptr;
  CHECK(api.cuGraphCreate(&child, 0) == CUDA_SUCCESS && AddAllocNode(api, child, limit + 2 * kMiB) == CUDA_SUCCESS,
        "child graph");
  CUgraphNode node = nullptr;
  CHECK(api.cuGraphCreate(&parent, 0) == CUDA_SUCCESS &&
            api.cuGraphAddChildGraphNode(&node, parent, nullptr, 0, child) == CUDA_SUCCESS,
        "parent graph");
  rc = api.cuGraphInstantiateWithFlags(&exec, parent, 0);
  CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "a child graph's nodes past the limit -> %d", rc);
  CheckPhysical(api, limit, "end");
  return g_failures == 0 ? 0 : 1;
}

int ScenarioIpcExport(Api& api, uint64_t mib) {
  if (!Setup(api, 0)) return 1;
  CUdeviceptr p = 0;
  CUipcMemHandle handle;
  if (api.cuMemAlloc_v2(&p, mib * kMiB) != CUDA_SUCCESS || api.cuIpcGetMemHandle(&handle, p) != CUDA_SUCCESS) {
    printf("FAIL export\n");
    return 1;
  }
  std::string hex;
  for (unsigned char c : handle.reserved) {
    char two[3];
    snprintf(two, sizeof(two), "%02x", c);
    hex += two;
  }
  printf("handle %s end\n", hex.c_str());
  fflush(stdout);
  for (;;) pause();
}

int ScenarioIpcImport(Api& api, uint64_t limit_mib, const char* handle_hex, uint64_t exported_mib) {
  if (!Setup(api, 0)) return 1;
  const uint64_t limit = limit_mib * kMiB, size = exported_mib * kMiB;
  CUipcMemHandle handle;
  memset(&handle, 0, sizeof(handle));
  for (size_t i = 0; i < sizeof(handle.reserved) && handle_hex[2 * i] != '\0' && handle_hex[2 * i + 1] != '\0'; ++i) {
    char two[3] = {handle_hex[2 * i], handle_hex[2 * i + 1], 0};
    handle.reserved[i] = static_cast<char>(strtoul(two, nullptr, 16));
  }
  CUdeviceptr p = 0;
  if (size > limit) {
    CUresult rc = api.cuIpcOpenMemHandle_v2(&p, handle, 1);
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "opening more than the limit -> %d", rc);
    CHECK(FreeBytes(api) == limit, "free after a refused open is %zu", FreeBytes(api));
    return g_failures == 0 ? 0 : 1;
  }
  CUresult rc = api.cuIpcOpenMemHandle_v2(&p, handle, 1);
  CHECK(rc == CUDA_SUCCESS, "open -> %d", rc);
  CHECK(FreeBytes(api) == limit - size, "free with the import open is %zu", FreeBytes(api));
  rc = MallocFree(api, limit - size + 2 * kMiB);
  CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc beside imported memory -> %d", rc);
  CUdeviceptr again = 0;
  CHECK(api.cuIpcOpenMemHandle_v2(&again, handle, 1) == CUDA_SUCCESS && again == p, "open again");
  CHECK(FreeBytes(api) == limit - size, "opened twice, charged once: free %zu", FreeBytes(api));
  CHECK(api.cuIpcCloseMemHandle(p) == CUDA_SUCCESS, "first close");
  CHECK(FreeBytes(api) == limit - size, "still open once: free %zu", FreeBytes(api));
  CHECK(api.cuIpcCloseMemHandle(p) == CUDA_SUCCESS, "last close");
  CHECK(FreeBytes(api) == limit, "free after the last close is %zu", FreeBytes(api));
  rc = MallocFree(api, limit - size + 2 * kMiB);
  CHECK(rc == CUDA_SUCCESS, "cuMemAlloc after the last close -> %d", rc);
  return g_failures == 0 ? 0 : 1;
}

int ScenarioVmm(Api& api, uint64_t limit_mib) {
  if (!Setup(api, 0)) return 1;
  const uint64_t limit = limit_mib * kMiB, most = limit / 4 * 3, half = limit / 2;
  const CUmemAllocationProp device = Prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
  CUmemGenericAllocationHandle h = 0, h2 = 0;
  CUdeviceptr va = 0;
  CHECK(api.cuMemAddressReserve(&va, limit, 0, 0, 0) == CUDA_SUCCESS, "reserve");

  // Released but mapped: the memory lives on, and stays charged until it is unmapped.
  CHECK(Create(api, most, device, &h) == CUDA_SUCCESS && api.cuMemMap(va, most, 0, h, 0) == CUDA_SUCCESS, "map");
  CHECK(api.cuMemRelease(h) == CUDA_SUCCESS, "release while mapped");
  CUresult rc = Create(api, half, device, &h2);
  CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "cuMemCreate beside released but mapped memory -> %d", rc);
  CheckPhysical(api, limit, "released but mapped");
  CHECK(api.cuMemUnmap(va, most) == CUDA_SUCCESS, "unmap");
  rc = Create(api, half, device, &h2);
  CHECK(rc == CUDA_SUCCESS, "cuMemCreate once unmapped -> %d", rc);
  api.cuMemRelease(h2);

  // A retained handle keeps the memory after the original handle and the mapping are gone.
  CUmemGenericAllocationHandle retained = 0;
  CHECK(Create(api, half, device, &h) == CUDA_SUCCESS && api.cuMemMap(va, half, 0, h, 0) == CUDA_SUCCESS, "map");
  CHECK(api.cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(va)) == CUDA_SUCCESS, "retain");
  CHECK(api.cuMemRelease(h) == CUDA_SUCCESS && api.cuMemUnmap(va, half) == CUDA_SUCCESS, "release and unmap");
  rc = Create(api, most, device, &h2);
  CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "cuMemCreate beside retained memory -> %d", rc);
  CheckPhysical(api, limit, "retained");
  CHECK(api.cuMemRelease(retained) == CUDA_SUCCESS, "release the retained handle");
  rc = Create(api, most, device, &h2);
  CHECK(rc == CUDA_SUCCESS, "cuMemCreate once the retained handle is released -> %d", rc);
  api.cuMemRelease(h2);

  // Host locations are host memory: not charged, and the device keeps all its memory.
  for (CUmemLocationType host : {CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA}) {
    rc = Create(api, 2 * limit, Prop(host, 0), &h);
    CHECK(rc == CUDA_SUCCESS, "host location %d, twice the limit -> %d", host, rc);
    CHECK(FreeBytes(api) == limit, "free beside host memory is %zu", FreeBytes(api));
    api.cuMemRelease(h);
  }

  // A location type the library does not know is charged to the calling thread's device, never waved through.
  rc = Create(api, limit + 2 * kMiB, Prop(static_cast<CUmemLocationType>(0x7), 0), &h);
  CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "unknown location type past the limit -> %d", rc);
  CheckPhysical(api, limit, "unknown location");

  // Exported memory may be held by an importer after the exporter releases it: it stays charged.
  CUmemAllocationProp exportable = device;
  exportable.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  int fd = -1;
  CHECK(Create(api, half, exportable, &h) == CUDA_SUCCESS, "exportable allocation");
  CHECK(api.cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) == CUDA_SUCCESS,
        "export");
  CHECK(api.cuMemImportFromShareableHandle(&h2, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == CUDA_SUCCESS,
        "import");
  CHECK(api.cuMemRelease(h) == CUDA_SUCCESS, "the exporter releases");
  CUmemGenericAllocationHandle h3 = 0;
  rc = Create(api, most, device, &h3);
  CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "cuMemCreate beside exported memory an importer holds -> %d", rc);
  CheckPhysical(api, limit, "exported");
  return g_failures == 0 ? 0 : 1;
}

}  // namespace probe
