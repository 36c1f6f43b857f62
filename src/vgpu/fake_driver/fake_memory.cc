// The fake driver's memory that outlives one allocate/free pair, modelled as the real driver documents it so the
// interposer's tests can try to exceed a limit through each path:
// - stream-ordered pools: a free returns memory to its pool, which keeps it (reserved) until a synchronisation
//   gives back what is above the pool's release threshold (default 0), or cuMemPoolTrimTo; pools grow in 2 MiB
//   granules and reuse what they keep; host-located pools take no device memory;
// - graph memory: each device has a graph pool that a launch grows to what the graph's allocation nodes need and
//   that keeps the memory after the graph's frees (and after the exec is destroyed) until cuDeviceGraphMemTrim;
// - IPC: cuIpcGetMemHandle encodes the exporter's allocation; another process's cuIpcOpenMemHandle maps it
//   (refcounted per handle; the same process may not open its own handle, as with the real driver);
// - VMM: an allocation lives while a handle to it or a mapping of it does (cuMemRelease, cuMemUnmap,
//   cuMemRetainAllocationHandle, export / import of a POSIX file descriptor within the process); host locations
//   take host memory; a location type the fake does not know is placed on the calling thread's device.
// Thread-safe (one mutex; physical device memory through fake_memory.h).
#include "vgpu/fake_driver/fake_memory.h"

#include <string.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "vgpu/cuda_abi.h"
#include "vgpu/fake_driver/fake_devices.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace xpool::vgpu::fake {
namespace {

struct Pool {
  int device = -1;  // -1: host memory
  uint64_t threshold = 0;
  uint64_t used = 0;
  uint64_t reserved = 0;
  bool destroyed = false;
};

struct PoolAllocation {
  Pool* pool;
  uint64_t bytes;
};

struct Node {
  CUgraphNodeType type;
  CUDA_MEM_ALLOC_NODE_PARAMS alloc;
  struct Graph* child;
};

struct Graph {
  std::vector<Node*> nodes;
};

struct Exec {
  uint64_t needs[kMaxFakeDevices] = {};
};

struct Physical {
  int device;  // -1: host
  uint64_t bytes;
  int refs;  // handle references
  int mappings;
};

struct IpcBlob {  // what a CUipcMemHandle carries
  uint32_t magic;
  int32_t pid;
  int32_t device;
  uint64_t bytes;
  uint64_t address;
};
constexpr uint32_t kIpcMagic = 0x46495043;  // "CPIF"

struct IpcMapping {
  uint64_t address;
  uint64_t bytes;
  int refs;
};

struct MemoryState {
  std::mutex mutex;
  Pool default_pools[kMaxFakeDevices];
  std::vector<Pool*> created_pools;
  std::unordered_map<uint64_t, PoolAllocation> pool_allocations;
  uint64_t graph_reserved[kMaxFakeDevices] = {};
  std::unordered_map<uint64_t, Physical> physical;                 // by id
  std::unordered_map<uint64_t, std::pair<uint64_t, int>> handles;  // handle -> (physical id, references)
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> mappings;      // address -> (size, physical id)
  std::unordered_map<int, uint64_t> exported_fds;                  // fd -> physical id
  std::map<std::vector<char>, IpcMapping> ipc;                     // by handle bytes
  uint64_t next_handle = 1;
};

MemoryState& M() {
  static MemoryState* state = [] {
    auto* s = new MemoryState();
    for (int d = 0; d < kMaxFakeDevices; ++d) s->default_pools[d].device = d;
    return s;
  }();
  return *state;
}

void DeletePool(MemoryState& m, Pool* pool) {
  for (size_t i = 0; i < m.created_pools.size(); ++i) {
    if (m.created_pools[i] == pool) {
      m.created_pools.erase(m.created_pools.begin() + static_cast<long>(i));
      break;
    }
  }
  delete pool;
}

uint64_t RoundUp(uint64_t bytes, uint64_t granule) { return (bytes + granule - 1) / granule * granule; }

bool Take(int dev, uint64_t bytes) { return dev < 0 || TakePhysical(dev, bytes); }
void Give(int dev, uint64_t bytes) {
  if (dev >= 0) GivePhysical(dev, bytes);
}

// Shrinks a pool's reservation to `target` (never below what is in use).
void ShrinkPool(Pool& pool, uint64_t target) {
  if (target < pool.used) target = pool.used;
  if (pool.reserved > target) {
    Give(pool.device, pool.reserved - target);
    pool.reserved = target;
  }
}

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

CUresult PoolAllocate(CUdeviceptr* dptr, uint64_t bytes, Pool* pool) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (dptr == nullptr || bytes == 0 || pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  MemoryState& m = M();
  std::lock_guard<std::mutex> lock(m.mutex);
  if (pool->destroyed) return CUDA_ERROR_INVALID_VALUE;
  uint64_t idle = pool->reserved - pool->used;
  if (idle < bytes) {
    uint64_t grow = RoundUp(bytes - idle, kPoolGranule);
    if (!Take(pool->device, grow)) return CUDA_ERROR_OUT_OF_MEMORY;
    pool->reserved += grow;
  }
  pool->used += bytes;
  *dptr = NewAddress(bytes);
  m.pool_allocations[*dptr] = PoolAllocation{pool, bytes};
  return CUDA_SUCCESS;
}

Pool* DefaultPool(int dev) { return dev >= 0 && dev < Devices().count ? &M().default_pools[dev] : nullptr; }

bool IsPool(CUmemoryPool handle) {
  auto* pool = reinterpret_cast<Pool*>(handle);
  MemoryState& m = M();
  if (pool >= m.default_pools && pool < m.default_pools + kMaxFakeDevices) return true;
  return handle != nullptr;  // created by cuMemPoolCreate (the fake trusts its callers)
}

}  // namespace

