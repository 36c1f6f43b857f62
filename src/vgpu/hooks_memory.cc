// The exported hooks for memory that outlives a single allocate/free pair: stream-ordered pools (what a pool keeps
// after cuMemFreeAsync), graph memory nodes (charged when a graph is instantiated), VMM allocations (alive while
// mapped or retained), and memory imported from another process (cuIpcOpenMemHandle, cuMemImportFromShareableHandle).
// The arithmetic is in memory_ledger.h; this file asks the driver and charges what the ledger says. Every ledger use
// holds LedgerMutex(). No exception leaves this file (the library is built with -fno-exceptions).
#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <new>
#include <vector>

#include "vgpu/internal/memory_hooks.h"
#include "vgpu/internal/real_table.h"
#include "vgpu/log.h"
#include "vgpu/runtime.h"

using namespace xpool::vgpu;

namespace {

using Lock = std::lock_guard<std::recursive_mutex>;

uint64_t Key(const void* p) { return reinterpret_cast<uint64_t>(p); }

bool PoolReserved(CUmemoryPool pool, uint64_t* reserved) {
  cuuint64_t value = 0;
  if (real::cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &value) != CUDA_SUCCESS) return false;
  *reserved = value;
  return true;
}

bool GraphPoolReserved(int dev, uint64_t* reserved) {
  cuuint64_t value = 0;
  if (real::cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &value) != CUDA_SUCCESS) {
    return false;
  }
  *reserved = value;
  return true;
}

void ReconcilePoolsLocked(int dev) {
  MemoryLedger& ledger = Ledger();
  for (uint64_t pool : ledger.PoolsWithKeptCharge(dev)) {
    uint64_t reserved = 0;
    if (PoolReserved(reinterpret_cast<CUmemoryPool>(pool), &reserved)) Unreserve(ledger.PoolReconcile(pool, reserved));
  }
}

void ReconcileGraphLocked(int dev) {
  for (int d = dev < 0 ? 0 : dev; d < (dev < 0 ? kMaxDevices : dev + 1); ++d) {
    if (Ledger().GraphCharged(d) == 0) continue;
    uint64_t reserved = 0;
    if (GraphPoolReserved(d, &reserved)) Unreserve(Ledger().GraphReconcile(d, reserved));
  }
}

// The device a VMM / pool location is charged to: the device for device locations, -1 (not charged) for host
// memory, and the calling thread's device for a location the library does not know (never uncharged).
int LocationDevice(const CUmemLocation& location) {
  switch (location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      return location.id;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      return -1;
    default:
      return CurrentDevice();
  }
}

// ---------------------------------------------------------------- graphs
constexpr int kMaxGraphDepth = 8;
constexpr size_t kMaxGraphNodes = size_t{1} << 24;

// Adds the bytes of every memory allocation node of `graph` (and of its child graphs) to `needs`, per device. False
// when the graph could not be walked (too deep, too many nodes): it is then not instantiated.
bool AddGraphNeeds(CUgraph graph, int depth, uint64_t needs[kMaxDevices]) {
  size_t count = 0;
  if (depth > kMaxGraphDepth) return false;
  if (real::cuGraphGetNodes(graph, nullptr, &count) != CUDA_SUCCESS || count == 0) return true;
  std::unique_ptr<CUgraphNode[]> nodes(count <= kMaxGraphNodes ? new (std::nothrow) CUgraphNode[count] : nullptr);
  if (nodes == nullptr) return false;
  const size_t capacity = count;
  if (real::cuGraphGetNodes(graph, nodes.get(), &count) != CUDA_SUCCESS) return true;
  for (size_t i = 0; i < count && i < capacity; ++i) {
    CUgraphNodeType type;
    if (real::cuGraphNodeGetType(nodes[i], &type) != CUDA_SUCCESS) continue;
    if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
      CUDA_MEM_ALLOC_NODE_PARAMS params;
      if (real::cuGraphMemAllocNodeGetParams(nodes[i], &params) != CUDA_SUCCESS) continue;
      int dev = LocationDevice(params.poolProps.location);
      if (dev >= 0 && dev < kMaxDevices) needs[dev] += params.bytesize;
    } else if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
      CUgraph child = nullptr;
      if (real::cuGraphChildGraphNodeGetGraph(nodes[i], &child) == CUDA_SUCCESS &&
          !AddGraphNeeds(child, depth + 1, needs)) {
        return false;
      }
    }
  }
  return true;
}

