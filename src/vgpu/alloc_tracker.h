// Remembers, per process, what each live allocation was charged (device and bytes) so that the matching free
// releases exactly that charge. Handles of different kinds (device pointers, arrays, VMM handles, contexts) live
// in separate maps because their numeric values may collide. Owned by the runtime; thread-safe (one mutex).
#pragma once

#include <stdint.h>

#include <mutex>
#include <unordered_map>

namespace xpool::vgpu {

enum class AllocKind : int { kLinear = 0, kArray, kMipmappedArray, kVmmHandle, kContext, kCount };

struct Charge {
  int device = -1;
  uint64_t bytes = 0;
  uint64_t pool = 0;  // the stream-ordered pool it came from (its free keeps the charge in the pool), or 0
};

class AllocTracker {
 public:
  void Add(AllocKind kind, uint64_t handle, Charge charge);
  // Removes and returns the charge of `handle`; false when it was never charged.
  bool Take(AllocKind kind, uint64_t handle, Charge* charge);
  size_t size(AllocKind kind);
  // After fork() in the child: the parent's allocations are not the child's.
  void Clear();

 private:
  std::mutex mutex_;
  std::unordered_map<uint64_t, Charge> maps_[static_cast<int>(AllocKind::kCount)];
};

}  // namespace xpool::vgpu
