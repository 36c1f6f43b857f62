#include "vgpu/shared_region.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace xpool::vgpu {
namespace {

constexpr const char (&kMagic)[8] = kRegionMagic;

size_t RegionBytes() { return sizeof(RegionHeader) + sizeof(RegionSlot) * kRegionSlots; }

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

void Say(char* why, size_t why_len, const char* text) {
  if (why != nullptr && why_len > 0) snprintf(why, why_len, "%s", text);
}

}  // namespace

uint64_t ProcessStartTime(int pid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* p = strrchr(buf, ')');  // the command name may contain spaces and parentheses
  if (p == nullptr) return 0;
  ++p;
  // Fields after ")": state is field 3; starttime is field 22, i.e. the 20th token from here.
  for (int field = 3; field < 22; ++field) {
    while (*p == ' ') ++p;
    while (*p != ' ' && *p != '\0') ++p;
    if (*p == '\0') return 0;
  }
  while (*p == ' ') ++p;
  uint64_t value = 0;
  while (*p >= '0' && *p <= '9') value = value * 10 + static_cast<uint64_t>(*p++ - '0');
  return value;
}

uint64_t OwnPidNamespace() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

int SlotLockHeld(int fd, int index) {
  if (fd < 0 || index < 0) return -1;
  struct flock probe;
  memset(&probe, 0, sizeof(probe));
  probe.l_type = F_RDLCK;  // conflicts with the holder's write lock; needs no write access to ask
  probe.l_whence = SEEK_SET;
  probe.l_start = static_cast<off_t>(kRegionLockBase + static_cast<uint64_t>(index));
  probe.l_len = 1;
  if (fcntl(fd, F_OFD_GETLK, &probe) != 0) return -1;
  return probe.l_type == F_UNLCK ? 0 : 1;
}

bool ProcessIsAlive(int pid, uint64_t start_time) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  if (start_time == 0) return true;
  uint64_t now = ProcessStartTime(pid);
  // Unreadable /proc: trust kill(); readable: the pid must still be the process we recorded.
  return now == 0 || now == start_time;
}

SharedRegion::~SharedRegion() {
  if (header_ != nullptr) munmap(header_, bytes_);
  if (fd_ >= 0) close(fd_);
}

void SharedRegion::InitHeader(const char* identity, size_t bytes, bool shared) {
  memset(header_, 0, bytes);
  header_->version = kRegionVersion;
  header_->header_bytes = sizeof(RegionHeader);
  header_->slot_bytes = sizeof(RegionSlot);
  header_->slot_count = kRegionSlots;
  header_->device_count = kMaxDevices;
  header_->file_bytes = bytes;
  snprintf(header_->identity, sizeof(header_->identity), "%s", identity);
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  if (shared) pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&header_->mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  memcpy(header_->magic, kMagic, sizeof(kMagic));  // last: a half-initialised file is never valid
}

SharedRegion::OpenStatus SharedRegion::OpenFile(const char* path, const char* identity, char* why, size_t why_len) {
  if (header_ != nullptr) return OpenStatus::kOk;
  if (path == nullptr || *path == '\0') {
    Say(why, why_len, "empty path");
    return OpenStatus::kIoError;
  }
  if (identity == nullptr) identity = "";
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    Say(why, why_len, strerror(errno));
    return OpenStatus::kIoError;
  }
  // flock serialises creation between processes of the task; it is released even if we die holding it.
  if (flock(fd, LOCK_EX) != 0) {
    Say(why, why_len, strerror(errno));
    close(fd);
    return OpenStatus::kIoError;
  }
  OpenStatus status = OpenStatus::kOk;
  const size_t bytes = RegionBytes();
  struct stat st;
  bool fresh = false;
  if (fstat(fd, &st) != 0) {
    Say(why, why_len, strerror(errno));
    status = OpenStatus::kIoError;
  } else if (st.st_size == 0) {
    fresh = true;
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      Say(why, why_len, strerror(errno));
      status = OpenStatus::kIoError;
    }
  } else if (static_cast<size_t>(st.st_size) != bytes) {
    Say(why, why_len, "file size does not match this region version");
    status = OpenStatus::kCorrupt;
  }
  void* mem = MAP_FAILED;
  if (status == OpenStatus::kOk) {
    mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED) {
      Say(why, why_len, strerror(errno));
      status = OpenStatus::kIoError;
    }
  }
  if (status == OpenStatus::kOk) {
    header_ = static_cast<RegionHeader*>(mem);
    bytes_ = bytes;
    if (fresh) {
      InitHeader(identity, bytes, /*shared=*/true);
    } else if (memcmp(header_->magic, kMagic, sizeof(kMagic)) != 0 || header_->version != kRegionVersion ||
               header_->header_bytes != sizeof(RegionHeader) || header_->slot_bytes != sizeof(RegionSlot) ||
               header_->slot_count != kRegionSlots || header_->device_count != kMaxDevices ||
               header_->file_bytes != bytes) {
      Say(why, why_len, "bad magic, version or geometry");
      status = OpenStatus::kCorrupt;
    } else if (strncmp(header_->identity, identity, sizeof(header_->identity)) != 0) {
      char text[300];
      snprintf(text, sizeof(text), "region belongs to task '%.*s', not '%s'", kRegionIdentityBytes, header_->identity,
               identity);
      Say(why, why_len, text);
      status = OpenStatus::kForeign;
    }
    if (status != OpenStatus::kOk) {
      munmap(mem, bytes);
      header_ = nullptr;
      bytes_ = 0;
    }
  }
  flock(fd, LOCK_UN);
  if (status == OpenStatus::kOk) {
    slots_ = reinterpret_cast<RegionSlot*>(reinterpret_cast<char*>(header_) + sizeof(RegionHeader));
    shared_ = true;
    fd_ = fd;  // kept open: it holds this process's slot lock
    snprintf(path_, sizeof(path_), "%s", path);
  } else {
    close(fd);
  }
  return status;
}