bool FreePoolAllocation(uint64_t address) {
  MemoryState& m = M();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.pool_allocations.find(address);
  if (it == m.pool_allocations.end()) return false;
  Pool* pool = it->second.pool;
  pool->used -= it->second.bytes;
  m.pool_allocations.erase(it);
  if (pool->destroyed && pool->used == 0) {
    ShrinkPool(*pool, 0);
    DeletePool(m, pool);
  }
  return true;
}

void SynchronisePools() {
  MemoryState& m = M();
  std::lock_guard<std::mutex> lock(m.mutex);
  for (Pool& pool : m.default_pools) {
    if (pool.reserved > pool.threshold) ShrinkPool(pool, pool.threshold);
  }
  for (Pool* pool : m.created_pools) {
    if (pool->reserved > pool->threshold) ShrinkPool(*pool, pool->threshold);
  }
}

}  // namespace xpool::vgpu::fake

using namespace xpool::vgpu::fake;

// ---------------------------------------------------------------- pools
FAKE_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  Pool* p = DefaultPool(dev);
  if (pool == nullptr || p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pool = reinterpret_cast<CUmemoryPool>(p);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (pool == nullptr || props == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int dev = LocationDevice(props->location);
  if (dev >= Devices().count || (dev < 0 && props->location.type == CU_MEM_LOCATION_TYPE_DEVICE)) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  auto* p = new Pool();
  p->device = dev;
  std::lock_guard<std::mutex> lock(M().mutex);
  M().created_pools.push_back(p);
  *pool = reinterpret_cast<CUmemoryPool>(p);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool handle) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  auto* pool = reinterpret_cast<Pool*>(handle);
  MemoryState& m = M();
  if (pool == nullptr || (pool >= m.default_pools && pool < m.default_pools + kMaxFakeDevices)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(m.mutex);
  if (pool->used > 0) {
    pool->destroyed = true;  // released with its last allocation, as the real driver does
    return CUDA_SUCCESS;
  }
  ShrinkPool(*pool, 0);
  DeletePool(m, pool);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool handle, size_t keep) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!IsPool(handle)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(M().mutex);
  ShrinkPool(*reinterpret_cast<Pool*>(handle), keep);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool handle, CUmemPool_attribute attr, void* value) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!IsPool(handle) || value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (attr != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) return CUDA_ERROR_NOT_SUPPORTED;
  std::lock_guard<std::mutex> lock(M().mutex);
  reinterpret_cast<Pool*>(handle)->threshold = *static_cast<cuuint64_t*>(value);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool handle, CUmemPool_attribute attr, void* value) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!IsPool(handle) || value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(M().mutex);
  const Pool& pool = *reinterpret_cast<Pool*>(handle);
  cuuint64_t* out = static_cast<cuuint64_t*>(value);
  switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      *out = pool.threshold;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      *out = pool.reserved;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      *out = pool.used;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

FAKE_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream) {
  return PoolAllocate(dptr, bytesize, DefaultPool(CurrentDevice()));
}
FAKE_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream) {
  return PoolAllocate(dptr, bytesize, DefaultPool(CurrentDevice()));
}
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream) {
  return PoolAllocate(dptr, bytesize, reinterpret_cast<Pool*>(pool));
}
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream) {
  return PoolAllocate(dptr, bytesize, reinterpret_cast<Pool*>(pool));
}

