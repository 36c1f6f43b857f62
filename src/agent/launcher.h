#pragma once
// Launcher: starts and stops the processes of the tasks assigned to this node.
//
// Each task runs under a task shim (task_shim.h): a small supervisor process of its own (`xpool task-shim`),
// detached from the agent, that starts the task in a session (and process group) of its own, with its workdir
// and environment (task_env.h), writes its stdout+stderr to <state_dir>/<task_id>/output.log (task_log.h),
// forwards stop/suspend requests and records the task's end in <state_dir>/<task_id>/status.json. Where
// cgroup v2 is writable the task runs in its own cgroup with the CPU and memory of its request (cgroup.h).
// So tasks outlive the agent: a launcher that ends leaves them running (unless
// LauncherOptions::stop_tasks_on_exit), and a new launcher on the same state dir adopts them (Adopt()).
//
//   Stop:    SIGTERM to the group; SIGKILL to the group when the grace runs out (the shim's clock).
//   Suspend: writes the task's XPOOL_SUSPEND_FILE and sends the suspend signal (the task's
//            LaunchSpec::suspend_signal, else LauncherOptions::suspend_signal, default SIGUSR1) to the group;
//            when the grace runs out the task is stopped (SIGTERM, then SIGKILL after a further grace).
//   Exit:    the leader's exit code or signal is recorded; whatever it left behind in its group (or cgroup) is
//            killed, so no orphan outlives its task.
// Identity and directories (docs/agent.md, "Task identity"): with LauncherOptions::task_uids (an agent running as
// root) each task runs as its tenant's uid and gid (task_identity.h); otherwise as the agent's user. Each task has
// a directory of its own, <task_root>/<task_id>/ (root-owned, mode 0711 when isolated: reachable, not listable),
// holding its suspend file, its runtime-library region and work/ (mode 0700, owned by the task's uid): its HOME
// and the working directory of a job that names none. The agent's files of a task (spec, status, control, logs)
// are mode 0600 in <state_dir>/<task_id>/. The environment starts from an allow-list, never from the agent's
// (task_identity.h BaseTaskEnv).
// Fencing: once the agent has a lease (RenewLease, after each heartbeat the server answered), tasks started after
// it are fenced: their shim stops them when the lease runs out (task_shim.h).
// A command that cannot be executed or a workdir that does not exist does not fail Start(): the
// task ends at once in state kFailed with the reason in TaskStatus::error and in its log; the agent
// carries on.
//
// Nothing here blocks for long: Poll() reads the shims' status files (and reaps the launcher's own shims); the
// agent calls it in its loop (WaitFor is a convenience for tests and one-shot commands). Start() waits until
// the shim has started the task (or failed to). Thread-safe: every public method takes the launcher's lock.
#include <sys/types.h>

#include <csignal>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/cgroup.h"
#include "agent/task_env.h"
#include "agent/task_identity.h"
#include "common/clock.h"
#include "common/status.h"
#include "protocol/task_log.h"

namespace xpool::agent {

using protocol::TaskState;
using protocol::TaskStateName;
using protocol::TaskStatus;
// The task log's format (protocol/task_log.h): the launcher writes it, the server reads it beside an agent.
using protocol::LogFiles;
using protocol::LogFollower;
using protocol::LogLimits;
using protocol::LogWriter;
using protocol::ReadLogRange;
using protocol::ReadLogTail;

struct LauncherOptions {
  std::string state_dir;  // required; per task <state_dir>/<task_id>/ holds output.log, suspend,
                          // vgpu.region
  LogLimits log_limits;
  // The runtime library preloaded into tasks that share a device; empty = <dir of this
  // binary>/../lib/.
  std::string vgpu_library;
  std::string cgroup_root = "/sys/fs/cgroup";  // empty = never use cgroups
  std::string cgroup_parent = "xpool";
  int suspend_signal = SIGUSR1;
  // Task isolation: set (an agent running as root), each task runs as its tenant's uid/gid from this range;
  // unset, as the agent's own user.
  std::optional<UidRange> task_uids;
  // Where the tasks' own directories go (<task_root>/<task_id>/); empty = state_dir. With task_uids it must be
  // reachable by other users (CheckOptions).
  std::string task_root;
  // Device index → the pipe directory of its MPS control daemon (mps.h MpsDaemons::pipe_dirs), for this node's
  // devices that run MPS: tasks given one get the MPS client variables (task_env.h).
  std::map<int, std::string> mps_pipe_dirs;
  // Device position → its name in the visible-devices variables (task_env.h VisibleDeviceNames): MIG instances.
  std::map<int, std::string> visible_names;
  // Variables of the agent's environment given to tasks beyond the allow-list (task_identity.h).
  std::vector<std::string> pass_env;
  Clock* clock = nullptr;  // null = the real clock (start times; grace periods run on the shim's real clock)
  // The shim's command line, to which "--ready-fd 3 <task dir>" is appended; empty = `xpool-task-shim` beside
  // this binary when it is there, else this binary with "task-shim" (`xpool task-shim`).
  std::vector<std::string> shim_command;
  // The destructor stops every running task (SIGTERM, SIGKILL at once) and waits for their end: `xpool agent
  // --run`, `xpool up`, `xpool agent --stop-tasks`, tests. Otherwise tasks keep running after the launcher
  // ends and the next launcher on this state dir adopts them.
  bool stop_tasks_on_exit = false;
};

// A task found in the state dir by Adopt(): running under a live shim, or ended (while no agent ran, or before
// the previous agent reported it).
struct AdoptedTask {
  TaskStatus status;
  int64_t job_id = 0;
  int replica = 0;
  int restart_count = 0;
};

struct ShimStatus;  // task_shim.h

class Launcher {
 public:
  explicit Launcher(LauncherOptions options);
  ~Launcher();
  // What a start-up checks before it serves (a clear error instead of tasks that cannot start): with task_uids,
  // that no account has an id in the range and that the task root is reachable by other users.
  static Status CheckOptions(const LauncherOptions& options);
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // Starts a task. Errors only for a bad spec (ValidateLaunchSpec), a task id already running, or a
  // state directory that cannot be written; a task whose command cannot run is started and reported
  // as failed.
  Status Start(const LaunchSpec& spec);
  // SIGTERM now, SIGKILL after `grace_micros`. NotFound for an unknown task; a no-op for an ended
  // one.
  Status Stop(const std::string& task_id, TimeMicros grace_micros);
  // Suspend file + suspend signal now; stop after `grace_micros` (with the same grace for SIGKILL).
  Status Suspend(const std::string& task_id, TimeMicros grace_micros);

