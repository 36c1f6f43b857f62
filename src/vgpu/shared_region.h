// A task's shared accounting region: a small file (named by XPOOL_SHARED_REGION) that every process of the task
// maps, holding a versioned header, a process-shared robust mutex and one slot per process (pid, process start
// time, bytes charged per device). The memory limit is enforced here as one check-and-add under that mutex, so
// racing processes can never together exceed it.
//
// A process killed even by SIGKILL leaves its slot behind; the slot is reclaimed when a charge would otherwise fail
// (and when a slot is needed), after checking that its pid is gone or now belongs to a process with another start
// time (pid reuse). A file with the wrong magic, version, geometry or task identity is refused; the caller then
// falls back to a private region (OpenPrivate), i.e. per-process enforcement.
//
// Owned by the runtime (one per process). Thread-safe: every operation takes the region's mutex.
#pragma once

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/limits.h"

namespace xpool::vgpu {

inline constexpr uint32_t kRegionVersion = 1;
inline constexpr int kRegionSlots = 256;
inline constexpr int kRegionIdentityBytes = 128;

struct RegionHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;
  uint32_t slot_bytes;
  uint32_t slot_count;
  uint32_t device_count;
  uint32_t slot_high;  // slots at or above this index have never been used: scans stop here
  uint64_t file_bytes;
  char identity[kRegionIdentityBytes];
  pthread_mutex_t mutex;
  uint64_t reserved[8];
};

struct RegionSlot {
  int32_t pid;
  uint32_t in_use;
  uint64_t start_time;  // clock ticks since boot (/proc/<pid>/stat field 22): tells a reused pid apart
  uint64_t used[kMaxDevices];
};

// Start time of a process (field 22 of /proc/<pid>/stat), or 0 when it does not exist / cannot be read.
uint64_t ProcessStartTime(int pid);
// True when `pid` runs and (if start_time != 0) is the same process that was recorded.
bool ProcessIsAlive(int pid, uint64_t start_time);

class SharedRegion {
 public:
  enum class OpenStatus { kOk, kCorrupt, kForeign, kIoError };
  struct ProcessUsage {
    int pid;
    uint64_t bytes;
  };
  using LivenessCheck = bool (*)(int pid, uint64_t start_time);

  SharedRegion() = default;
  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  // Maps (creating and initialising if empty) the file at `path` for the task `identity`. On failure the region
  // stays closed and `why` says what was wrong.
  OpenStatus OpenFile(const char* path, const char* identity, char* why, size_t why_len);
  // An anonymous region private to this process (per-process enforcement).
  bool OpenPrivate();
  bool is_open() const { return header_ != nullptr; }
  bool is_shared() const { return shared_; }

  // Claims a slot for this process; reclaims dead processes' slots if none is free. A slot already recorded for
  // the same pid and start time (the process exec()ed) is taken over with its charges cleared.
  bool Attach(int pid, uint64_t start_time);
  // Frees this process's slot (its charges go back to the task).
  void Detach();
  // After fork() in the child: the inherited slot belongs to the parent.
  void ForgetSlot() { slot_ = -1; }
  bool attached() const { return slot_ >= 0; }

  // Adds `bytes` to this process's charge on `dev` if the whole task's charge stays <= limit.
  bool TryCharge(int dev, uint64_t bytes, uint64_t limit);
  void Release(int dev, uint64_t bytes);
  // Bytes charged on `dev` by all live slots of the task.
  uint64_t Used(int dev);
  // Processes of the task with a charge on `dev` (or, for dev < 0, every attached process).
  int ListProcesses(int dev, ProcessUsage* out, int max);
  // Frees the slots of processes that are gone; returns how many.
  int ReclaimDead();

  void set_liveness_check(LivenessCheck check) { liveness_ = check; }

 private:
  bool Lock();
  void Unlock();
  uint64_t SumLocked(int dev) const;
  int ReclaimDeadLocked();
  int SlotEnd() const;
  void InitHeader(const char* identity, size_t bytes, bool shared);

  RegionHeader* header_ = nullptr;
  RegionSlot* slots_ = nullptr;
  size_t bytes_ = 0;
  int slot_ = -1;
  bool shared_ = false;
  LivenessCheck liveness_ = &ProcessIsAlive;
};

}  // namespace xpool::vgpu
