#include "agent/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <utility>

#include "model/job_spec.h"

extern char** environ;

namespace xpool::agent {
namespace {

using SteadyClock = std::chrono::steady_clock;

// How long a task's log pump keeps draining after its leader exited and the group was killed:
// output still in flight is kept, but a process that escaped the group cannot hold the pump
// forever.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(1000);

// What the child tells the parent when it could not exec (over a close-on-exec pipe).
struct ChildError {
  int stage;  // 1 = chdir, 2 = exec
  int err;
};

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

// Finds `name` (no slash) in `path_list` the way execvp would, with the task's PATH. Empty when not
// found.
std::string SearchPath(const std::string& name, const std::string& path_list) {
  size_t start = 0;
  while (start <= path_list.size()) {
    size_t colon = path_list.find(':', start);
    if (colon == std::string::npos) colon = path_list.size();
    std::string dir = path_list.substr(start, colon - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = colon + 1;
  }
  return "";
}

std::string DefaultVgpuLibrary() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  return (exe.parent_path().parent_path() / "lib" / "libxpool-vgpu.so").string();
}

std::string ExitText(const TaskStatus& s) {
  if (s.signal > 0)
    return "killed by signal " + std::to_string(s.signal) + " (" + strsignal(s.signal) + ")";
  return "exited with code " + std::to_string(s.exit_code);
}

}  // namespace

std::string_view TaskStateName(TaskState state) {
  switch (state) {
    case TaskState::kRunning:
      return "running";
    case TaskState::kSucceeded:
      return "succeeded";
    case TaskState::kFailed:
      return "failed";
    case TaskState::kStopped:
      return "stopped";
    case TaskState::kSuspended:
      return "suspended";
  }
  return "unknown";
}

// One task's bookkeeping. The log writer belongs to the pump thread while it runs, then to the
// launcher.
struct Launcher::Task {
  enum class Phase { kRunning, kSuspending, kStopping, kKilled };

  TaskStatus status;
  std::unique_ptr<LogWriter> log;
  std::thread pump;
  std::atomic<bool> leader_exited{false};
  Phase phase = Phase::kRunning;
  TimeMicros deadline = 0;
  TimeMicros kill_grace = 0;
  bool stop_requested = false;
  bool suspend_requested = false;
  int suspend_signal = SIGUSR1;  // the job's checkpoint.signal, else the launcher's default
  bool in_cgroup = false;
  bool reported = false;
  std::string suspend_file;

  ~Task() {
    if (pump.joinable()) pump.join();
  }
};

namespace {

// Moves a task's output from its pipe to its log file until EOF, or a while after the leader
// exited.
void PumpLog(int fd, LogWriter* log, const std::atomic<bool>* leader_exited) {
  char buf[16384];
  std::optional<SteadyClock::time_point> exit_seen;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, 50);
    if (r < 0 && errno != EINTR) break;
    if (r > 0) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n == 0) break;  // every writer is gone
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        break;
      }
      log->Write(std::string_view(buf, static_cast<size_t>(n)));
      continue;
    }
    if (leader_exited->load()) {
      if (!exit_seen) exit_seen = SteadyClock::now();
      if (SteadyClock::now() - *exit_seen > kDrainAfterExit) break;
    }
  }
  ::close(fd);
}

}  // namespace

Launcher::Launcher(LauncherOptions options) : options_(std::move(options)) {
  vgpu_library_ = options_.vgpu_library.empty() ? DefaultVgpuLibrary() : options_.vgpu_library;
  if (!vgpu_library_.empty() && ::access(vgpu_library_.c_str(), R_OK) != 0) vgpu_library_.clear();
  cgroup_ = options_.cgroup_root.empty()
                ? CgroupV2()
                : CgroupV2::Probe(options_.cgroup_root, options_.cgroup_parent);
  if (!cgroup_.available()) {
    notices_.push_back("tasks run without CPU/memory limits: " + cgroup_.reason());
  }
}

Launcher::~Launcher() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& task : tasks_) {
    if (!task->status.running()) continue;
    SignalGroupLocked(task.get(), SIGKILL);
    int ws = 0;
    while (::waitpid(task->status.pid, &ws, 0) < 0 && errno == EINTR) {
    }
    ReapLocked(task.get(), ws);
  }
}

