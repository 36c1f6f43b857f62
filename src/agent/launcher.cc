#include "agent/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <utility>

#include "agent/command.h"
#include "agent/container.h"
#include "agent/task_shim.h"
#include "model/job_spec.h"

extern char** environ;

namespace xpool::agent {
namespace {

using SteadyClock = std::chrono::steady_clock;

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

std::string DefaultVgpuLibrary() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  return (exe.parent_path().parent_path() / "lib" / "libxpool-vgpu.so").string();
}

}  // namespace

// One task's bookkeeping: what the launcher knows of a task that its shim runs.
struct Launcher::Task {
  TaskStatus status;
  std::string dir;
  int64_t job_id = 0;
  int replica = 0;
  int restart_count = 0;
  pid_t shim_pid = 0;      // this launcher's child until reaped; 0 for an adopted shim (init reaps it)
  uint64_t pid_start = 0;  // the task's start time, to tell it from a reused pid
  bool in_cgroup = false;
  bool reported = false;
  bool stop_sent = false;
  bool suspend_sent = false;
  std::string suspend_file;
};

namespace {

// Where a task's spec and status live (task_shim.h).
std::string FileIn(const std::string& dir, const char* name) { return dir + "/" + name; }

// The last lines of the shim's own stderr, for a shim that did not start.
std::string ShimLogTail(const std::string& dir) {
  std::ifstream in(FileIn(dir, kShimLogFile));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.size() > 400) text = "..." + text.substr(text.size() - 400);
  return text.empty() ? "no output" : text;
}

// An fd at or above 10, close-on-exec (so the child's dup2 onto 0..3 never hits one of our own fds).
int HighFd(int fd) {
  if (fd < 0) return fd;
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  ::close(fd);
  return high;
}

}  // namespace

Launcher::Launcher(LauncherOptions options) : options_(std::move(options)), visible_names_(options_.visible_names) {
  vgpu_library_ = options_.vgpu_library.empty() ? DefaultVgpuLibrary() : options_.vgpu_library;
  if (!vgpu_library_.empty() && ::access(vgpu_library_.c_str(), R_OK) != 0) vgpu_library_.clear();
  shim_command_ = options_.shim_command;
  if (shim_command_.empty()) {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    // The small shim beside this binary when it is there (bin/xpool-task-shim), else `xpool task-shim`.
    const auto small = exe.parent_path() / "xpool-task-shim";
    if (!ec && ::access(small.c_str(), X_OK) == 0) {
      shim_command_ = {small.string()};
    } else {
      shim_command_ = {ec ? std::string("xpool") : exe.string(), "task-shim"};
    }
  }
  if (options_.task_uids && !options_.state_dir.empty()) {
    // Tasks run as other users: the agent's files are its own; the task root may be searched, never listed.
    std::error_code ec;
    std::filesystem::create_directories(options_.state_dir, ec);
    const std::string root = options_.task_root.empty() ? options_.state_dir : options_.task_root;
    std::filesystem::create_directories(root, ec);
    if (::chmod(options_.state_dir.c_str(), root == options_.state_dir ? 0711 : 0700) != 0 ||
        ::chmod(root.c_str(), 0711) != 0) {
      notices_.push_back("cannot set the modes of " + options_.state_dir + " and " + root + ": " +
                         std::strerror(errno));
    }
  }
  cgroup_ = options_.cgroup_root.empty() ? CgroupV2() : CgroupV2::Probe(options_.cgroup_root, options_.cgroup_parent);
  if (!cgroup_.available()) {
    notices_.push_back("tasks run without CPU/memory limits: " + cgroup_.reason());
  }
}

