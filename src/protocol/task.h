#pragma once
// The task as the agent protocol names it: what the server asks an agent to start (LaunchSpec, with its devices
// and distributed-training block) and what the agent reports back about a task (TaskStatus). Shared by the server,
// which builds launch specs from allocations, and the agent, which runs them. Value types and pure functions;
// thread-compatible.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "model/device.h"
#include "model/task_request.h"

namespace xpool::protocol {

// One device given to the task, with the limits the runtime library enforces.
struct TaskDevice {
  int index = 0;           // the device's index on its node (what the driver numbers it)
  int64_t memory_mib = 0;  // 0 = no memory limit
  int core_percent = 0;    // 1..99 = limit; 0 or 100 = none
};

// torchrun-style variables for jobs with several replicas: replica r of the job is RANK r; its node is NODE_RANK
// (nodes numbered in the order of their first replica); LOCAL_RANK counts the replicas before it on its node and
// LOCAL_WORLD_SIZE all of them there. MASTER_ADDR:MASTER_PORT is where replica 0 listens (torch.distributed's
// env:// rendezvous).
struct DistributedEnv {
  std::string master_addr;
  int master_port = 29500;
  int world_size = 1;
  int rank = 0;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
  friend bool operator==(const DistributedEnv&, const DistributedEnv&) = default;
};

// The node label an agent registers with its address (`xpool agent --address`): where the other nodes reach a task
// on it. A multi-replica job's MASTER_ADDR is this label of replica 0's node (the node name when it is unset).
inline constexpr char kNodeAddressLabel[] = "xpool.io/address";

struct LaunchSpec {
  std::string task_id;            // [A-Za-z0-9._-], unique among the launcher's tasks; names its log and cgroup
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::string workdir;            // must exist; empty = the task's own work directory (launcher.h)
  std::map<std::string, std::string> env;  // the job's own variables (xpool's variables win)
  int64_t job_id = 0;
  int64_t tenant_id = 0;  // the job's tenant (the server's id): its uid when the agent runs as root
  int replica = 0;
  int restart_count = 0;  // the placement epoch: the server bumps it whenever it takes the job back (docs/agent.md)
  Vendor vendor = Vendor::kNvidia;
  std::vector<TaskDevice> devices;
  bool shares_device = false;  // some device is shared with other tasks → preload the runtime library
  std::optional<DistributedEnv> distributed;
  int64_t cpu_milli = 0;   // cgroup cpu.max; 0 = none
  int64_t memory_mib = 0;  // cgroup memory.max; 0 = none
  // An OCI image to run the command in (through podman, agent/container.h); "" = directly on the host.
  std::string image;
  // The job's checkpoint.signal by name ("SIGUSR2", ...; model/job_spec.h), sent on Suspend and exported as
  // XPOOL_SUSPEND_SIGNAL; "" = the launcher's default (SIGUSR1).
  std::string suspend_signal;
};

// Checks what the launcher relies on: a task id usable as a file name, a command, env names.
Status ValidateLaunchSpec(const LaunchSpec& spec);

// The task's devices from its allocation on `node`: limits from the grants (memory MiB; compute
// milli → percent) and whether the task shares a device (a grant of less than the whole device).
std::vector<TaskDevice> TaskDevicesFromGrants(const Node& node, const std::vector<DeviceGrant>& grants,
                                              bool* shares_device);

enum class TaskState {
  kRunning,
  kSucceeded,  // exited 0
  kFailed,     // exited non-zero, killed by a signal it was not sent by us, or could not start
  kStopped,    // ended after Stop()
  kSuspended,  // ended after Suspend()
};
std::string_view TaskStateName(TaskState state);

struct TaskStatus {
  std::string task_id;
  pid_t pid = 0;
  TaskState state = TaskState::kRunning;
  int exit_code = -1;       // when it exited
  int signal = 0;           // when a signal ended it
  std::string error;        // why it could not start ("exec \"foo\": No such file or directory")
  std::string log_note;     // set when logging stopped (disk full)
  bool fenced = false;      // stopped by its shim: the agent's lease ran out (not by a request)
  std::string cgroup_note;  // set when its cgroup limits could not be applied
  TimeMicros started_at = 0;
  TimeMicros ended_at = 0;
  bool running() const { return state == TaskState::kRunning; }
};

}  // namespace xpool::protocol
