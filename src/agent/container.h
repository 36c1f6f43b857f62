#pragma once
// Runtime environments: a task whose job names an `image:` runs its command in that OCI image through podman
// (`podman run`, rootless when the agent is not root). PodmanArgv builds the exact command line; the launcher
// runs it in place of the command, so the task's log, suspend signal (podman's --sig-proxy forwards it), exit
// code and cgroup limits work as for a command on the host.
//
// What the container gets:
//   - the host's network and IPC (a distributed job's MASTER_ADDR:MASTER_PORT and NCCL's shared memory work as
//     on the host), the job's workdir mounted at the same path and used as the working directory;
//   - every variable of the task's environment, passed by name (`--env NAME`: the values stay off the command
//     line, podman reads them from its own environment), the visible-device variables renumbered 0..n-1;
//   - NVIDIA devices by their CDI names (`--device nvidia.com/gpu=INDEX`, NVIDIA Container Toolkit's
//     `nvidia-ctk cdi generate`); other vendors' devices are not passed (a note says so);
//   - the task's directory (suspend file, shared accounting region) and, when the task shares a device, the
//     runtime library (read-only) at the same paths, so LD_PRELOAD and XPOOL_* point inside the container too.
// Pure functions over value types; thread-safe.
#include <map>
#include <string>
#include <vector>

#include "agent/task_env.h"
#include "common/status.h"

namespace xpool::agent {

struct ContainerCommand {
  std::vector<std::string> argv;   // argv[0] = the podman binary
  std::vector<std::string> notes;  // what the task should know (devices not passed)
};

// The podman command line for `spec` (spec.image set) with the task's final environment `env` (BuildTaskEnv's
// variables included), its directory `task_dir` and the runtime library `vgpu_library` ("" = none). NVIDIA devices
// are passed as CDI devices: `nvidia.com/gpu=INDEX`, or, on a node with MIG instances (`visible_names`, the
// uuid of each device position: TaskPaths::visible_names), `nvidia.com/gpu=MIG-...` / `nvidia.com/gpu=GPU-...`,
// the names a CDI spec generated with uuid device names carries (positions there are not NVML's indices).
ContainerCommand PodmanArgv(const std::string& podman, const LaunchSpec& spec,
                            const std::map<std::string, std::string>& env, const std::string& task_dir,
                            const std::string& vgpu_library, const std::map<int, std::string>& visible_names = {});

// Why a task with an image cannot start on this node when podman is not found: a reason that says it never will.
std::string NoPodmanReason(const LaunchSpec& spec, const std::string& path_list);

}  // namespace xpool::agent