Launcher::~Launcher() {
  std::lock_guard<std::mutex> lock(mu_);
  if (options_.stop_tasks_on_exit) {
    for (auto& task : tasks_) {
      if (task->status.running()) {
        IgnoreError(SendShimControl(task->dir, "stop", 0), "a shim that cannot be asked is killed below");
      }
    }
    const auto until = SteadyClock::now() + std::chrono::seconds(10);
    for (auto& task : tasks_) {
      while (task->status.running() && SteadyClock::now() < until) {
        RefreshLocked(task.get());
        if (task->status.running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }
  // Shims that ended are reaped; running ones are left to run (init reaps them).
  for (auto& task : tasks_) ReapShimLocked(task.get(), /*block=*/!task->status.running());
}

TimeMicros Launcher::Now() const {
  return options_.clock ? options_.clock->NowMicros() : RealClock::Instance().NowMicros();
}

std::string Launcher::TaskDir(const std::string& task_id) const { return options_.state_dir + "/" + task_id; }

std::string Launcher::LogPath(const std::string& task_id) const { return TaskDir(task_id) + "/output.log"; }

std::string Launcher::RunDir(const std::string& task_id) const {
  return (options_.task_root.empty() ? options_.state_dir : options_.task_root) + "/" + task_id;
}

Status Launcher::CheckOptions(const LauncherOptions& options) {
  if (!options.task_uids) return Status::Ok();
  RETURN_IF_ERROR(CheckUidRangeFree(*options.task_uids));
  return CheckReachableByTasks(options.task_root.empty() ? options.state_dir : options.task_root);
}

Status Launcher::RenewLease(TimeMicros expires_at, TimeMicros node_timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  leased_ = true;
  std::error_code ec;
  std::filesystem::create_directories(options_.state_dir, ec);  // before the first task, it may not exist yet
  return WriteLease(FileIn(options_.state_dir, kLeaseFile), Lease{expires_at, node_timeout});
}

// The task's own directory: root-owned and 0711 when the task runs as another user (it can reach its files by
// name, cannot list or replace them: the shim writes the suspend file there as root), with work/ 0700 owned by
// the task's uid. A work/ left by an earlier run is handed to this run's uid (a symlink in its place is removed,
// never followed).
Result<std::string> Launcher::PrepareRunDirLocked(const std::string& task_id, const TaskIdentity& identity) {
  const std::string run = RunDir(task_id), home = HomeDir(task_id);
  std::error_code ec;
  std::filesystem::create_directories(run, ec);
  if (ec) return UnavailableError("cannot create " + run + ": " + ec.message());
  if (identity.isolated && ::chmod(run.c_str(), 0711) != 0) {
    return UnavailableError("cannot chmod " + run + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::lstat(home.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) ::unlink(home.c_str());
  if (::mkdir(home.c_str(), 0700) != 0 && errno != EEXIST) {
    return UnavailableError("cannot create " + home + ": " + std::strerror(errno));
  }
  if (identity.isolated) {
    if (::lchown(home.c_str(), identity.uid, identity.gid) != 0 || ::chmod(home.c_str(), 0700) != 0) {
      return UnavailableError("cannot give " + home + " to uid " + std::to_string(identity.uid) + ": " +
                              std::strerror(errno));
    }
    // The runtime library's region: created here for the task's uid (it may not create files in the run dir).
    const std::string region = run + "/vgpu.region";
    ::unlink(region.c_str());
    const int fd = ::open(region.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
      const bool given = ::fchown(fd, identity.uid, identity.gid) == 0;
      ::close(fd);
      if (!given) ::unlink(region.c_str());
    }
  }
  return home;
}

void Launcher::SetVisibleNames(std::map<int, std::string> names) {
  std::lock_guard<std::mutex> lock(mu_);
  visible_names_ = std::move(names);
}

std::vector<std::string> Launcher::TakeNotices() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(notices_, {});
}

Status Launcher::Start(const LaunchSpec& spec) {
  RETURN_IF_ERROR(ValidateLaunchSpec(spec));
  if (options_.state_dir.empty()) return FailedPreconditionError("launcher has no state directory");
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = tasks_.begin(); it != tasks_.end(); ++it) {
    if ((*it)->status.task_id != spec.task_id) continue;
    RefreshLocked(it->get());
    if ((*it)->status.running()) return AlreadyExistsError("task " + spec.task_id + " is already running");
    break;
  }
  const std::string dir = TaskDir(spec.task_id);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return UnavailableError("cannot create " + dir + ": " + ec.message());
  // A shim that recorded its task's end exits right after; one that did not still runs the task.
  const auto until = SteadyClock::now() + std::chrono::seconds(5);
  while (ShimAlive(dir)) {
    auto recorded = ReadShimStatus(dir);
    if (!recorded.ok() || recorded->state == TaskState::kRunning || SteadyClock::now() >= until) {
      return AlreadyExistsError("task " + spec.task_id + " is already running under a shim this agent has " +
                                "not adopted (" + dir + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (auto it = tasks_.begin(); it != tasks_.end(); ++it) {
    if ((*it)->status.task_id != spec.task_id) continue;
    ReapShimLocked(it->get(), /*block=*/true);
    tasks_.erase(it);  // a restart replaces the ended record
    break;
  }
  auto task = std::make_unique<Task>();
  task->status.task_id = spec.task_id;
  task->status.started_at = Now();
  task->dir = dir;
  task->job_id = spec.job_id;
  task->replica = spec.replica;
  task->restart_count = spec.restart_count;
  Status s = StartLocked(spec, task.get());
  tasks_.push_back(std::move(task));
  return s;
}

// Prepares the task (environment, checks, cgroup), writes its spec and starts its shim.
Status Launcher::StartLocked(const LaunchSpec& spec, Task* task) {
  TaskStatus& st = task->status;
  auto fail = [&](std::string error) {
    st.state = TaskState::kFailed;
    st.exit_code = 127;
    st.error = std::move(error);
    st.ended_at = Now();
    LogWriter log(LogPath(spec.task_id), options_.log_limits);
    if (log.Open().ok()) log.Note("task could not start: " + st.error);
    return Status::Ok();
  };
  // Who it runs as and its own directories (task_identity.h).
  TaskIdentity identity;
  if (options_.task_uids) {
    auto id = IdentityForTenant(*options_.task_uids, spec.tenant_id);
    if (!id.ok()) return fail(id.status().message());
    identity = *id;
  }
  auto home = PrepareRunDirLocked(spec.task_id, identity);
  if (!home.ok()) return fail(home.status().message());
  const std::string workdir = spec.workdir.empty() ? *home : spec.workdir;
  // The environment: the allow-list, then the job's, then xpool's.
  std::map<std::string, std::string> env = BaseTaskEnv(environ, options_.pass_env, *home, identity);
  for (const auto& [k, v] : spec.env) env[k] = v;
  TaskPaths paths;
  paths.suspend_file = RunDir(spec.task_id) + "/suspend";
  paths.shared_region = RunDir(spec.task_id) + "/vgpu.region";
  paths.vgpu_library = vgpu_library_;
  paths.mps_pipe_dirs = options_.mps_pipe_dirs;
  paths.visible_names = visible_names_;
  task->suspend_file = paths.suspend_file;
  int suspend_signal = options_.suspend_signal;
  if (!spec.suspend_signal.empty()) {
    ASSIGN_OR_RETURN(suspend_signal, CheckpointSignalNumber(spec.suspend_signal));
  }
  ::unlink(paths.suspend_file.c_str());  // a resumed task must not see its old suspend request
  if (spec.shares_device && !spec.devices.empty() && vgpu_library_.empty() && !vgpu_missing_noted_) {
    vgpu_missing_noted_ = true;
    notices_.push_back("runtime library " +
                       std::string(options_.vgpu_library.empty() ? "libxpool-vgpu.so" : options_.vgpu_library) +
                       " not found: tasks sharing a device run without in-process limits");
  }
  for (const auto& [k, v] : BuildTaskEnv(spec, paths, env.count("LD_PRELOAD") ? env["LD_PRELOAD"] : "")) env[k] = v;

  // Checks that give a clear reason before any process exists.
  struct stat wd {};
  if (::stat(workdir.c_str(), &wd) != 0) return fail("workdir " + Quoted(workdir) + " does not exist");
  if (!S_ISDIR(wd.st_mode)) return fail("workdir " + Quoted(workdir) + " is not a directory");
  std::string program = spec.argv[0];
  std::vector<std::string> argv = spec.argv;
  if (!spec.image.empty()) {  // the command runs in its image (agent/container.h)
    const std::string path_list = env.count("PATH") ? env["PATH"] : "/usr/local/bin:/usr/bin:/bin";
    program = SearchPath("podman", path_list, identity.isolated);
    if (program.empty()) return fail(NoPodmanReason(spec, path_list));
    ContainerCommand container = PodmanArgv(program, spec, env, TaskDir(spec.task_id), vgpu_library_, visible_names_);
    argv = std::move(container.argv);
    for (std::string& note : container.notes) notices_.push_back(std::move(note));
  } else if (program.find('/') == std::string::npos) {
    const std::string path_list = env.count("PATH") ? env["PATH"] : "/usr/local/bin:/usr/bin:/bin";
    program = SearchPath(spec.argv[0], path_list, identity.isolated);
    if (program.empty()) {
      return fail("exec " + Quoted(spec.argv[0]) + ": command not found (PATH=" + path_list + ")");
    }
  }
  ShimSpec shim;
  shim.task_id = spec.task_id;
  shim.job_id = spec.job_id;
  shim.replica = spec.replica;
  shim.restart_count = spec.restart_count;
  shim.program = program;
  shim.argv = std::move(argv);
  for (const auto& [k, v] : env) shim.env.push_back(k + "=" + v);
  shim.workdir = workdir;
  shim.log_limits = options_.log_limits;
  shim.suspend_signal = suspend_signal;
  shim.started_at = st.started_at;
  shim.suspend_file = paths.suspend_file;
  if (identity.isolated) {
    shim.uid = identity.uid;
    shim.gid = identity.gid;
  }
  if (leased_) shim.lease_file = FileIn(options_.state_dir, kLeaseFile);
  if (cgroup_.available()) {
    auto created = cgroup_.CreateTask(spec.task_id, spec.cpu_milli, spec.memory_mib);
    if (created.ok()) {
      shim.cgroup_dir = std::filesystem::path(*created).parent_path().string();
      task->in_cgroup = true;
    } else {
      st.cgroup_note = "running without cgroup limits: " + created.status().message();
    }
  }
  // A restart of the task id starts from clean files: no old status, no old control requests.
  ::unlink(FileIn(task->dir, kShimStatusFile).c_str());
  ::unlink(FileIn(task->dir, kShimControlFile).c_str());
  if (Status w = WriteShimSpec(task->dir, shim); !w.ok()) {
    if (task->in_cgroup) cgroup_.RemoveTask(spec.task_id);
    return fail(w.message());
  }
  return SpawnShimLocked(task);
}

// Starts the shim with posix_spawn — a session of its own, an empty signal mask, every disposition at its default,
// stdio on /dev/null and its log, the ready pipe as fd 3, nothing else open — then waits until the shim has
// started the task or failed to (it closes its ready fd). posix_spawn (vfork-like in glibc) neither copies nor
// tears down the agent's address space, which under `xpool up` is the whole server's: a fork + exec cost ~30 ms
// there, the spawn ~1 ms.
Status Launcher::SpawnShimLocked(Task* task) {
  TaskStatus& st = task->status;
  std::vector<std::string> argv_strings = shim_command_;
  argv_strings.insert(argv_strings.end(), {"--ready-fd", "3", task->dir});
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return UnavailableError(std::string("pipe: ") + std::strerror(errno));
  const int ready_w = HighFd(ready[1]);
  const int devnull = HighFd(::open("/dev/null", O_RDWR | O_CLOEXEC));
  const int shim_log =
      HighFd(::open(FileIn(task->dir, kShimLogFile).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, devnull, 0);
  posix_spawn_file_actions_adddup2(&actions, shim_log >= 0 ? shim_log : devnull, 1);
  posix_spawn_file_actions_adddup2(&actions, shim_log >= 0 ? shim_log : devnull, 2);
  posix_spawn_file_actions_adddup2(&actions, ready_w, 3);
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int spawn_err = ::posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  for (int fd : {ready_w, devnull, shim_log}) {
    if (fd >= 0) ::close(fd);
  }
  if (spawn_err != 0) {
    ::close(ready[0]);
    st.state = TaskState::kFailed;
    st.exit_code = 127;
    st.error = "cannot start the task shim " + argv_strings[0] + ": " + std::strerror(spawn_err);
    st.ended_at = Now();
    if (task->in_cgroup) cgroup_.RemoveTask(st.task_id);
    return Status::Ok();
  }
  task->shim_pid = pid;
  // Wait for EOF on the ready pipe (the shim closes it once the task runs, or at its exit).
  const auto until = SteadyClock::now() + std::chrono::seconds(30);
  for (;;) {
    pollfd p{ready[0], POLLIN, 0};
    const int r = ::poll(&p, 1, 100);
    if (r > 0) {
      char c;
      const ssize_t n = ::read(ready[0], &c, 1);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;
    }
    if (SteadyClock::now() >= until) break;
  }
  ::close(ready[0]);
  auto status = ReadShimStatus(task->dir);
  if (status.ok()) {
    ApplyStatusLocked(task, *status);
    return Status::Ok();
  }
  if (ShimAlive(task->dir)) return Status::Ok();  // slow to start: Poll() reads its status later
  ReapShimLocked(task, /*block=*/true);
  st.state = TaskState::kFailed;
  st.exit_code = 127;
  st.error = "the task shim (" + shim_command_[0] + ") did not start: " + ShimLogTail(task->dir);
  st.ended_at = Now();
  if (task->in_cgroup) cgroup_.RemoveTask(st.task_id);
  return Status::Ok();
}

void Launcher::ApplyStatusLocked(Task* task, const ShimStatus& s) {
  TaskStatus& st = task->status;
  const bool was_running = st.running();
  st.pid = s.pid;
  task->pid_start = s.pid_start;
  st.log_note = s.log_note;
  st.fenced = s.fenced;
  if (s.started_at > 0) st.started_at = s.started_at;
  if (s.state == TaskState::kRunning) return;
  st.state = s.state;
  st.exit_code = s.exit_code;
  st.signal = s.signal;
  st.error = s.error;
  st.ended_at = s.ended_at;
  if (was_running && task->in_cgroup) cgroup_.RemoveTask(st.task_id);
}

void Launcher::ReapShimLocked(Task* task, bool block) {
  if (task->shim_pid <= 0) return;
  int ws = 0;
  pid_t r;
  while ((r = ::waitpid(task->shim_pid, &ws, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r == task->shim_pid || r < 0) task->shim_pid = 0;
}

// The shim is gone without having recorded the task's end (it was killed, or the machine restarted).
void Launcher::ShimLostLocked(Task* task) {
  TaskStatus& st = task->status;
  // Whatever is left of the task must not run unsupervised, but a pid that was reused is somebody else's.
  if (st.pid > 0 && task->pid_start != 0 && ProcessStartTime(st.pid) == task->pid_start) ::kill(-st.pid, SIGKILL);
  if (task->in_cgroup) {
    cgroup_.KillTask(st.task_id);
    cgroup_.RemoveTask(st.task_id);
  }
  st.state = TaskState::kFailed;
  st.exit_code = -1;
  st.error = "its task shim ended without recording the task's end (killed, or the machine restarted)";
  st.ended_at = Now();
}

// Reads what the shim recorded. Only this launcher's own shims are reaped here; liveness is the shim's lock.
void Launcher::RefreshLocked(Task* task) {
  if (!task->status.running()) {
    ReapShimLocked(task, /*block=*/false);
    return;
  }
  auto status = ReadShimStatus(task->dir);
  if (status.ok()) ApplyStatusLocked(task, *status);
  if (!task->status.running()) {
    ReapShimLocked(task, /*block=*/false);
    return;
  }
  if (ShimAlive(task->dir)) return;
  status = ReadShimStatus(task->dir);  // it may have ended between the two reads
  if (status.ok()) ApplyStatusLocked(task, *status);
  if (task->status.running()) ShimLostLocked(task);
  ReapShimLocked(task, /*block=*/false);
}

std::vector<TaskStatus> Launcher::Poll() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TaskStatus> ended;
  for (auto& t : tasks_) {
    Task* task = t.get();
    RefreshLocked(task);
    if (!task->status.running() && !task->reported) {
      task->reported = true;
      ended.push_back(task->status);
    }
  }
  return ended;
}

Status Launcher::Stop(const std::string& task_id, TimeMicros grace_micros) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& task : tasks_) {
    if (task->status.task_id != task_id) continue;
    if (!task->status.running()) return Status::Ok();
    task->stop_sent = true;
    // The shim keeps the earlier of two deadlines.
    return SendShimControl(task->dir, "stop", grace_micros, task->shim_pid);
  }
  return NotFoundError("no task " + task_id);
}

Status Launcher::Suspend(const std::string& task_id, TimeMicros grace_micros) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& task : tasks_) {
    if (task->status.task_id != task_id) continue;
    if (!task->status.running()) return FailedPreconditionError("task " + task_id + " is not running");
    if (task->stop_sent || task->suspend_sent) return Status::Ok();  // already suspending or stopping
    task->suspend_sent = true;  // the shim writes the suspend file, then sends the signal
    return SendShimControl(task->dir, "suspend", grace_micros, task->shim_pid);
  }
  return NotFoundError("no task " + task_id);
}

Result<TaskStatus> Launcher::WaitFor(const std::string& task_id, TimeMicros timeout_micros) {
  const auto until = SteadyClock::now() + std::chrono::microseconds(timeout_micros);
  for (;;) {
    // Reads the shim's status without consuming the ended-task events Poll() hands to its caller.
    {
      std::lock_guard<std::mutex> lock(mu_);
      bool found = false;
      for (auto& task : tasks_) {
        if (task->status.task_id != task_id) continue;
        found = true;
        RefreshLocked(task.get());
        if (!task->status.running() || SteadyClock::now() >= until) return task->status;
      }
      if (!found) return NotFoundError("no task " + task_id);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Result<TaskStatus> Launcher::Get(const std::string& task_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& task : tasks_) {
    if (task->status.task_id == task_id) return task->status;
  }
  return NotFoundError("no task " + task_id);
}

std::vector<TaskStatus> Launcher::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TaskStatus> out;
  for (const auto& task : tasks_) out.push_back(task->status);
  return out;
}

Status Launcher::Forget(const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = tasks_.begin(); it != tasks_.end(); ++it) {
    if ((*it)->status.task_id != task_id) continue;
    if ((*it)->status.running()) return FailedPreconditionError("task " + task_id + " is still running");
    ReapShimLocked(it->get(), /*block=*/true);  // it exits right after recording the end
    ::unlink(FileIn((*it)->dir, kShimSpecFile).c_str());
    ::unlink(FileIn((*it)->dir, kShimControlFile).c_str());
    tasks_.erase(it);
    return Status::Ok();
  }
  return NotFoundError("no task " + task_id);
}

std::vector<AdoptedTask> Launcher::Adopt() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<AdoptedTask> adopted;
  std::error_code ec;
  std::vector<std::string> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(options_.state_dir, ec)) {
    if (entry.is_directory(ec) && std::filesystem::exists(entry.path() / kShimSpecFile, ec))
      dirs.push_back(entry.path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  for (const std::string& dir : dirs) {
    auto spec = ReadShimSpec(dir);
    if (!spec.ok()) {
      notices_.push_back("not adopting " + dir + ": " + spec.status().message());
      continue;
    }
    if (spec->task_id != std::filesystem::path(dir).filename().string()) continue;
    bool known = false;
    for (const auto& t : tasks_) known = known || t->status.task_id == spec->task_id;
    if (known) continue;
    auto task = std::make_unique<Task>();
    task->dir = dir;
    task->status.task_id = spec->task_id;
    task->status.started_at = spec->started_at;
    task->job_id = spec->job_id;
    task->replica = spec->replica;
    task->restart_count = spec->restart_count;
    task->in_cgroup = !spec->cgroup_dir.empty() && cgroup_.available();
    task->suspend_file = spec->suspend_file.empty() ? dir + "/suspend" : spec->suspend_file;
    RefreshLocked(task.get());  // a live shim: running; else its recorded end, or failed (shim lost)
    adopted.push_back(AdoptedTask{task->status, task->job_id, task->replica, task->restart_count});
    tasks_.push_back(std::move(task));
  }
  return adopted;
}

}  // namespace xpool::agent