// Charges what instantiating a graph with these needs takes; false (nothing charged) when it does not fit.
bool ChargeGraph(const std::vector<DeviceBytes>& needs, std::vector<DeviceBytes>* charged) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attempt == 1) {
      for (const DeviceBytes& need : needs) ReconcileWithDriver(need.device);
    }
    uint64_t reserved[kMaxDevices] = {};
    for (const DeviceBytes& need : needs) GraphPoolReserved(need.device, &reserved[need.device]);
    *charged = Ledger().GraphInstantiateCharges(needs, reserved);
    size_t done = 0;
    while (done < charged->size() && ReserveExact((*charged)[done].device, (*charged)[done].bytes)) ++done;
    if (done == charged->size()) return true;
    for (size_t i = 0; i < done; ++i) Unreserve((*charged)[i]);
  }
  charged->clear();
  return false;
}

template <typename Call>
CUresult GraphInstantiate(CUgraphExec* exec, CUgraph graph, Call call) {
  EnsureCudaInit();
  if (!AnyMemoryLimit() || exec == nullptr || graph == nullptr) return call();
  uint64_t per_device[kMaxDevices] = {};
  if (!AddGraphNeeds(graph, 0, per_device)) {
    Log(LogLevel::kWarn, "graph refused: too deep or too large to count its memory nodes");
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  std::vector<DeviceBytes> needs;
  for (int d = 0; d < kMaxDevices; ++d) {
    if (per_device[d] > 0 && MemoryLimited(d)) needs.push_back(DeviceBytes{d, per_device[d]});
  }
  if (needs.empty()) return call();
  Lock lock(LedgerMutex());
  std::vector<DeviceBytes> charged;
  if (!ChargeGraph(needs, &charged)) {
    Log(LogLevel::kInfo, "graph instantiation refused: its memory nodes do not fit the limit");
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  CUresult rc = call();
  if (rc != CUDA_SUCCESS) {
    for (const DeviceBytes& c : charged) Unreserve(c);
    return rc;
  }
  Ledger().GraphInstantiated(Key(*exec), needs, charged);
  return rc;
}

// ---------------------------------------------------------------- IPC
template <typename Call>
CUresult IpcOpen(CUdeviceptr* pdptr, Call call) {
  EnsureCudaInit();
  if (!AnyMemoryLimit() || pdptr == nullptr) return call();
  int dev = CurrentDevice();
  if (!MemoryLimited(dev)) return call();
  Lock lock(LedgerMutex());
  CUresult rc = call();
  if (rc != CUDA_SUCCESS || Ledger().IpcOpenedAgain(*pdptr)) return rc;
  CUdeviceptr base = 0;
  size_t size = 0;
  CUresult range = real::cuMemGetAddressRange_v2(&base, &size, *pdptr);
  if (range != CUDA_SUCCESS || !Reserve(dev, size)) {
    // Imported memory the task cannot be charged for is not handed out.
    real::cuIpcCloseMemHandle(*pdptr);
    *pdptr = 0;
    Log(LogLevel::kInfo, "device %d: IPC import of %zu bytes refused", dev, size);
    return range != CUDA_SUCCESS ? range : CUDA_ERROR_OUT_OF_MEMORY;
  }
  Ledger().IpcOpened(*pdptr, dev, size);
  return rc;
}

template <typename Call>
CUresult Synchronized(Call call) {
  CUresult rc = call();
  if (rc == CUDA_SUCCESS && AnyMemoryLimit()) ReconcilePools(-1);
  return rc;
}

}  // namespace

namespace xpool::vgpu {

void ReconcileWithDriver(int dev) {
  if (!AnyMemoryLimit()) return;
  Lock lock(LedgerMutex());
  ReconcilePoolsLocked(dev);
  ReconcileGraphLocked(dev);
}

void ReconcilePools(int dev) {
  if (!AnyMemoryLimit()) return;
  Lock lock(LedgerMutex());
  if (Ledger().AnyKeptCharge()) ReconcilePoolsLocked(dev);
}

namespace internal {

void PoolAllocationFreed(uint64_t pool, uint64_t bytes) {
  Lock lock(LedgerMutex());
  Unreserve(Ledger().PoolFreed(pool, bytes));
}

// Charges the pool for what the allocation needs beyond its kept charge, then settles on what the driver says the
// pool holds: growth that fits is charged; growth that does not is refused (the allocation is given back, and the
// memory the pool now keeps stays charged, since the driver holds it).
CUresult PoolAlloc(CUdeviceptr* dptr, uint64_t bytes, CUmemoryPool pool, CUstream stream, PoolAllocCall call,
                   void* context) {
  EnsureCudaInit();
  if (!AnyMemoryLimit() || dptr == nullptr) return call(context);
  const int current = CurrentDevice();
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (real::cuStreamIsCapturing(stream, &capture) == CUDA_SUCCESS && capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    return call(context);  // recorded into a graph: charged when the graph is instantiated
  }
  if (pool == nullptr && real::cuDeviceGetMemPool(&pool, current) != CUDA_SUCCESS) pool = nullptr;
  Lock lock(LedgerMutex());
  MemoryLedger& ledger = Ledger();
  const uint64_t key = Key(pool);
  const int dev = pool == nullptr ? current : ledger.PoolDevice(key, current);
  if (!MemoryLimited(dev)) return call(context);
  if (pool == nullptr) {  // no pool to ask about: charged like cuMemAlloc
    if (!Reserve(dev, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = call(context);
    if (rc != CUDA_SUCCESS) {
      Unreserve(dev, bytes);
    } else {
      Remember(AllocKind::kLinear, *dptr, dev, bytes);
    }
    return rc;
  }
  uint64_t need = ledger.PoolNeed(key, bytes);
  if (!ReserveExact(dev, need)) {
    ReconcileWithDriver(dev);
    need = ledger.PoolNeed(key, bytes);
    if (!ReserveExact(dev, need)) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  CUresult rc = call(context);
  if (rc != CUDA_SUCCESS) {
    Unreserve(dev, need);
    return rc;
  }
  ledger.PoolAllocated(key, dev, bytes, need);
  uint64_t reserved = 0;
  uint64_t growth = PoolReserved(pool, &reserved) ? ledger.PoolGrowth(key, reserved) : 0;
  if (growth > 0 && !ReserveExact(dev, growth)) {
    // Refused: give the allocation back and trim the pool to what it is charged. Whatever the driver still
    // reserves beyond that stays charged (it holds the memory) until a synchronisation or trim releases it.
    real::cuMemFreeAsync(*dptr, stream);
    ledger.PoolFreed(key, bytes);
    *dptr = 0;
    real::cuStreamSynchronize(stream);
    real::cuMemPoolTrimTo(pool, ledger.PoolCharge(key));
    if (PoolReserved(pool, &reserved)) {
      uint64_t left = ledger.PoolGrowth(key, reserved);
      ForceCharge(dev, left);
      ledger.PoolAddCharge(key, left);
      Unreserve(ledger.PoolReconcile(key, reserved));
    }
    Log(LogLevel::kInfo, "device %d: the pool would grow %llu bytes beyond the limit; allocation refused", dev,
        static_cast<unsigned long long>(growth));
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (growth > 0) ledger.PoolAddCharge(key, growth);
  Remember(AllocKind::kLinear, *dptr, dev, bytes, key);
  return rc;
}

}  // namespace internal
}  // namespace xpool::vgpu

extern "C" {

// ---------------------------------------------------------------- stream-ordered pools
CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  EnsureCudaInit();
  CUresult rc = real::cuMemPoolCreate(pool, poolProps);
  if (rc == CUDA_SUCCESS && AnyMemoryLimit() && pool != nullptr && poolProps != nullptr) {
    int dev = LocationDevice(poolProps->location);
    Lock lock(LedgerMutex());
    Ledger().NotePool(Key(*pool), dev, dev >= 0);
  }
  return rc;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  EnsureCudaInit();
  if (!AnyMemoryLimit()) return real::cuMemPoolDestroy(pool);
  Lock lock(LedgerMutex());
  CUresult rc = real::cuMemPoolDestroy(pool);
  if (rc == CUDA_SUCCESS) Unreserve(Ledger().PoolDestroyed(Key(pool)));
  return rc;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  EnsureCudaInit();
  CUresult rc = real::cuMemPoolTrimTo(pool, minBytesToKeep);
  uint64_t reserved = 0;
  if (rc == CUDA_SUCCESS && AnyMemoryLimit()) {
    Lock lock(LedgerMutex());
    if (PoolReserved(pool, &reserved)) Unreserve(Ledger().PoolReconcile(Key(pool), reserved));
  }
  return rc;
}

// Pools give memory above their release threshold back at synchronisations: that is when kept charge can go.
CUresult cuStreamSynchronize(CUstream hStream) {
  EnsureCudaInit();
  return Synchronized([&] { return real::cuStreamSynchronize(hStream); });
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  EnsureCudaInit();
  return Synchronized([&] { return real::cuStreamSynchronize_ptsz(hStream); });
}

CUresult cuCtxSynchronize(void) {
  EnsureCudaInit();
  return Synchronized([&] { return real::cuCtxSynchronize(); });
}

// ---------------------------------------------------------------- graph memory
CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  return GraphInstantiate(phGraphExec, hGraph,
                          [&] { return real::cuGraphInstantiateWithFlags(phGraphExec, hGraph, flags); });
}

CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
                            size_t bufferSize) {
  return GraphInstantiate(phGraphExec, hGraph, [&] {
    return real::cuGraphInstantiate(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
  });
}

CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
                               size_t bufferSize) {
  return GraphInstantiate(phGraphExec, hGraph, [&] {
    return real::cuGraphInstantiate_v2(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
  });
}

CUresult cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  return GraphInstantiate(phGraphExec, hGraph,
                          [&] { return real::cuGraphInstantiateWithParams(phGraphExec, hGraph, instantiateParams); });
}

CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  return GraphInstantiate(phGraphExec, hGraph, [&] {
    return real::cuGraphInstantiateWithParams_ptsz(phGraphExec, hGraph, instantiateParams);
  });
}

// The graph pool may keep the memory of a destroyed exec: its charge goes only as far as the driver released it.
CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  EnsureCudaInit();
  CUresult rc = real::cuGraphExecDestroy(hGraphExec);
  if (rc == CUDA_SUCCESS && AnyMemoryLimit()) {
    Lock lock(LedgerMutex());
    for (int dev : Ledger().GraphExecDestroyed(Key(hGraphExec))) ReconcileGraphLocked(dev);
  }
  return rc;
}

CUresult cuDeviceGraphMemTrim(CUdevice device) {
  EnsureCudaInit();
  CUresult rc = real::cuDeviceGraphMemTrim(device);
  if (rc == CUDA_SUCCESS && AnyMemoryLimit()) {
    Lock lock(LedgerMutex());
    ReconcileGraphLocked(device);
  }
  return rc;
}

// ---------------------------------------------------------------- IPC
CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return IpcOpen(pdptr, [&] { return real::cuIpcOpenMemHandle(pdptr, handle, Flags); });
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return IpcOpen(pdptr, [&] { return real::cuIpcOpenMemHandle_v2(pdptr, handle, Flags); });
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  EnsureCudaInit();
  if (!AnyMemoryLimit()) return real::cuIpcCloseMemHandle(dptr);
  Lock lock(LedgerMutex());
  CUresult rc = real::cuIpcCloseMemHandle(dptr);
  bool known = false;
  if (rc == CUDA_SUCCESS) Unreserve(Ledger().IpcClosed(dptr, &known));
  return rc;
}

