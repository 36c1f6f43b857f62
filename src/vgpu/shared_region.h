// A task's shared accounting region: a small file (named by XPOOL_SHARED_REGION, or placed in XPOOL_SHARED_REGION_DIR)
// that every process of the task maps, holding a versioned header, a process-shared robust mutex and one slot per
// process (pid, its pid namespace, process start time, bytes charged per device). The memory limit is enforced here
// as one check-and-add under that mutex, so racing processes can never together exceed it.
//
// A process killed even by SIGKILL leaves its slot behind; the slot is reclaimed when a charge would otherwise fail
// (and when a slot is needed, and by queries). Liveness does not depend on pids, which mean nothing across pid
// namespaces (containers of a pod sharing a host-path region, or the node reading it): each attached process holds
// an open-file-description lock on its slot's byte of the file, which the kernel drops when the process dies, and
// any process that can open the file sees whether it is held. Within one pid namespace a slot is also dead when its
// pid is gone or belongs to a process with another start time (pid reuse). A file with the wrong magic, version,
// geometry or task identity is refused; the caller then falls back to a private region (OpenPrivate), i.e.
// per-process enforcement.
//
// Owned by the runtime (one per process). Thread-safe: every operation takes the region's mutex.
#pragma once

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu/limits.h"

namespace xpool::vgpu {

inline constexpr char kRegionMagic[8] = {'X', 'P', 'V', 'G', 'P', 'U', 'R', '\x01'};
inline constexpr uint32_t kRegionVersion = 2;
// Slot i is held alive by a lock on byte kRegionLockBase + i of the file (beyond the mapped data).
inline constexpr uint64_t kRegionLockBase = 1ull << 30;
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
  int32_t pid;  // in the process's own pid namespace
  uint32_t in_use;
  uint64_t start_time;     // clock ticks since boot (/proc/<pid>/stat field 22): tells a reused pid apart
  uint64_t pid_namespace;  // inode of /proc/<pid>/ns/pid (0: unknown)
  uint32_t locked;         // 1: the process holds its slot's lock (liveness by lock)
  uint32_t reserved;
  uint64_t used[kMaxDevices];
};

// Start time of a process (field 22 of /proc/<pid>/stat), or 0 when it does not exist / cannot be read.
uint64_t ProcessStartTime(int pid);
// True when `pid` runs and (if start_time != 0) is the same process that was recorded.
bool ProcessIsAlive(int pid, uint64_t start_time);
// Inode of this process's pid namespace (/proc/self/ns/pid), or 0.
uint64_t OwnPidNamespace();
// Whether slot `index` of the region open as `fd` is held by a live process's lock: 1 held, 0 not, -1 unknown.
int SlotLockHeld(int fd, int index);

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
  // After fork() in the child: the inherited slot (and its lock) belong to the parent; the child opens the file
  // anew so that its own slot's lock is its own.
  void ForgetSlot();
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
  // Tests: the pid namespace this process records (as if it ran in another container).
  void set_pid_namespace(uint64_t ns) { pid_namespace_ = ns; }

 private:
  bool Lock();
  void Unlock();
  uint64_t SumLocked(int dev) const;
  int ReclaimDeadLocked();
  bool SlotAlive(int index) const;
  bool LockSlot(int index);
  int SlotEnd() const;
  void InitHeader(const char* identity, size_t bytes, bool shared);

  RegionHeader* header_ = nullptr;
  RegionSlot* slots_ = nullptr;
  size_t bytes_ = 0;
  int slot_ = -1;
  bool shared_ = false;
  int fd_ = -1;  // shared regions: kept open (O_CLOEXEC) to hold this process's slot lock
  char path_[4096] = {0};
  uint64_t pid_namespace_ = OwnPidNamespace();
  LivenessCheck liveness_ = &ProcessIsAlive;
};

}  // namespace xpool::vgpu