  // Reaps ended tasks and sends due signals. Returns the tasks that ended since the previous
  // Poll().
  std::vector<TaskStatus> Poll();
  // Polls until the task ends or `timeout_micros` pass; returns its status (running on timeout).
  Result<TaskStatus> WaitFor(const std::string& task_id, TimeMicros timeout_micros);

  Result<TaskStatus> Get(const std::string& task_id) const;
  std::vector<TaskStatus> List() const;
  // The task's directory (<state_dir>/<task_id>); its runtime library's shared region is "vgpu.region" in it.
  std::string TaskDir(const std::string& task_id) const;
  // Forgets an ended task: its log files stay, its spec and status go (a later Adopt() does not see it
  // again). FailedPrecondition while it runs.
  Status Forget(const std::string& task_id);
  // Takes over the tasks of an earlier launcher on the same state dir that this one does not hold: running ones
  // (their shim is alive: reported running, stoppable, suspendable) and ended ones (their recorded end, returned
  // once more by Poll()). A task whose shim died without recording an end (a machine reboot, a SIGKILL of the
  // shim) is failed; what is left of it is killed only when its pid still has the recorded start time.
  std::vector<AdoptedTask> Adopt();

  // The task's log file (also after it ended).
  std::string LogPath(const std::string& task_id) const;
  // The task's own directory (<task_root>/<task_id>) and its work/ directory (HOME, default workdir).
  std::string RunDir(const std::string& task_id) const;
  std::string HomeDir(const std::string& task_id) const { return RunDir(task_id) + "/work"; }
  // Fencing: the server counts this node alive until `expires_at` (CLOCK_BOOTTIME, task_shim.h BootTimeMicros) as
  // far as the agent knows; written to <state_dir>/agent.lease for the shims. Tasks started from now on are fenced.
  Status RenewLease(TimeMicros expires_at, TimeMicros node_timeout);
  // Notices to show once (no cgroup v2, runtime library missing); each is returned by one call
  // only.
  std::vector<std::string> TakeNotices();
  const CgroupV2& cgroup() const { return cgroup_; }
  // Tasks started from now on name their devices with these (LauncherOptions::visible_names): the node's devices
  // changed (a new MIG geometry); running tasks keep theirs.
  void SetVisibleNames(std::map<int, std::string> names);

 private:
  struct Task;
  Status StartLocked(const LaunchSpec& spec, Task* task);
  // Creates the task's own directories for `identity` (owned and moded as the header says); its HOME.
  Result<std::string> PrepareRunDirLocked(const std::string& task_id, const TaskIdentity& identity);
  Status SpawnShimLocked(Task* task);
  void RefreshLocked(Task* task);
  void ApplyStatusLocked(Task* task, const ShimStatus& status);
  void ShimLostLocked(Task* task);
  void ReapShimLocked(Task* task, bool block);
  TimeMicros Now() const;

  const LauncherOptions options_;
  std::string vgpu_library_;               // resolved; empty when not found
  std::vector<std::string> shim_command_;  // resolved
  mutable std::mutex mu_;
  CgroupV2 cgroup_;                           // guarded by mu_
  std::vector<std::unique_ptr<Task>> tasks_;  // guarded by mu_
  std::vector<std::string> notices_;          // guarded by mu_
  std::map<int, std::string> visible_names_;  // guarded by mu_; options_.visible_names until SetVisibleNames
  bool vgpu_missing_noted_ = false;           // guarded by mu_
  bool leased_ = false;                       // RenewLease was called; guarded by mu_
};

}  // namespace xpool::agent