// ---------------------------------------------------------------- virtual memory management (VMM)
// A VMM allocation stays charged while a handle to it or a mapping of it lives (cuMemRelease does not free mapped
// memory). Host locations are host memory and are not charged; a location type the library does not know is charged
// to the calling thread's device. The ledger's lock is held across the driver calls: handle values are reused.
CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                     unsigned long long flags) {
  EnsureCudaInit();
  auto call = [&] { return real::cuMemCreate(handle, size, prop, flags); };
  if (!AnyMemoryLimit() || handle == nullptr || prop == nullptr) return call();
  const int dev = LocationDevice(prop->location);
  if (!MemoryLimited(dev)) return call();
  Lock lock(LedgerMutex());
  if (!Reserve(dev, size)) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = call();
  if (rc != CUDA_SUCCESS) {
    Unreserve(dev, size);
    return rc;
  }
  Ledger().VmmCreated(*handle, dev, size);
  return rc;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  EnsureCudaInit();
  if (!AnyMemoryLimit()) return real::cuMemRelease(handle);
  Lock lock(LedgerMutex());
  CUresult rc = real::cuMemRelease(handle);
  bool known = false;
  if (rc == CUDA_SUCCESS) Unreserve(Ledger().VmmReleased(handle, &known));
  return rc;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  EnsureCudaInit();
  if (!AnyMemoryLimit()) return real::cuMemMap(ptr, size, offset, handle, flags);
  Lock lock(LedgerMutex());
  const int dev = CurrentDevice();
  uint64_t need = MemoryLimited(dev) ? Ledger().VmmMapNeed(handle, offset, size) : 0;
  if (need > 0 && !Reserve(dev, need)) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = real::cuMemMap(ptr, size, offset, handle, flags);
  if (rc != CUDA_SUCCESS) {
    Unreserve(dev, need);
    return rc;
  }
  Ledger().VmmMapped(ptr, size, handle, dev, need);
  return rc;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  EnsureCudaInit();
  if (!AnyMemoryLimit()) return real::cuMemUnmap(ptr, size);
  Lock lock(LedgerMutex());
  CUresult rc = real::cuMemUnmap(ptr, size);
  if (rc == CUDA_SUCCESS) {
    for (const DeviceBytes& release : Ledger().VmmUnmapped(ptr, size)) Unreserve(release);
  }
  return rc;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  EnsureCudaInit();
  if (!AnyMemoryLimit()) return real::cuMemRetainAllocationHandle(handle, addr);
  Lock lock(LedgerMutex());
  CUresult rc = real::cuMemRetainAllocationHandle(handle, addr);
  if (rc == CUDA_SUCCESS && handle != nullptr) Ledger().VmmRetained(*handle, Key(addr));
  return rc;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                        CUmemAllocationHandleType shHandleType) {
  EnsureCudaInit();
  if (!AnyMemoryLimit()) return real::cuMemImportFromShareableHandle(handle, osHandle, shHandleType);
  Lock lock(LedgerMutex());
  CUresult rc = real::cuMemImportFromShareableHandle(handle, osHandle, shHandleType);
  if (rc == CUDA_SUCCESS && handle != nullptr) Ledger().VmmImported(*handle);
  return rc;
}

CUresult cuMemExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType, unsigned long long flags) {
  EnsureCudaInit();
  if (!AnyMemoryLimit()) return real::cuMemExportToShareableHandle(shareableHandle, handle, handleType, flags);
  Lock lock(LedgerMutex());
  CUresult rc = real::cuMemExportToShareableHandle(shareableHandle, handle, handleType, flags);
  if (rc == CUDA_SUCCESS) Ledger().VmmExported(handle);
  return rc;
}

}  // extern "C"