FAKE_EXPORT CUresult cuStreamIsCapturing(CUstream, CUstreamCaptureStatus* status) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *status = CU_STREAM_CAPTURE_STATUS_NONE;  // the fake has no stream capture
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------- graphs
FAKE_EXPORT CUresult cuGraphCreate(CUgraph* graph, unsigned int flags) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (graph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *graph = reinterpret_cast<CUgraph>(new Graph());
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphDestroy(CUgraph handle) {
  auto* graph = reinterpret_cast<Graph*>(handle);
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (Node* node : graph->nodes) delete node;
  delete graph;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode* node, CUgraph handle, const CUgraphNode*, size_t,
                                            CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  auto* graph = reinterpret_cast<Graph*>(handle);
  if (node == nullptr || graph == nullptr || params == nullptr || params->bytesize == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (params->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      params->poolProps.location.id >= Devices().count) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  params->dptr = NewAddress(params->bytesize);  // the address is fixed at creation; memory comes at launch
  auto* n = new Node{CU_GRAPH_NODE_TYPE_MEM_ALLOC, *params, nullptr};
  graph->nodes.push_back(n);
  *node = reinterpret_cast<CUgraphNode>(n);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode* node, CUgraph handle, const CUgraphNode*, size_t,
                                              CUgraph child) {
  auto* graph = reinterpret_cast<Graph*>(handle);
  if (node == nullptr || graph == nullptr || child == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* n = new Node{CU_GRAPH_NODE_TYPE_GRAPH, {}, reinterpret_cast<Graph*>(child)};
  graph->nodes.push_back(n);
  *node = reinterpret_cast<CUgraphNode>(n);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphGetNodes(CUgraph handle, CUgraphNode* nodes, size_t* count) {
  auto* graph = reinterpret_cast<Graph*>(handle);
  if (graph == nullptr || count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (nodes == nullptr) {
    *count = graph->nodes.size();
    return CUDA_SUCCESS;
  }
  size_t n = *count < graph->nodes.size() ? *count : graph->nodes.size();
  for (size_t i = 0; i < n; ++i) nodes[i] = reinterpret_cast<CUgraphNode>(graph->nodes[i]);
  *count = n;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  if (node == nullptr || type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *type = reinterpret_cast<Node*>(node)->type;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode node, CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  auto* n = reinterpret_cast<Node*>(node);
  if (n == nullptr || params == nullptr || n->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC) return CUDA_ERROR_INVALID_VALUE;
  *params = n->alloc;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph* graph) {
  auto* n = reinterpret_cast<Node*>(node);
  if (n == nullptr || graph == nullptr || n->type != CU_GRAPH_NODE_TYPE_GRAPH) return CUDA_ERROR_INVALID_VALUE;
  *graph = reinterpret_cast<CUgraph>(n->child);
  return CUDA_SUCCESS;
}

namespace {
void AddNeeds(const Graph* graph, Exec* exec, int depth) {
  if (depth > 8) return;
  for (const Node* node : graph->nodes) {
    if (node->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
      exec->needs[node->alloc.poolProps.location.id] += node->alloc.bytesize;
    if (node->type == CU_GRAPH_NODE_TYPE_GRAPH) AddNeeds(node->child, exec, depth + 1);
  }
}

CUresult Instantiate(CUgraphExec* out, CUgraph handle) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  auto* graph = reinterpret_cast<Graph*>(handle);
  if (out == nullptr || graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* exec = new Exec();
  AddNeeds(graph, exec, 0);
  *out = reinterpret_cast<CUgraphExec>(exec);
  return CUDA_SUCCESS;
}
}  // namespace

FAKE_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long) {
  return Instantiate(exec, graph);
}
FAKE_EXPORT CUresult cuGraphInstantiate(CUgraphExec* exec, CUgraph graph, CUgraphNode*, char*, size_t) {
  return Instantiate(exec, graph);
}
FAKE_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec* exec, CUgraph graph, CUgraphNode*, char*, size_t) {
  return Instantiate(exec, graph);
}
FAKE_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec* exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS*) {
  return Instantiate(exec, graph);
}
FAKE_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* exec, CUgraph graph,
                                                       CUDA_GRAPH_INSTANTIATE_PARAMS*) {
  return Instantiate(exec, graph);
}

FAKE_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec) {
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  delete reinterpret_cast<Exec*>(exec);  // the graph pool keeps its memory
  return CUDA_SUCCESS;
}

namespace xpool::vgpu::fake {
// A launch runs the graph to completion at once: the device's graph pool grows to what its allocation nodes need
// and keeps that memory afterwards.
CUresult LaunchGraphMemory(CUgraphExec handle) {
  auto* exec = reinterpret_cast<Exec*>(handle);
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  MemoryState& m = M();
  std::lock_guard<std::mutex> lock(m.mutex);
  for (int d = 0; d < kMaxFakeDevices; ++d) {
    if (exec->needs[d] <= m.graph_reserved[d]) continue;
    uint64_t grow = exec->needs[d] - m.graph_reserved[d];
    if (!Take(d, grow)) return CUDA_ERROR_OUT_OF_MEMORY;
    m.graph_reserved[d] += grow;
  }
  return CUDA_SUCCESS;
}
}  // namespace xpool::vgpu::fake

FAKE_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice dev) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= Devices().count) return CUDA_ERROR_INVALID_DEVICE;
  MemoryState& m = M();
  std::lock_guard<std::mutex> lock(m.mutex);
  Give(dev, m.graph_reserved[dev]);
  m.graph_reserved[dev] = 0;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice dev, CUgraphMem_attribute attr, void* value) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= Devices().count) return CUDA_ERROR_INVALID_DEVICE;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) return CUDA_ERROR_NOT_SUPPORTED;
  std::lock_guard<std::mutex> lock(M().mutex);
  *static_cast<cuuint64_t*>(value) = M().graph_reserved[dev];
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------- IPC
FAKE_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr dptr) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  uint64_t bytes = 0;
  int dev = -1;
  if (handle == nullptr || !LinearAllocation(dptr, &bytes, &dev)) return CUDA_ERROR_INVALID_VALUE;
  IpcBlob blob{kIpcMagic, static_cast<int32_t>(getpid()), dev, bytes, dptr};
  memset(handle, 0, sizeof(*handle));
  memcpy(handle->reserved, &blob, sizeof(blob));
  return CUDA_SUCCESS;
}

