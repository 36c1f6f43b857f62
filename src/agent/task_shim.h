#pragma once
// The task shim: a small supervisor process per task, so that tasks outlive their agent and a restarted agent
// can adopt them.
//
// The launcher (launcher.h) does not run a task itself: it writes the task's spec to <task dir>/task.json and
// starts `xpool task-shim --ready-fd 3 <task dir>` (this binary re-executed: a fresh process that shares no
// threads, locks or heap with the agent and shows as `xpool task-shim` in ps). The shim
//   - is a session and process-group leader of its own, detached from the agent (its stdio: /dev/null and
//     <task dir>/shim.log), so the agent's end (SIGKILL, SIGTERM, a crash, Ctrl-C in a terminal) does not end it;
//   - holds an exclusive flock on <task dir>/shim.lock for its whole life: the liveness test a restarted agent
//     uses (ShimAlive). A lock cannot be mistaken the way a reused pid can, and it is released by the kernel
//     when the shim dies, even as an unreaped zombie;
//   - forks the task in a session of its own (the task's pgid is its pid) and owns its stdout+stderr pipe,
//     writing the size-capped rotated log (task_log.h) with the launcher's [xpool] notes;
//   - runs the task as the spec's uid/gid when it has one (an agent running as root: task_identity.h), dropping
//     supplementary groups, then the gid, then the uid in the task's child, each checked, before it changes to the
//     workdir and execs;
//   - fences its task (docs/agent.md, "Fencing"): when the spec names a lease file, it reads it every 250 ms and
//     stops the task (SIGTERM, SIGKILL after kFenceGrace) once the lease has expired — its agent has not had a
//     heartbeat answered for longer than the server's node timeout, so the server is about to run the job
//     elsewhere. The end is recorded as stopped with `fenced` set;
//   - follows <task dir>/control, lines appended by an agent ("stop <grace_us>", "suspend <grace_us>"), polled
//     every 50 ms: SIGTERM to the task's group and SIGKILL after the grace; the suspend file
//     (XPOOL_SUSPEND_FILE) and at once the suspend signal, then SIGTERM after the grace, then SIGKILL. SIGTERM/SIGINT
//     sent to the shim itself stop the task (grace 10 s);
//   - waits for the task, kills what it left in its group (and cgroup), and writes <task dir>/status.json
//     (write to a temporary file + rename, so a reader never sees half a file): `running` with the task's pid
//     and its /proc start time as soon as it runs, the end (state, exit code or signal, error) when it ended;
//   - tells the agent that the task runs (or could not exec) by closing the ready fd, then exits once the task's
//     end is recorded. The agent reaps its own shims; a restarted agent's shims are reaped by init.
// The agent talks to shims only through these files (control, status.json, shim.lock): no signals to pids it
// did not start, so nothing is sent to a reused pid.
//
// Plain functions over files; thread-compatible. RunTaskShim is the shim process's main.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "agent/launcher.h"

namespace xpool::agent {

// What the shim runs: written by the agent (mode 0600: the job's env may hold secrets), read by the shim and by
// a restarted agent (job id, replica and restart count of an adopted task).
struct ShimSpec {
  std::string task_id;
  int64_t job_id = 0;
  int replica = 0;
  int restart_count = 0;
  std::string program;  // resolved path of argv[0]
  std::vector<std::string> argv;
  std::vector<std::string> env;  // KEY=VALUE, the task's whole environment
  std::string workdir;
  LogLimits log_limits;
  std::string cgroup_dir;  // the task's cgroup (empty: none); the task joins it before exec
  int suspend_signal = SIGUSR1;
  TimeMicros started_at = 0;
  int64_t uid = -1;  // run the task as this uid and gid (-1: as the shim's own)
  int64_t gid = -1;
  std::string lease_file;    // the agent's lease (fencing); empty = never fenced
  std::string suspend_file;  // written on a suspend request; empty = <task dir>/suspend
};

// The task's state as the shim last recorded it.
struct ShimStatus {
  TaskState state = TaskState::kRunning;
  pid_t pid = 0;           // the task's leader (= its process group)
  uint64_t pid_start = 0;  // its start time (/proc/PID/stat field 22): a reused pid has another
  pid_t shim_pid = 0;
  int exit_code = -1;
  int signal = 0;
  std::string error;
  std::string log_note;
  TimeMicros started_at = 0;
  TimeMicros ended_at = 0;
  bool fenced = false;  // stopped by the shim because its agent's lease expired
};

// The agent's lease: until when (CLOCK_BOOTTIME, microseconds) the server counts the node alive, as far as the
// agent knows — the time it sent its last answered heartbeat plus the server's node timeout.
struct Lease {
  TimeMicros expires_at = 0;
  TimeMicros node_timeout = 0;
};

// Time between the shim's SIGTERM to a fenced task and its SIGKILL. The server waits the node timeout plus
// ControlPlaneOptions::fence_margin (which covers this and the lease check) before it runs the job elsewhere.
inline constexpr TimeMicros kFenceGrace = 2 * kMicrosPerSecond;

inline constexpr const char* kShimSpecFile = "task.json";
inline constexpr const char* kShimStatusFile = "status.json";
inline constexpr const char* kShimControlFile = "control";
inline constexpr const char* kShimLockFile = "shim.lock";
inline constexpr const char* kShimLogFile = "shim.log";
inline constexpr const char* kLeaseFile = "agent.lease";  // in the agent's state dir

Status WriteShimSpec(const std::string& task_dir, const ShimSpec& spec);
Result<ShimSpec> ReadShimSpec(const std::string& task_dir);
Status WriteShimStatus(const std::string& task_dir, const ShimStatus& status);
// NotFound when the shim has written none yet.
Result<ShimStatus> ReadShimStatus(const std::string& task_dir);
// Appends one request ("stop" or "suspend") with its grace to the task's control file. With the shim's pid (the
// launcher's own child), pokes it with SIGURG to read the request at once instead of at its next look (every
// 50 ms); SIGURG is ignored by default, so a shim of an older build that has no handler is not harmed.
Status SendShimControl(const std::string& task_dir, const std::string& action, TimeMicros grace_micros,
                       pid_t shim_pid = 0);
// Whether a shim holds the task dir's lock now.
bool ShimAlive(const std::string& task_dir);
// A process's start time in clock ticks since boot (/proc/PID/stat field 22); 0 when it does not exist.
uint64_t ProcessStartTime(pid_t pid);
// CLOCK_BOOTTIME in microseconds: shared by every process of the machine and counting through a suspend.
TimeMicros BootTimeMicros();
// The lease file (written atomically, mode 0600).
Status WriteLease(const std::string& path, const Lease& lease);
Result<Lease> ReadLease(const std::string& path);
// Task state names back to values ("running", "succeeded", ...); kFailed for an unknown name.
TaskState TaskStateFromName(std::string_view name);

// The shim process: runs the task of `task_dir` (its task.json) to its end. `ready_fd` (>= 0) is closed once the
// task runs or could not start. Returns the shim's exit code (0 when the task's end was recorded).
int RunTaskShim(const std::string& task_dir, int ready_fd);

}  // namespace xpool::agent
