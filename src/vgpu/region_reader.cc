#include "vgpu/region_reader.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vgpu/shared_region.h"

namespace xpool::vgpu {
namespace {

template <typename T>
T Load(const T& field) {
  return __atomic_load_n(&field, __ATOMIC_RELAXED);
}

bool EndsWith(const std::string& s, const char* suffix) {
  size_t n = strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// The last pid on the "NSpid:" line of /proc/<pid>/status: the process's pid in its own (innermost) namespace.
int InnermostPid(int host_pid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/status", host_pid);
  FILE* f = fopen(path, "re");
  if (f == nullptr) return 0;
  char line[256];
  int inner = 0;
  while (fgets(line, sizeof(line), f) != nullptr) {
    if (strncmp(line, "NSpid:", 6) != 0) continue;
    for (char* p = line + 6; *p != '\0';) {
      char* end = nullptr;
      long v = strtol(p, &end, 10);
      if (end == p) break;
      inner = static_cast<int>(v);
      p = end;
    }
    break;
  }
  fclose(f);
  return inner;
}

void Scan(const std::string& dir, int depth, std::vector<RegionSnapshot>* out, std::vector<std::string>* skipped) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (struct dirent* entry = readdir(d)) {
    if (entry->d_name[0] == '.') continue;
    std::string path = dir + "/" + entry->d_name;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) continue;  // symlinks are not followed
    if (S_ISDIR(st.st_mode)) {
      if (depth > 0) Scan(path, depth - 1, out, skipped);
      continue;
    }
    if (!S_ISREG(st.st_mode) || !(EndsWith(path, ".region") || EndsWith(path, ".cache"))) continue;
    RegionSnapshot snapshot;
    std::string why;
    if (ReadRegion(path, &snapshot, &why)) {
      out->push_back(std::move(snapshot));
    } else if (skipped != nullptr) {
      skipped->push_back(path + ": " + why);
    }
  }
  closedir(d);
}

}  // namespace

int HostPidOf(uint64_t pid_namespace, int pid) {
  if (pid <= 0) return 0;
  if (pid_namespace == 0 || pid_namespace == OwnPidNamespace()) return pid;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return 0;
  int found = 0;
  while (struct dirent* entry = readdir(proc)) {
    char* end = nullptr;
    long candidate = strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || candidate <= 0) continue;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/ns/pid", candidate);
    struct stat st;
    if (stat(path, &st) != 0 || static_cast<uint64_t>(st.st_ino) != pid_namespace) continue;
    if (InnermostPid(static_cast<int>(candidate)) == pid) {
      found = static_cast<int>(candidate);
      break;
    }
  }
  closedir(proc);
  return found;
}

bool ReadRegion(const std::string& path, RegionSnapshot* out, std::string* why) {
  auto fail = [&](const char* text) {
    if (why != nullptr) *why = text;
    return false;
  };
  const size_t bytes = sizeof(RegionHeader) + sizeof(RegionSlot) * kRegionSlots;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    close(fd);
    return fail("not a region of this version (size)");
  }
  void* mem = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (mem == MAP_FAILED) {
    close(fd);
    return fail(strerror(errno));
  }
  const auto* header = static_cast<const RegionHeader*>(mem);
  const auto* slots = reinterpret_cast<const RegionSlot*>(static_cast<const char*>(mem) + sizeof(RegionHeader));
  bool valid = memcmp(header->magic, kRegionMagic, sizeof(kRegionMagic)) == 0 && header->version == kRegionVersion &&
               header->header_bytes == sizeof(RegionHeader) && header->slot_bytes == sizeof(RegionSlot) &&
               header->slot_count == kRegionSlots && header->device_count == kMaxDevices;
  if (!valid) {
    munmap(mem, bytes);
    close(fd);
    return fail("not a region of this version (magic, version or geometry)");
  }
  RegionSnapshot snapshot;
  snapshot.path = path;
  snapshot.identity.assign(header->identity, strnlen(header->identity, sizeof(header->identity)));
  const uint64_t own_namespace = OwnPidNamespace();
  uint32_t high = Load(header->slot_high);
  int end = high > static_cast<uint32_t>(kRegionSlots) ? kRegionSlots : static_cast<int>(high);
  for (int i = 0; i < end; ++i) {
    const RegionSlot& s = slots[i];
    if (Load(s.in_use) == 0) continue;
    RegionProcess p;
    p.pid = Load(s.pid);
    p.pid_namespace = Load(s.pid_namespace);
    const uint64_t start = Load(s.start_time);
    const bool same_namespace = p.pid_namespace == 0 || p.pid_namespace == own_namespace;
    int held = Load(s.locked) != 0 ? SlotLockHeld(fd, i) : -1;
    if (held >= 0) {
      p.alive = held == 1;
    } else {
      p.alive = !same_namespace || ProcessIsAlive(p.pid, start);
    }
    if (p.alive) p.host_pid = HostPidOf(p.pid_namespace, p.pid);
    for (int d = 0; d < kMaxDevices; ++d) {
      p.used[d] = Load(s.used[d]);
      if (p.alive) snapshot.used[d] += p.used[d];
    }
    snapshot.processes.push_back(p);
  }
  munmap(mem, bytes);
  close(fd);
  *out = std::move(snapshot);
  return true;
}

std::vector<RegionSnapshot> ReadRegionsUnder(const std::string& dir, int depth, std::vector<std::string>* skipped) {
  std::vector<RegionSnapshot> out;
  Scan(dir, depth, &out, skipped);
  return out;
}

}  // namespace xpool::vgpu
