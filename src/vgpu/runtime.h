// The process-wide state of libxpool-vgpu.so and the operations the exported hooks are written in: once-only
// initialisation (a state machine that tolerates re-entry from the thread running it), the memory accounting
// (reserve before the real allocation, release after the real free), the compute limiter, and the mapping between
// CUDA ordinals (what the limits are indexed by) and NVML devices.
//
// The runtime is created on first use and deliberately never destroyed (hooks may run during exit). All functions
// are thread-safe.
#pragma once

#include <stdint.h>

#include <atomic>
#include <mutex>

#include "vgpu/alloc_tracker.h"
#include "vgpu/cuda_abi.h"
#include "vgpu/limits.h"
#include "vgpu/memory_ledger.h"
#include "vgpu/shared_region.h"

namespace xpool::vgpu {

// 0 when kernel launches may go straight to the driver (initialised, no compute limit in this process).
extern std::atomic<int> g_launch_gate;

// Runs initialisation once (reads the environment, opens the shared region, starts the compute limiter). Returns
// at once when done; a nested call from the initialising thread returns immediately.
void EnsureInit();
// EnsureInit, then loads the real CUDA driver (once). Every CUDA hook calls this; NVML hooks only EnsureInit, so a
// process that only uses NVML never loads libcuda.
void EnsureCudaInit();
// Loads the real NVML (once); called by the NVML hooks and the compute limiter.
void EnsureNvml();

const Limits& CurrentLimits();
bool AnyMemoryLimit();
bool MemoryLimited(int dev);

// The device of the calling thread's current context, or -1.
int CurrentDevice();

// Charges `bytes` on a limited device; false = over the limit (the caller answers CUDA_ERROR_OUT_OF_MEMORY). When
// the charge does not fit, charges the driver no longer backs are given back first (ReconcileWithDriver) and the
// charge is tried once more.
bool Reserve(int dev, uint64_t bytes);
// Reserve without reconciling: for callers whose amount was computed from the ledger they hold locked.
bool ReserveExact(int dev, uint64_t bytes);
// Charges memory the driver already holds, whatever the limit (the task is then over it until it frees).
void ForceCharge(int dev, uint64_t bytes);
void Unreserve(int dev, uint64_t bytes);
inline void Unreserve(const DeviceBytes& charge) { Unreserve(charge.device, charge.bytes); }
// Records a successful allocation's charge (`pool`: the stream-ordered pool it came from, or 0).
void Remember(AllocKind kind, uint64_t handle, int dev, uint64_t bytes, uint64_t pool = 0);

// Pools, graph memory, VMM and IPC charges (memory_ledger.h), and the recursive mutex every use of it holds.
MemoryLedger& Ledger();
std::recursive_mutex& LedgerMutex();
// Gives back charges the driver no longer backs on `dev` (every device for -1): kept pool memory the driver has
// released, graph memory it has trimmed. Asks the driver (pool / graph-pool reserved bytes); defined with the hooks.
void ReconcileWithDriver(int dev);
// Same for the pools only (after a synchronisation, when pools release memory above their threshold).
void ReconcilePools(int dev);
// Removes the charge recorded for `handle` without releasing it; false when there is none.
bool TakeCharge(AllocKind kind, uint64_t handle, Charge* charge);

// Primary context footprint (charged on the first retain of a device, released on the last release).
bool RetainPrimaryContextCharge(int dev);
void ReleasePrimaryContextCharge(int dev);
void UndoPrimaryContextCharge(int dev);

uint64_t LimitBytes(int dev);
uint64_t UsedBytes(int dev);
int ListTaskProcesses(int dev, SharedRegion::ProcessUsage* out, int max);
int TaskPids(int* out, int max);

// Compute limiter: blocks the calling thread until the device's launch budget covers `blocks`.
void ThrottleLaunch(uint64_t blocks);
// A graph's work is unknown when it is launched; the controller corrects the scale.
inline constexpr uint64_t kGraphLaunchCost = 1024;
void StartCoreLimiter();
void CoreLimiterAfterFork();

// CUDA ordinal <-> NVML device (honours CUDA_VISIBLE_DEVICES given as indices or UUIDs).
int VisibleIndexOfNvmlDevice(nvmlDevice_t device);
bool NvmlDeviceOfVisibleIndex(int index, nvmlDevice_t* device);

}  // namespace xpool::vgpu
