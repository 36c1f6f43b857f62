// Reads tasks' shared accounting regions (shared_region.h) from outside the tasks, for a node agent that reports
// used memory per process and device: one file, or every region file under a directory (the host paths the device
// plugin mounts into containers). Reading never changes a file (read-only mapping; dead slots are reported, not
// reclaimed) and needs no lock: each field is read atomically, so a snapshot taken while the task allocates may mix
// moments but is never torn. Liveness is the slot's lock (valid across pid namespaces); pids recorded in another pid
// namespace are translated to this namespace's pids where /proc allows it.
//
// Free functions; thread-safe (no shared state).
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

#include "vgpu/limits.h"

namespace xpool::vgpu {

struct RegionProcess {
  int pid = 0;                 // as recorded, in the process's own pid namespace
  int host_pid = 0;            // the same process in the reader's pid namespace, 0 when it cannot be found
  uint64_t pid_namespace = 0;  // inode of its pid namespace
  bool alive = false;
  uint64_t used[kMaxDevices] = {};  // bytes charged per device (CUDA ordinal of the task)
};

struct RegionSnapshot {
  std::string path;
  std::string identity;                  // "<job>/<replica>" as the task wrote it
  std::vector<RegionProcess> processes;  // every slot in use, alive or not
  uint64_t used[kMaxDevices] = {};       // summed over live processes
};

// Reads one region file. False (and `why`) when it cannot be opened or is not a region of this version.
bool ReadRegion(const std::string& path, RegionSnapshot* out, std::string* why);

// Reads every region under `dir` (files ending in ".region" or ".cache", in `dir` and its subdirectories down to
// `depth` levels). Files that are not valid regions are skipped and named in `skipped`.
std::vector<RegionSnapshot> ReadRegionsUnder(const std::string& dir, int depth, std::vector<std::string>* skipped);

// The pid, in this pid namespace, of the process numbered `pid` in pid namespace `pid_namespace`; 0 if none.
int HostPidOf(uint64_t pid_namespace, int pid);

}  // namespace xpool::vgpu