bool SharedRegion::OpenPrivate() {
  if (header_ != nullptr) return true;
  const size_t bytes = RegionBytes();
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return false;
  header_ = static_cast<RegionHeader*>(mem);
  bytes_ = bytes;
  InitHeader("", bytes, /*shared=*/false);
  slots_ = reinterpret_cast<RegionSlot*>(reinterpret_cast<char*>(header_) + sizeof(RegionHeader));
  shared_ = false;
  return true;
}

bool SharedRegion::Lock() {
  int rc = pthread_mutex_lock(&header_->mutex);
  if (rc == EOWNERDEAD) {
    // The holder died mid-update. Slots are updated one field at a time, and the dead holder's slot is
    // reclaimed by the liveness check, so the state is usable as is.
    pthread_mutex_consistent(&header_->mutex);
    return true;
  }
  return rc == 0;
}

void SharedRegion::Unlock() { pthread_mutex_unlock(&header_->mutex); }

int SharedRegion::SlotEnd() const {
  uint32_t high = header_->slot_high;
  return high > static_cast<uint32_t>(kRegionSlots) ? kRegionSlots : static_cast<int>(high);
}

bool SharedRegion::LockSlot(int index) {
  if (fd_ < 0) return false;
  struct flock lock;
  memset(&lock, 0, sizeof(lock));
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = static_cast<off_t>(kRegionLockBase + static_cast<uint64_t>(index));
  lock.l_len = 1;
  return fcntl(fd_, F_OFD_SETLK, &lock) == 0;
}

bool SharedRegion::SlotAlive(int index) const {
  const RegionSlot& s = slots_[index];
  if (s.locked != 0 && SlotLockHeld(fd_, index) == 0) return false;  // its holder is gone, in any namespace
  // Pids can be checked only in the namespace they were recorded in; elsewhere the lock is the only evidence.
  bool same_namespace = s.pid_namespace == 0 || pid_namespace_ == 0 || s.pid_namespace == pid_namespace_;
  if (!same_namespace) return true;
  return liveness_(s.pid, s.start_time);
}

bool SharedRegion::Attach(int pid, uint64_t start_time) {
  if (header_ == nullptr) return false;
  if (slot_ >= 0) return true;
  if (!Lock()) return false;
  // The same process may attach again after exec() (same pid, namespace and start time, destructors never ran):
  // the old image's allocations died with it, so its slot is taken over with a clean charge.
  for (int i = 0, end = SlotEnd(); i < end && slot_ < 0; ++i) {
    RegionSlot& s = slots_[i];
    if (s.in_use != 0 && s.pid == pid && s.start_time == start_time && start_time != 0 &&
        s.pid_namespace == pid_namespace_) {
      memset(s.used, 0, sizeof(s.used));
      s.locked = LockSlot(i) ? 1 : 0;
      slot_ = i;
    }
  }
  for (int pass = 0; pass < 2 && slot_ < 0; ++pass) {
    if (pass == 1) ReclaimDeadLocked();
    for (int i = 0; i < kRegionSlots; ++i) {
      if (slots_[i].in_use != 0) continue;
      // A free slot whose lock is still held belongs to a process that is detaching: leave it.
      if (SlotLockHeld(fd_, i) == 1) continue;
      RegionSlot& s = slots_[i];
      memset(&s, 0, sizeof(s));
      s.pid = pid;
      s.start_time = start_time;
      s.pid_namespace = pid_namespace_;
      s.locked = LockSlot(i) ? 1 : 0;
      s.in_use = 1;
      slot_ = i;
      if (header_->slot_high < static_cast<uint32_t>(i + 1)) header_->slot_high = static_cast<uint32_t>(i + 1);
      break;
    }
  }
  Unlock();
  return slot_ >= 0;
}

