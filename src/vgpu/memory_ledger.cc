#include "vgpu/memory_ledger.h"

#include <algorithm>

namespace xpool::vgpu {
namespace {

bool HasKept(uint64_t charge, uint64_t in_use) { return charge > in_use; }

}  // namespace

// ---------------------------------------------------------------- pools
void MemoryLedger::UpdateKept(const Pool& pool, bool had_kept) {
  bool has = HasKept(pool.charge, pool.in_use);
  if (has && !had_kept) ++kept_pools_;
  if (!has && had_kept) --kept_pools_;
}

void MemoryLedger::NotePool(uint64_t pool, int device, bool charged) {
  Pool& p = pools_[pool];
  p.device = device;
  p.charged = charged;
  p.created = true;
}

int MemoryLedger::PoolDevice(uint64_t pool, int fallback_device) const {
  auto it = pools_.find(pool);
  if (it == pools_.end() || !it->second.created) return fallback_device;
  return it->second.charged ? it->second.device : -1;
}

uint64_t MemoryLedger::PoolNeed(uint64_t pool, uint64_t bytes) const {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return bytes;
  uint64_t kept = it->second.charge - it->second.in_use;
  return bytes > kept ? bytes - kept : 0;
}

void MemoryLedger::PoolAllocated(uint64_t pool, int device, uint64_t bytes, uint64_t charged) {
  Pool& p = pools_[pool];
  bool had = HasKept(p.charge, p.in_use);
  if (p.device < 0) p.device = device;
  p.in_use += bytes;
  p.charge += charged;
  if (p.charge < p.in_use) p.charge = p.in_use;
  UpdateKept(p, had);
}

uint64_t MemoryLedger::PoolGrowth(uint64_t pool, uint64_t reserved) const {
  auto it = pools_.find(pool);
  uint64_t charge = it == pools_.end() ? 0 : it->second.charge;
  return reserved > charge ? reserved - charge : 0;
}

uint64_t MemoryLedger::PoolCharge(uint64_t pool) const {
  auto it = pools_.find(pool);
  return it == pools_.end() ? 0 : it->second.charge;
}

void MemoryLedger::PoolAddCharge(uint64_t pool, uint64_t bytes) {
  Pool& p = pools_[pool];
  bool had = HasKept(p.charge, p.in_use);
  p.charge += bytes;
  UpdateKept(p, had);
}

DeviceBytes MemoryLedger::PoolFreed(uint64_t pool, uint64_t bytes) {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return {};
  Pool& p = it->second;
  bool had = HasKept(p.charge, p.in_use);
  p.in_use = p.in_use > bytes ? p.in_use - bytes : 0;
  UpdateKept(p, had);
  if (p.destroyed && p.in_use == 0) {
    DeviceBytes release{p.device, p.charge};
    if (HasKept(p.charge, p.in_use)) --kept_pools_;
    pools_.erase(it);
    return release;
  }
  return {};
}

DeviceBytes MemoryLedger::PoolReconcile(uint64_t pool, uint64_t reserved) {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return {};
  Pool& p = it->second;
  bool had = HasKept(p.charge, p.in_use);
  uint64_t target = std::max(p.in_use, std::min(p.charge, reserved));
  DeviceBytes release{p.device, p.charge - target};
  p.charge = target;
  UpdateKept(p, had);
  return release;
}

DeviceBytes MemoryLedger::PoolDestroyed(uint64_t pool) {
  auto it = pools_.find(pool);
  if (it == pools_.end()) return {};
  Pool& p = it->second;
  if (p.in_use > 0) {
    p.destroyed = true;  // released when its last allocation is freed
    return {};
  }
  DeviceBytes release{p.device, p.charge};
  if (HasKept(p.charge, p.in_use)) --kept_pools_;
  pools_.erase(it);
  return release;
}

std::vector<uint64_t> MemoryLedger::PoolsWithKeptCharge(int device) const {
  std::vector<uint64_t> out;
  for (const auto& [handle, p] : pools_) {
    if (HasKept(p.charge, p.in_use) && (device < 0 || p.device == device)) out.push_back(handle);
  }
  return out;
}

// ---------------------------------------------------------------- graphs
std::vector<DeviceBytes> MemoryLedger::GraphInstantiateCharges(const std::vector<DeviceBytes>& needs,
                                                               const uint64_t reserved[kMaxDevices]) const {
  std::vector<DeviceBytes> out;
  for (const DeviceBytes& need : needs) {
    if (need.device < 0 || need.device >= kMaxDevices || need.bytes == 0) continue;
    uint64_t target = std::max(graph_needs_[need.device] + need.bytes, reserved[need.device]);
    uint64_t charge = graph_charge_[need.device];
    if (target > charge) out.push_back(DeviceBytes{need.device, target - charge});
  }
  return out;
}

void MemoryLedger::GraphInstantiated(uint64_t exec, const std::vector<DeviceBytes>& needs,
                                     const std::vector<DeviceBytes>& charged) {
  for (const DeviceBytes& need : needs) {
    if (need.device >= 0 && need.device < kMaxDevices) graph_needs_[need.device] += need.bytes;
  }
  for (const DeviceBytes& c : charged) {
    if (c.device >= 0 && c.device < kMaxDevices) graph_charge_[c.device] += c.bytes;
  }
  if (!needs.empty()) execs_[exec] = needs;
}

std::vector<int> MemoryLedger::GraphExecDestroyed(uint64_t exec) {
  std::vector<int> devices;
  auto it = execs_.find(exec);
  if (it == execs_.end()) return devices;
  for (const DeviceBytes& need : it->second) {
    if (need.device < 0 || need.device >= kMaxDevices) continue;
    graph_needs_[need.device] -= std::min(graph_needs_[need.device], need.bytes);
    devices.push_back(need.device);
  }
  execs_.erase(it);
  return devices;
}

DeviceBytes MemoryLedger::GraphReconcile(int device, uint64_t reserved) {
  if (device < 0 || device >= kMaxDevices) return {};
  uint64_t target = std::max(graph_needs_[device], reserved);
  if (target >= graph_charge_[device]) return {};
  DeviceBytes release{device, graph_charge_[device] - target};
  graph_charge_[device] = target;
  return release;
}

uint64_t MemoryLedger::GraphCharged(int device) const {
  return device >= 0 && device < kMaxDevices ? graph_charge_[device] : 0;
}

// ---------------------------------------------------------------- VMM
void MemoryLedger::VmmCreated(uint64_t handle, int device, uint64_t charged) {
  uint64_t id = next_alloc_++;
  VmmAlloc& a = vmm_allocs_[id];
  a.device = device;
  a.charge = charged;
  a.handle_refs = 1;
  vmm_handles_[handle] = id;
}

void MemoryLedger::VmmImported(uint64_t handle) {
  auto it = vmm_handles_.find(handle);
  if (it != vmm_handles_.end()) {  // the same allocation imported again: one more reference
    ++vmm_allocs_[it->second].handle_refs;
    return;
  }
  VmmCreated(handle, -1, 0);
  vmm_allocs_[vmm_handles_[handle]].imported = true;
}

void MemoryLedger::VmmExported(uint64_t handle) {
  auto it = vmm_handles_.find(handle);
  if (it != vmm_handles_.end()) vmm_allocs_[it->second].exported = true;
}

void MemoryLedger::VmmRetained(uint64_t handle, uint64_t address) {
  auto it = vmm_handles_.find(handle);
  if (it != vmm_handles_.end()) {
    ++vmm_allocs_[it->second].handle_refs;
    return;
  }
  // The handle was released while the memory stayed mapped: find the allocation by its mapping.
  auto m = vmm_mappings_.upper_bound(address);
  if (m == vmm_mappings_.begin()) return;
  --m;
  if (address >= m->first + m->second.size) return;
  vmm_handles_[handle] = m->second.alloc;
  ++vmm_allocs_[m->second.alloc].handle_refs;
}

uint64_t MemoryLedger::VmmMapNeed(uint64_t handle, uint64_t offset, uint64_t size) const {
  auto it = vmm_handles_.find(handle);
  if (it == vmm_handles_.end()) return 0;
  const VmmAlloc& a = vmm_allocs_.at(it->second);
  if (!a.imported) return 0;
  uint64_t extent = offset + size < offset ? UINT64_MAX : offset + size;
  return extent > a.charge ? extent - a.charge : 0;
}

void MemoryLedger::VmmMapped(uint64_t address, uint64_t size, uint64_t handle, int device, uint64_t added_charge) {
  auto it = vmm_handles_.find(handle);
  if (it == vmm_handles_.end()) return;
  VmmAlloc& a = vmm_allocs_[it->second];
  ++a.mappings;
  if (added_charge > 0) {
    if (a.device < 0) a.device = device;
    a.charge += added_charge;
  }
  vmm_mappings_[address] = Mapping{size, it->second};
}

DeviceBytes MemoryLedger::VmmMaybeFree(uint64_t id) {
  auto it = vmm_allocs_.find(id);
  if (it == vmm_allocs_.end()) return {};
  const VmmAlloc& a = it->second;
  if (a.handle_refs > 0 || a.mappings > 0) return {};
  // Exported memory may be held by another process: it stays charged until this one exits.
  DeviceBytes release = a.exported ? DeviceBytes{} : DeviceBytes{a.device, a.charge};
  vmm_allocs_.erase(it);
  return release;
}

DeviceBytes MemoryLedger::VmmReleased(uint64_t handle, bool* known) {
  auto it = vmm_handles_.find(handle);
  *known = it != vmm_handles_.end();
  if (!*known) return {};
  uint64_t id = it->second;
  VmmAlloc& a = vmm_allocs_[id];
  if (--a.handle_refs <= 0) {
    a.handle_refs = 0;
    vmm_handles_.erase(it);  // the driver may hand the same handle value out again
  }
  return VmmMaybeFree(id);
}

std::vector<DeviceBytes> MemoryLedger::VmmUnmapped(uint64_t address, uint64_t size) {
  std::vector<DeviceBytes> out;
  uint64_t end = address + size < address ? UINT64_MAX : address + size;
  // A mapping that starts before `address` but overlaps it is unmapped too.
  auto it = vmm_mappings_.upper_bound(address);
  if (it != vmm_mappings_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second.size > address) it = prev;
  }
  while (it != vmm_mappings_.end() && it->first < end) {
    uint64_t id = it->second.alloc;
    it = vmm_mappings_.erase(it);
    auto a = vmm_allocs_.find(id);
    if (a == vmm_allocs_.end()) continue;
    if (a->second.mappings > 0) --a->second.mappings;
    DeviceBytes release = VmmMaybeFree(id);
    if (release.bytes > 0) out.push_back(release);
  }
  return out;
}

// ---------------------------------------------------------------- IPC
bool MemoryLedger::IpcOpenedAgain(uint64_t address) {
  auto it = ipc_.find(address);
  if (it == ipc_.end()) return false;
  ++it->second.refs;
  return true;
}

void MemoryLedger::IpcOpened(uint64_t address, int device, uint64_t charged) {
  Ipc& ipc = ipc_[address];
  ipc.refs = 1;
  ipc.charge = DeviceBytes{device, charged};
}

DeviceBytes MemoryLedger::IpcClosed(uint64_t address, bool* known) {
  auto it = ipc_.find(address);
  *known = it != ipc_.end();
  if (!*known) return {};
  if (--it->second.refs > 0) return {};
  DeviceBytes release = it->second.charge;
  ipc_.erase(it);
  return release;
}

void MemoryLedger::Clear() {
  pools_.clear();
  kept_pools_ = 0;
  execs_.clear();
  for (int d = 0; d < kMaxDevices; ++d) graph_needs_[d] = graph_charge_[d] = 0;
  vmm_handles_.clear();
  vmm_allocs_.clear();
  vmm_mappings_.clear();
  ipc_.clear();
}

}  // namespace xpool::vgpu