namespace {
CUresult IpcOpen(CUdeviceptr* dptr, const CUipcMemHandle& handle) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  IpcBlob blob;
  memcpy(&blob, handle.reserved, sizeof(blob));
  if (dptr == nullptr || blob.magic != kIpcMagic || blob.bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (blob.pid == getpid()) return CUDA_ERROR_INVALID_CONTEXT;  // a process cannot open its own handle
  MemoryState& m = M();
  std::lock_guard<std::mutex> lock(m.mutex);
  std::vector<char> key(handle.reserved, handle.reserved + sizeof(handle.reserved));
  IpcMapping& mapping = m.ipc[key];
  if (mapping.refs++ == 0) {
    mapping.address = NewAddress(blob.bytes);
    mapping.bytes = blob.bytes;
  }
  *dptr = mapping.address;
  return CUDA_SUCCESS;
}
}  // namespace

FAKE_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr* dptr, CUipcMemHandle handle, unsigned int) {
  return IpcOpen(dptr, handle);
}
FAKE_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* dptr, CUipcMemHandle handle, unsigned int) {
  return IpcOpen(dptr, handle);
}

FAKE_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  MemoryState& m = M();
  std::lock_guard<std::mutex> lock(m.mutex);
  for (auto it = m.ipc.begin(); it != m.ipc.end(); ++it) {
    if (it->second.address != dptr) continue;
    if (--it->second.refs == 0) m.ipc.erase(it);
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr dptr) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  uint64_t bytes = 0;
  int dev = -1;
  if (LinearAllocation(dptr, &bytes, &dev)) {
    if (base != nullptr) *base = dptr;
    if (size != nullptr) *size = bytes;
    return CUDA_SUCCESS;
  }
  MemoryState& m = M();
  std::lock_guard<std::mutex> lock(m.mutex);
  for (const auto& [key, mapping] : m.ipc) {
    if (dptr >= mapping.address && dptr < mapping.address + mapping.bytes) {
      if (base != nullptr) *base = mapping.address;
      if (size != nullptr) *size = mapping.bytes;
      return CUDA_SUCCESS;
    }
  }
  auto it = m.pool_allocations.find(dptr);
  if (it != m.pool_allocations.end()) {
    if (base != nullptr) *base = dptr;
    if (size != nullptr) *size = it->second.bytes;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}

