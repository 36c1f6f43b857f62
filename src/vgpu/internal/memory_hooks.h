// Shared by hooks_cuda.cc and hooks_memory.cc: the stream-ordered allocation path (charges a pool for what it holds,
// see memory_ledger.h) and the release of a pool allocation's charge. Thread-safe (the ledger's mutex).
#pragma once

#include <stdint.h>

#include "vgpu/cuda_abi.h"

namespace xpool::vgpu::internal {

// The real allocation: calls the driver and returns its result (fills *dptr on success).
using PoolAllocCall = CUresult (*)(void* context);

// cuMemAllocAsync (pool == nullptr: the device's current pool) and cuMemAllocFromPoolAsync.
CUresult PoolAlloc(CUdeviceptr* dptr, uint64_t bytes, CUmemoryPool pool, CUstream stream, PoolAllocCall call,
                   void* context);

// A freed pool allocation: its bytes stay charged to the pool as kept memory.
void PoolAllocationFreed(uint64_t pool, uint64_t bytes);

}  // namespace xpool::vgpu::internal