void SharedRegion::ForgetSlot() {
  slot_ = -1;
  if (fd_ < 0) return;
  close(fd_);  // the parent's lock lives on in the parent's descriptor
  fd_ = open(path_, O_RDWR | O_CLOEXEC);
}

void SharedRegion::Detach() {
  if (header_ == nullptr || slot_ < 0) return;
  if (Lock()) {
    memset(&slots_[slot_], 0, sizeof(RegionSlot));
    if (fd_ >= 0) {
      struct flock unlock;
      memset(&unlock, 0, sizeof(unlock));
      unlock.l_type = F_UNLCK;
      unlock.l_whence = SEEK_SET;
      unlock.l_start = static_cast<off_t>(kRegionLockBase + static_cast<uint64_t>(slot_));
      unlock.l_len = 1;
      fcntl(fd_, F_OFD_SETLK, &unlock);
    }
    Unlock();
  }
  slot_ = -1;
}

uint64_t SharedRegion::SumLocked(int dev) const {
  uint64_t sum = 0;
  for (int i = 0, end = SlotEnd(); i < end; ++i) {
    if (slots_[i].in_use != 0) sum = SaturatingAdd(sum, slots_[i].used[dev]);
  }
  return sum;
}

int SharedRegion::ReclaimDeadLocked() {
  int reclaimed = 0;
  for (int i = 0, end = SlotEnd(); i < end; ++i) {
    RegionSlot& s = slots_[i];
    if (s.in_use == 0 || i == slot_) continue;
    if (!SlotAlive(i)) {
      memset(&s, 0, sizeof(s));
      ++reclaimed;
    }
  }
  return reclaimed;
}

int SharedRegion::ReclaimDead() {
  if (header_ == nullptr || !Lock()) return 0;
  int reclaimed = ReclaimDeadLocked();
  Unlock();
  return reclaimed;
}

bool SharedRegion::TryCharge(int dev, uint64_t bytes, uint64_t limit) {
  if (header_ == nullptr || slot_ < 0 || dev < 0 || dev >= kMaxDevices || bytes > limit) return false;
  if (!Lock()) return false;
  uint64_t used = SumLocked(dev);
  if (used > limit - bytes && ReclaimDeadLocked() > 0) used = SumLocked(dev);
  bool ok = used <= limit - bytes;
  if (ok) slots_[slot_].used[dev] += bytes;
  Unlock();
  return ok;
}

void SharedRegion::Release(int dev, uint64_t bytes) {
  if (header_ == nullptr || slot_ < 0 || dev < 0 || dev >= kMaxDevices) return;
  if (!Lock()) return;
  uint64_t& used = slots_[slot_].used[dev];
  used = used > bytes ? used - bytes : 0;
  Unlock();
}

uint64_t SharedRegion::Used(int dev) {
  if (header_ == nullptr || dev < 0 || dev >= kMaxDevices || !Lock()) return 0;
  ReclaimDeadLocked();  // queries are rare; report what the live processes hold
  uint64_t used = SumLocked(dev);
  Unlock();
  return used;
}

int SharedRegion::ListProcesses(int dev, ProcessUsage* out, int max) {
  if (header_ == nullptr || dev >= kMaxDevices || !Lock()) return 0;
  ReclaimDeadLocked();
  int n = 0;
  for (int i = 0, end = SlotEnd(); i < end; ++i) {
    const RegionSlot& s = slots_[i];
    if (s.in_use == 0) continue;
    uint64_t bytes = dev >= 0 ? s.used[dev] : 0;
    if (dev >= 0 && bytes == 0) continue;
    if (n < max) out[n] = ProcessUsage{s.pid, bytes};
    ++n;
  }
  Unlock();
  return n;
}

}  // namespace xpool::vgpu
