// Shared between the fake driver's files (fake_cuda.cc: devices, contexts, linear memory; fake_memory.cc: pools,
// graphs, IPC, VMM): the physical memory of each fake device and the calling thread's device. Internal to the fake
// libcuda.so.1 (hidden symbols). Thread-safe (the physical counters are guarded by fake_cuda.cc's mutex).
#pragma once

#include <stdint.h>

namespace xpool::vgpu::fake {

// Takes `bytes` of device `dev`'s physical memory; false when the device does not have them.
bool TakePhysical(int dev, uint64_t bytes);
void GivePhysical(int dev, uint64_t bytes);
bool Initialised();
int CurrentDevice();
// A fresh device address range of `bytes`.
uint64_t NewAddress(uint64_t bytes);
// The linear allocation at `address` (cuMemAlloc*): its size and device.
bool LinearAllocation(uint64_t address, uint64_t* bytes, int* dev);
// Frees a stream-ordered allocation (cuMemFree / cuMemFreeAsync of pool memory); false when `address` is not one.
bool FreePoolAllocation(uint64_t address);
// Pools give back memory above their release threshold when the process synchronises.
void SynchronisePools();

inline constexpr uint64_t kPoolGranule = 2ull << 20;  // pools reserve physical memory in 2 MiB granules

}  // namespace xpool::vgpu::fake
