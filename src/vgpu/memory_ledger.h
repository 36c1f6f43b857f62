// What a process's memory is charged for beyond one allocation = one charge: memory that stream-ordered pools keep
// after a free, graph memory that instantiated graphs may use and the device's graph pool keeps, virtual-memory
// (VMM) allocations that stay alive while mapped or retained, and memory imported from another process. The ledger
// only does the arithmetic: callers charge and release the amounts it returns on the task's shared region, and feed
// it what the driver reports (a pool's or the graph pool's reserved bytes), which is the truth it reconciles with.
//
// Pools: a pool's charge is what it holds, in use or kept. A free moves bytes from in-use to kept (the charge stays);
// an allocation from the pool draws on the kept charge first; kept charge goes only when the driver reports that the
// pool released memory. Graphs: an instantiated graph is charged the sum of its allocation nodes; the device's graph
// charge never drops below what the driver says the graph pool reserves. VMM: an allocation stays charged while any
// handle to it or any mapping of it lives; an exported one stays charged until the process exits (another process
// may hold it); an imported one is charged when it is first mapped. IPC: a mapping is charged once per pointer,
// however often it is opened, and released at its last close.
//
// Owned by the runtime (one per process). Thread-compatible: the runtime serialises every call with one mutex.
#pragma once

#include <stdint.h>

#include <map>
#include <unordered_map>
#include <vector>

#include "vgpu/limits.h"

namespace xpool::vgpu {

// An amount of memory to charge or release on a device.
struct DeviceBytes {
  int device = -1;
  uint64_t bytes = 0;
};

class MemoryLedger {
 public:
  // ---------------------------------------------------------------- stream-ordered pools
  // A pool created by the process; `charged` is false for pools of host memory (never charged).
  void NotePool(uint64_t pool, int device, bool charged);
  // The device an allocation from `pool` is charged to, or -1 when the pool holds host memory. Pools the process
  // did not create (a device's default pool) are device pools of `fallback_device`.
  int PoolDevice(uint64_t pool, int fallback_device) const;
  // Bytes to charge before allocating `bytes` from `pool` (what its kept charge does not cover).
  uint64_t PoolNeed(uint64_t pool, uint64_t bytes) const;
  // The allocation succeeded; `charged` bytes were charged for it (PoolNeed's answer).
  void PoolAllocated(uint64_t pool, int device, uint64_t bytes, uint64_t charged);
  // The driver holds `reserved` bytes for the pool: the growth beyond its charge (to charge now), or 0.
  uint64_t PoolGrowth(uint64_t pool, uint64_t reserved) const;
  // What the pool is charged (in use and kept).
  uint64_t PoolCharge(uint64_t pool) const;
  void PoolAddCharge(uint64_t pool, uint64_t bytes);
  // An allocation of `bytes` from `pool` was freed. Returns what to release now (only when a destroyed pool
  // has drained); otherwise the bytes stay charged as kept.
  DeviceBytes PoolFreed(uint64_t pool, uint64_t bytes);
  // The driver reports the pool holds `reserved` bytes: the kept charge it no longer backs, to release.
  DeviceBytes PoolReconcile(uint64_t pool, uint64_t reserved);
  // The pool was destroyed: what to release now (its kept charge once nothing of it is in use).
  DeviceBytes PoolDestroyed(uint64_t pool);
  // Pools on `device` (any device for -1) whose charge exceeds what is in use.
  std::vector<uint64_t> PoolsWithKeptCharge(int device) const;
  bool AnyKeptCharge() const { return kept_pools_ > 0; }

  // ---------------------------------------------------------------- graph memory
  // Charges needed to instantiate a graph whose allocation nodes need `needs` (per device), given what the
  // driver says each device's graph pool reserves (`reserved[d]`, 0 when unknown).
  std::vector<DeviceBytes> GraphInstantiateCharges(const std::vector<DeviceBytes>& needs,
                                                   const uint64_t reserved[kMaxDevices]) const;
  void GraphInstantiated(uint64_t exec, const std::vector<DeviceBytes>& needs, const std::vector<DeviceBytes>& charged);
  // The exec was destroyed; its needs no longer count. Call GraphReconcile for the devices it used.
  std::vector<int> GraphExecDestroyed(uint64_t exec);
  // The driver reports the device's graph pool reserves `reserved`: the charge no live exec and no reserved memory
  // backs, to release.
  DeviceBytes GraphReconcile(int device, uint64_t reserved);
  uint64_t GraphCharged(int device) const;

  // ---------------------------------------------------------------- VMM (cuMemCreate / cuMemMap family)
  // A new allocation behind `handle`; `charged` bytes on `device` (0 / -1 when not charged, e.g. host memory).
  void VmmCreated(uint64_t handle, int device, uint64_t charged);
  // A handle imported from another process (size unknown until mapped).
  void VmmImported(uint64_t handle);
  void VmmExported(uint64_t handle);
  // Another reference to the allocation behind `handle` (cuMemRetainAllocationHandle on `address`).
  void VmmRetained(uint64_t handle, uint64_t address);
  // The charge a mapping of an imported allocation still needs (extent offset+size beyond its charge), or 0.
  uint64_t VmmMapNeed(uint64_t handle, uint64_t offset, uint64_t size) const;
  void VmmMapped(uint64_t address, uint64_t size, uint64_t handle, int device, uint64_t added_charge);
  // Releases a handle reference; returns the charge to release when nothing keeps the allocation alive.
  DeviceBytes VmmReleased(uint64_t handle, bool* known);
  // Unmaps [address, address+size); returns the charges of allocations that nothing keeps alive any more.
  std::vector<DeviceBytes> VmmUnmapped(uint64_t address, uint64_t size);

  // ---------------------------------------------------------------- IPC (cuIpcOpenMemHandle)
  // True when `address` is already open (another reference, no new charge).
  bool IpcOpenedAgain(uint64_t address);
  void IpcOpened(uint64_t address, int device, uint64_t charged);
  // Drops a reference; returns the charge to release at the last close (bytes 0 otherwise).
  DeviceBytes IpcClosed(uint64_t address, bool* known);

  // After fork() in the child: nothing of the parent's belongs to it.
  void Clear();

 private:
  struct Pool {
    int device = -1;
    bool charged = true;  // false: host memory
    bool created = false;
    bool destroyed = false;
    uint64_t in_use = 0;
    uint64_t charge = 0;  // >= in_use; the rest is kept
  };
  struct VmmAlloc {
    int device = -1;
    uint64_t charge = 0;
    int handle_refs = 0;
    int mappings = 0;
    bool imported = false;
    bool exported = false;
  };
  struct Mapping {
    uint64_t size;
    uint64_t alloc;
  };
  struct Ipc {
    int refs = 0;
    DeviceBytes charge;
  };

  void UpdateKept(const Pool& before_pool, bool had_kept);
  DeviceBytes VmmMaybeFree(uint64_t alloc);

  std::unordered_map<uint64_t, Pool> pools_;
  int kept_pools_ = 0;
  std::unordered_map<uint64_t, std::vector<DeviceBytes>> execs_;
  uint64_t graph_needs_[kMaxDevices] = {};
  uint64_t graph_charge_[kMaxDevices] = {};
  std::unordered_map<uint64_t, uint64_t> vmm_handles_;  // handle -> allocation id
  std::unordered_map<uint64_t, VmmAlloc> vmm_allocs_;
  std::map<uint64_t, Mapping> vmm_mappings_;  // by address
  uint64_t next_alloc_ = 1;
  std::unordered_map<uint64_t, Ipc> ipc_;
};

}  // namespace xpool::vgpu
