#pragma once
// CgroupV2: per-task CPU and memory limits through the unified cgroup hierarchy.
//
// Probe() checks <root>/cgroup.controllers (cgroup v2 mounted there), creates <root>/<parent>/ and
// enables the cpu and memory controllers for its children. A task gets <root>/<parent>/<task_id>/
// with
//   cpu.max    = "<cpu_milli × 100> 100000"  (quota per 100 ms period; "max" when the request has
//   no CPU) memory.max = bytes of the memory request ("max" when none)
// and its process joins by writing to cgroup.procs before exec (launcher). On a machine without
// cgroup v2 (or without write access) Probe() says why once and every call is a no-op.
//
// Owned by the launcher; not thread-safe (the launcher serialises calls).
#include <cstdint>
#include <string>

#include "common/status.h"

namespace xpool::agent {

class CgroupV2 {
 public:
  // Disabled: no cgroup limits, reason "cgroup limits disabled".
  CgroupV2() = default;
  static CgroupV2 Probe(const std::string& root, const std::string& parent);

  bool available() const { return available_; }
  // Why limits are not applied (empty when available).
  const std::string& reason() const { return reason_; }

  // Creates the task's cgroup with its limits; returns the path of its cgroup.procs.
  Result<std::string> CreateTask(const std::string& task_id, int64_t cpu_milli, int64_t memory_mib);
  // Kills every process left in the task's cgroup (cgroup.kill, Linux ≥ 5.14; ignored where
  // absent).
  void KillTask(const std::string& task_id);
  // Removes the (empty) task cgroup; errors are ignored (a busy cgroup is retried at the next
  // removal).
  void RemoveTask(const std::string& task_id);

 private:
  std::string TaskDir(const std::string& task_id) const { return dir_ + "/" + task_id; }

  bool available_ = false;
  std::string reason_ = "cgroup limits disabled";
  std::string dir_;  // <root>/<parent>
};

}  // namespace xpool::agent
