#include "vgpu/alloc_tracker.h"

namespace xpool::vgpu {

void AllocTracker::Add(AllocKind kind, uint64_t handle, Charge charge) {
  std::lock_guard<std::mutex> lock(mutex_);
  maps_[static_cast<int>(kind)][handle] = charge;
}

bool AllocTracker::Take(AllocKind kind, uint64_t handle, Charge* charge) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& map = maps_[static_cast<int>(kind)];
  auto it = map.find(handle);
  if (it == map.end()) return false;
  *charge = it->second;
  map.erase(it);
  return true;
}

size_t AllocTracker::size(AllocKind kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  return maps_[static_cast<int>(kind)].size();
}

void AllocTracker::Clear() {
  // Called in a fork child, where another thread may have held the mutex at fork time: re-create it.
  new (&mutex_) std::mutex();
  for (auto& map : maps_) map.clear();
}

}  // namespace xpool::vgpu