TimeMicros Launcher::Now() const {
  return options_.clock ? options_.clock->NowMicros() : RealClock::Instance().NowMicros();
}

std::string Launcher::TaskDir(const std::string& task_id) const {
  return options_.state_dir + "/" + task_id;
}

std::string Launcher::LogPath(const std::string& task_id) const {
  return TaskDir(task_id) + "/output.log";
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
    if ((*it)->status.running())
      return AlreadyExistsError("task " + spec.task_id + " is already running");
    tasks_.erase(it);  // a restart replaces the ended record
    break;
  }
  auto task = std::make_unique<Task>();
  task->status.task_id = spec.task_id;
  task->status.started_at = Now();
  std::error_code ec;
  std::filesystem::create_directories(TaskDir(spec.task_id), ec);
  if (ec) return UnavailableError("cannot create " + TaskDir(spec.task_id) + ": " + ec.message());
  task->log = std::make_unique<LogWriter>(LogPath(spec.task_id), options_.log_limits);
  RETURN_IF_ERROR(task->log->Open());
  Status s = StartLocked(spec, task.get());
  tasks_.push_back(std::move(task));
  return s;
}

// Forks and execs the task. Only async-signal-safe calls happen in the child: everything it needs
// (argv, envp, paths) is prepared before fork.
Status Launcher::StartLocked(const LaunchSpec& spec, Task* task) {
  TaskStatus& st = task->status;
  auto fail = [&](std::string error) {
    st.state = TaskState::kFailed;
    st.exit_code = 127;
    st.error = std::move(error);
    st.ended_at = Now();
    task->log->Note("task could not start: " + st.error);
    return Status::Ok();
  };
  // The environment: the agent's (optional), then the job's, then xpool's.
  std::map<std::string, std::string> env;
  if (options_.inherit_env) {
    for (char** e = environ; e && *e; ++e) {
      const std::string kv(*e);
      if (size_t eq = kv.find('='); eq != std::string::npos)
        env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  for (const auto& [k, v] : spec.env) env[k] = v;
  TaskPaths paths;
  paths.suspend_file = TaskDir(spec.task_id) + "/suspend";
  paths.shared_region = TaskDir(spec.task_id) + "/vgpu.region";
  paths.vgpu_library = vgpu_library_;
  task->suspend_file = paths.suspend_file;
  task->suspend_signal = options_.suspend_signal;
  if (!spec.suspend_signal.empty()) {
    ASSIGN_OR_RETURN(task->suspend_signal, CheckpointSignalNumber(spec.suspend_signal));
  }
  ::unlink(paths.suspend_file.c_str());  // a resumed task must not see its old suspend request
  if (spec.shares_device && !spec.devices.empty() && vgpu_library_.empty() &&
      !vgpu_missing_noted_) {
    vgpu_missing_noted_ = true;
    notices_.push_back(
        "runtime library " +
        std::string(options_.vgpu_library.empty() ? "libxpool-vgpu.so" : options_.vgpu_library) +
        " not found: tasks sharing a device run without in-process limits");
  }
  for (const auto& [k, v] :
       BuildTaskEnv(spec, paths, env.count("LD_PRELOAD") ? env["LD_PRELOAD"] : ""))
    env[k] = v;

  // Checks that give a clear reason before any process exists.
  struct stat wd {};
  if (::stat(spec.workdir.c_str(), &wd) != 0)
    return fail("workdir " + Quoted(spec.workdir) + " does not exist");
  if (!S_ISDIR(wd.st_mode)) return fail("workdir " + Quoted(spec.workdir) + " is not a directory");
  std::string program = spec.argv[0];
  if (program.find('/') == std::string::npos) {
    const std::string path_list = env.count("PATH") ? env["PATH"] : "/usr/local/bin:/usr/bin:/bin";
    program = SearchPath(spec.argv[0], path_list);
    if (program.empty()) {
      return fail("exec " + Quoted(spec.argv[0]) + ": command not found (PATH=" + path_list + ")");
    }
  }
  std::string procs;
  if (cgroup_.available()) {
    auto created = cgroup_.CreateTask(spec.task_id, spec.cpu_milli, spec.memory_mib);
    if (created.ok()) {
      procs = *created;
      task->in_cgroup = true;
    } else {
      st.cgroup_note = "running without cgroup limits: " + created.status().message();
    }
  }
  task->log->Note("start: " + spec.argv[0] + " (restart " + std::to_string(spec.restart_count) +
                  ")");

  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = spec.argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  int log_pipe[2], err_pipe[2];
  if (::pipe2(log_pipe, O_CLOEXEC) != 0)
    return UnavailableError(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(log_pipe[0]);
    ::close(log_pipe[1]);
    return UnavailableError(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    for (int fd : {log_pipe[0], log_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    return fail(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    // Child. A session of its own makes it the leader of a new process group: signals to -pid reach
    // all of it.
    ::setsid();
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(log_pipe[1], 1);
    ::dup2(log_pipe[1], 2);
    if (!procs.empty()) {
      int fd = ::open(procs.c_str(), O_WRONLY | O_CREAT, 0644);
      if (fd >= 0) {
        (void)!::write(fd, "0", 1);
        ::close(fd);
      }
    }
    ChildError e{1, 0};
    if (::chdir(spec.workdir.c_str()) != 0) {
      e.err = errno;
      (void)!::write(err_pipe[1], &e, sizeof e);
      ::_exit(127);
    }
    ::execve(program.c_str(), argv.data(), envp.data());
    e = ChildError{2, errno};
    (void)!::write(err_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(log_pipe[1]);
  ::close(err_pipe[1]);
  st.pid = pid;
  ChildError e{0, 0};
  ssize_t n;
  while ((n = ::read(err_pipe[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  ::close(err_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof e)) {  // the child could not exec
    int ws = 0;
    while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    ::close(log_pipe[0]);
    if (task->in_cgroup) cgroup_.RemoveTask(spec.task_id);
    return fail(e.stage == 1 ? "workdir " + Quoted(spec.workdir) + ": " + std::strerror(e.err)
                             : "exec " + Quoted(program) + ": " + std::strerror(e.err));
  }
  task->pump = std::thread(PumpLog, log_pipe[0], task->log.get(), &task->leader_exited);
  return Status::Ok();
}

void Launcher::SignalGroupLocked(Task* task, int signal) {
  if (task->status.pid > 0) ::kill(-task->status.pid, signal);
  if (signal == SIGKILL && task->in_cgroup) cgroup_.KillTask(task->status.task_id);
}

void Launcher::ReapLocked(Task* task, int wait_status) {
  TaskStatus& st = task->status;
  if (WIFSIGNALED(wait_status)) {
    st.signal = WTERMSIG(wait_status);
  } else {
    st.exit_code = WEXITSTATUS(wait_status);
  }
  if (task->suspend_requested) {
    st.state = TaskState::kSuspended;
  } else if (task->stop_requested) {
    st.state = TaskState::kStopped;
  } else {
    st.state = (st.signal == 0 && st.exit_code == 0) ? TaskState::kSucceeded : TaskState::kFailed;
  }
  st.ended_at = Now();
  FinishLocked(task);
}

// After the leader ended: nothing of the task may outlive it, and its last output is written before
// anyone reads the status.
void Launcher::FinishLocked(Task* task) {
  SignalGroupLocked(task, SIGKILL);
  task->leader_exited = true;
  if (task->pump.joinable()) task->pump.join();
  task->log->Note("task " + ExitText(task->status) + " (" +
                  std::string(TaskStateName(task->status.state)) + ")");
  if (task->in_cgroup) cgroup_.RemoveTask(task->status.task_id);
}

std::vector<TaskStatus> Launcher::Poll() {
  std::lock_guard<std::mutex> lock(mu_);
  const TimeMicros now = Now();
  std::vector<TaskStatus> ended;
  for (auto& t : tasks_) {
    Task* task = t.get();
    if (task->status.running()) {
      int ws = 0;
      const pid_t r = ::waitpid(task->status.pid, &ws, WNOHANG);
      if (r == task->status.pid) {
        ReapLocked(task, ws);
      } else if (task->phase == Task::Phase::kSuspending && now >= task->deadline) {
        task->stop_requested = true;
        SignalGroupLocked(task, SIGTERM);
        task->phase = Task::Phase::kStopping;
        task->deadline = now + task->kill_grace;
      } else if (task->phase == Task::Phase::kStopping && now >= task->deadline) {
        SignalGroupLocked(task, SIGKILL);
        task->phase = Task::Phase::kKilled;
      }
    }
    if (!task->status.running() && !task->reported) {
      task->reported = true;
      TaskStatus copy = task->status;
      copy.log_note = task->log->note();
      ended.push_back(std::move(copy));
    }
  }
  return ended;
}

Status Launcher::Stop(const std::string& task_id, TimeMicros grace_micros) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& task : tasks_) {
    if (task->status.task_id != task_id) continue;
    if (!task->status.running()) return Status::Ok();
    task->stop_requested = true;
    const TimeMicros deadline = Now() + std::max<TimeMicros>(grace_micros, 0);
    if (task->phase == Task::Phase::kStopping && task->deadline <= deadline) return Status::Ok();
    if (task->phase == Task::Phase::kKilled) return Status::Ok();
    SignalGroupLocked(task.get(), SIGTERM);
    task->phase = Task::Phase::kStopping;
    task->deadline = deadline;
    return Status::Ok();
  }
  return NotFoundError("no task " + task_id);
}

Status Launcher::Suspend(const std::string& task_id, TimeMicros grace_micros) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& task : tasks_) {
    if (task->status.task_id != task_id) continue;
    if (!task->status.running())
      return FailedPreconditionError("task " + task_id + " is not running");
    if (task->phase != Task::Phase::kRunning)
      return Status::Ok();  // already suspending or stopping
    {
      std::ofstream flag(task->suspend_file);
      flag << "suspend requested at " << Now() << "\n";
      if (!flag) return UnavailableError("cannot write suspend file " + task->suspend_file);
    }
    task->suspend_requested = true;
    SignalGroupLocked(task.get(), task->suspend_signal);
    task->phase = Task::Phase::kSuspending;
    task->kill_grace = std::max<TimeMicros>(grace_micros, 0);
    task->deadline = Now() + task->kill_grace;
    return Status::Ok();
  }
  return NotFoundError("no task " + task_id);
}

Result<TaskStatus> Launcher::WaitFor(const std::string& task_id, TimeMicros timeout_micros) {
  const auto until = SteadyClock::now() + std::chrono::microseconds(timeout_micros);
  for (;;) {
    // Reaps and escalates without consuming the ended-task events Poll() hands to its caller.
    {
      std::lock_guard<std::mutex> lock(mu_);
      bool found = false;
      for (auto& task : tasks_) {
        if (task->status.task_id != task_id) continue;
        found = true;
        if (task->status.running()) {
          int ws = 0;
          if (::waitpid(task->status.pid, &ws, WNOHANG) == task->status.pid)
            ReapLocked(task.get(), ws);
        }
        if (!task->status.running() || SteadyClock::now() >= until) {
          TaskStatus copy = task->status;
          copy.log_note = task->log->note();
          return copy;
        }
      }
      if (!found) return NotFoundError("no task " + task_id);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Result<TaskStatus> Launcher::Get(const std::string& task_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& task : tasks_) {
    if (task->status.task_id != task_id) continue;
    TaskStatus copy = task->status;
    copy.log_note = task->log->note();
    return copy;
  }
  return NotFoundError("no task " + task_id);
}

std::vector<TaskStatus> Launcher::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TaskStatus> out;
  for (const auto& task : tasks_) {
    out.push_back(task->status);
    out.back().log_note = task->log->note();
  }
  return out;
}

Status Launcher::Forget(const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = tasks_.begin(); it != tasks_.end(); ++it) {
    if ((*it)->status.task_id != task_id) continue;
    if ((*it)->status.running())
      return FailedPreconditionError("task " + task_id + " is still running");
    tasks_.erase(it);
    return Status::Ok();
  }
  return NotFoundError("no task " + task_id);
}

}  // namespace xpool::agent
