#include "agent/cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace xpool::agent {
namespace {

Status WriteFile(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return UnavailableError("cannot open " + path + ": " + std::strerror(errno));
  ssize_t n = ::write(fd, text.data(), text.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return UnavailableError("cannot write \"" + text + "\" to " + path + ": " + std::strerror(err));
  }
  return Status::Ok();
}

Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return Status::Ok();
  return UnavailableError("cannot create " + path + ": " + std::strerror(errno));
}

}  // namespace

CgroupV2 CgroupV2::Probe(const std::string& root, const std::string& parent) {
  CgroupV2 cg;
  if (root.empty()) return cg;
  std::ifstream controllers_file(root + "/cgroup.controllers");
  if (!controllers_file) {
    cg.reason_ = "no cgroup v2 at " + root + " (" + root + "/cgroup.controllers is missing)";
    return cg;
  }
  std::stringstream text;
  text << controllers_file.rdbuf();
  const std::string controllers = " " + text.str() + " ";
  for (const char* needed : {"cpu", "memory"}) {
    if (controllers.find(std::string(" ") + needed) == std::string::npos) {
      cg.reason_ = "cgroup v2 at " + root + " lacks the " + needed + " controller";
      return cg;
    }
  }
  if (::access(root.c_str(), W_OK) != 0) {
    cg.reason_ = "no write access to " + root;
    return cg;
  }
  cg.dir_ = root + "/" + parent;
  if (Status s = MakeDir(cg.dir_); !s.ok()) {
    cg.reason_ = s.message();
    return cg;
  }
  // Both levels must delegate cpu and memory for the task cgroups to get cpu.max / memory.max. The
  // root's subtree_control may already have them (or refuse, e.g. inside a container): only the
  // result matters, which CreateTask checks.
  IgnoreError(WriteFile(root + "/cgroup.subtree_control", "+cpu +memory"), "only the result matters (below)");
  if (Status s = WriteFile(cg.dir_ + "/cgroup.subtree_control", "+cpu +memory"); !s.ok()) {
    cg.reason_ = "cannot enable cpu and memory controllers: " + s.message();
    return cg;
  }
  cg.available_ = true;
  cg.reason_.clear();
  return cg;
}

Result<std::string> CgroupV2::CreateTask(const std::string& task_id, int64_t cpu_milli, int64_t memory_mib) {
  if (!available_) return FailedPreconditionError(reason_);
  const std::string dir = TaskDir(task_id);
  RETURN_IF_ERROR(MakeDir(dir));
  // cpu.max: quota and period in microseconds; 1000 milli = one full CPU = 100000 µs per 100000 µs.
  const std::string cpu = cpu_milli > 0 ? std::to_string(cpu_milli * 100) + " 100000" : "max 100000";
  RETURN_IF_ERROR(WriteFile(dir + "/cpu.max", cpu));
  const std::string memory = memory_mib > 0 ? std::to_string(memory_mib * 1024 * 1024) : "max";
  RETURN_IF_ERROR(WriteFile(dir + "/memory.max", memory));
  return dir + "/cgroup.procs";
}

void CgroupV2::KillTask(const std::string& task_id) {
  if (!available_) return;
  const std::string kill = TaskDir(task_id) + "/cgroup.kill";
  if (::access(kill.c_str(), W_OK) == 0) {
    IgnoreError(WriteFile(kill, "1"), "the launcher also signals the task's process group");
  }
}

void CgroupV2::RemoveTask(const std::string& task_id) {
  if (!available_) return;
  ::rmdir(TaskDir(task_id).c_str());
}

}  // namespace xpool::agent