// ---------------------------------------------------------------- VMM
namespace {
// Frees a physical allocation nothing refers to any more. Caller holds the mutex.
void MaybeFreePhysical(MemoryState& m, uint64_t id) {
  auto it = m.physical.find(id);
  if (it == m.physical.end() || it->second.refs > 0 || it->second.mappings > 0) return;
  Give(it->second.device, it->second.bytes);
  m.physical.erase(it);
}

uint64_t NewHandle(MemoryState& m, uint64_t id) {
  uint64_t handle = m.next_handle++;
  m.handles[handle] = {id, 1};
  ++m.physical[id].refs;
  return handle;
}
}  // namespace

FAKE_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                                 unsigned long long flags) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (handle == nullptr || prop == nullptr || flags != 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type == CU_MEM_LOCATION_TYPE_INVALID) return CUDA_ERROR_INVALID_VALUE;
  int dev = LocationDevice(prop->location);
  if (dev >= Devices().count) return CUDA_ERROR_INVALID_DEVICE;
  MemoryState& m = M();
  std::lock_guard<std::mutex> lock(m.mutex);
  if (!Take(dev, size)) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t id = m.next_handle;  // ids and handles share the counter; any unique value will do
  m.physical[id] = Physical{dev, size, 0, 0};
  *handle = NewHandle(m, id);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  MemoryState& m = M();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.handles.find(handle);
  if (it == m.handles.end()) return CUDA_ERROR_INVALID_VALUE;
  uint64_t id = it->second.first;
  // cuMemRetainAllocationHandle hands out the same handle value again: one release per reference.
  --m.physical[id].refs;
  if (--it->second.second <= 0) m.handles.erase(it);
  MaybeFreePhysical(m, id);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t, CUdeviceptr, unsigned long long) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (ptr == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  *ptr = NewAddress(size);  // virtual address space only
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemAddressFree(CUdeviceptr, size_t) {
  return Initialised() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

FAKE_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                              unsigned long long flags) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  MemoryState& m = M();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.handles.find(handle);
  if (it == m.handles.end() || flags != 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  Physical& p = m.physical[it->second.first];
  if (offset + size > p.bytes || m.mappings.count(ptr) != 0) return CUDA_ERROR_INVALID_VALUE;
  ++p.mappings;
  m.mappings[ptr] = {size, it->second.first};
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  MemoryState& m = M();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.mappings.lower_bound(ptr);
  if (it == m.mappings.end() || it->first != ptr) return CUDA_ERROR_INVALID_VALUE;
  while (it != m.mappings.end() && it->first < ptr + size) {
    uint64_t id = it->second.second;
    it = m.mappings.erase(it);
    --m.physical[id].mappings;
    MaybeFreePhysical(m, id);
  }
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  MemoryState& m = M();
  std::lock_guard<std::mutex> lock(m.mutex);
  uint64_t address = reinterpret_cast<uint64_t>(addr);
  auto it = m.mappings.upper_bound(address);
  if (it == m.mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  if (address >= it->first + it->second.first) return CUDA_ERROR_INVALID_VALUE;
  uint64_t id = it->second.second;
  for (auto& [h, entry] : m.handles) {  // the same handle value that maps the memory, if it still exists
    if (entry.first == id) {
      *handle = h;
      ++entry.second;
      ++m.physical[id].refs;
      return CUDA_SUCCESS;
    }
  }
  *handle = NewHandle(m, id);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemExportToShareableHandle(void* shareable, CUmemGenericAllocationHandle handle,
                                                  CUmemAllocationHandleType type, unsigned long long flags) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (shareable == nullptr || flags != 0 || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  MemoryState& m = M();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.handles.find(handle);
  if (it == m.handles.end()) return CUDA_ERROR_INVALID_VALUE;
  int fd = dup(0);  // any fresh descriptor stands for the allocation (imports are within the process)
  if (fd < 0) return CUDA_ERROR_UNKNOWN;
  m.exported_fds[fd] = it->second.first;
  *static_cast<int*>(shareable) = fd;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* os_handle,
                                                    CUmemAllocationHandleType type) {
  if (!Initialised()) return CUDA_ERROR_NOT_INITIALIZED;
  if (handle == nullptr || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_INVALID_VALUE;
  MemoryState& m = M();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.exported_fds.find(static_cast<int>(reinterpret_cast<intptr_t>(os_handle)));
  if (it == m.exported_fds.end() || m.physical.count(it->second) == 0) return CUDA_ERROR_INVALID_VALUE;
  *handle = NewHandle(m, it->second);
  return CUDA_SUCCESS;
}
