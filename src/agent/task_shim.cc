#include "agent/task_shim.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "agent/internal/child_session.h"
#include "protocol/task_log.h"

namespace xpool::agent {
namespace {

using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// How long the shim keeps draining the task's output after its leader exited and the group was killed: output
// still in flight is kept, but a process that escaped the group cannot hold the shim forever.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(1000);
// Grace between SIGTERM and SIGKILL when the shim itself is asked to stop (SIGTERM/SIGINT to the shim).
constexpr TimeMicros kSelfStopGrace = 10 * kMicrosPerSecond;

// How often a fenced shim reads its agent's lease.
constexpr auto kLeaseCheckEvery = std::chrono::milliseconds(250);

// What the task's child tells the shim when it could not exec (over a close-on-exec pipe).
struct ChildError {
  int stage;  // ChildStage
  int err;
};
enum ChildStage { kStageChdir = 1, kStageExec, kStageSetgroups, kStageSetgid, kStageSetuid, kStageRegainRoot };

std::string ChildErrorText(const ShimSpec& spec, const ChildError& e) {
  const std::string ids = "uid " + std::to_string(spec.uid) + " gid " + std::to_string(spec.gid);
  switch (e.stage) {
    case kStageChdir:
      return "workdir \"" + spec.workdir + "\": " + std::strerror(e.err);
    case kStageSetgroups:
      return "cannot drop the supplementary groups for " + ids + ": " + std::strerror(e.err);
    case kStageSetgid:
      return "cannot change to " + ids + " (setgid): " + std::strerror(e.err);
    case kStageSetuid:
      return "cannot change to " + ids + " (setuid): " + std::strerror(e.err);
    case kStageRegainRoot:
      return "after changing to " + ids + " the task could still become root: refusing to run it";
    default:
      return "exec \"" + spec.program + "\": " + std::strerror(e.err);
  }
}

// In the task's child, before exec (async-signal-safe calls only): becomes the spec's uid/gid when it names one.
// The order matters: supplementary groups and the gid can only be changed while the process is still root.
// Returns 0, or the failing ChildStage with errno set.
int DropPrivileges(int64_t uid, int64_t gid) {
  if (uid < 0 && gid < 0) return 0;
  if (::setgroups(0, nullptr) != 0) return kStageSetgroups;
  if (gid >= 0 && ::setgid(static_cast<gid_t>(gid)) != 0) return kStageSetgid;
  if (uid >= 0 && ::setuid(static_cast<uid_t>(uid)) != 0) return kStageSetuid;
  if (uid > 0 && ::setuid(0) == 0) {
    errno = EPERM;
    return kStageRegainRoot;
  }
  return 0;
}

volatile std::sig_atomic_t g_stop_requested = 0;
void OnStopSignal(int) { g_stop_requested = 1; }
// SIGURG from the launcher: a control request was just written (SendShimControl); it also cuts the loop's poll.
volatile std::sig_atomic_t g_control_poked = 0;
void OnControlPoke(int) { g_control_poked = 1; }

std::string Path(const std::string& dir, const char* name) { return dir + "/" + name; }

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Write + fsync-free rename: readers see the old or the new file, never a part.
Status WriteAtomically(const std::string& path, const std::string& text, mode_t mode) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return UnavailableError("cannot write " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return UnavailableError("cannot write " + tmp + ": " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return UnavailableError("cannot rename " + tmp + ": " + std::strerror(err));
  }
  return Status::Ok();
}

TimeMicros RealNow() { return RealClock::Instance().NowMicros(); }

std::string ExitText(const ShimStatus& s) {
  if (s.signal > 0) return "killed by signal " + std::to_string(s.signal) + " (" + strsignal(s.signal) + ")";
  return "exited with code " + std::to_string(s.exit_code);
}

// The suspend request for the task to read: mode 0644 whatever the umask (a task may run as another user).
void WriteSuspendFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return;
  (void)::fchmod(fd, 0644);
  static const char kText[] = "suspend requested\n";
  (void)!::write(fd, kText, sizeof kText - 1);
  ::close(fd);
}

// The running shim: one task, its log, its control requests.
class Shim {
 public:
  Shim(std::string dir, ShimSpec spec)
      : dir_(std::move(dir)), spec_(std::move(spec)), log_(dir_ + "/output.log", spec_.log_limits) {}

  int Run(int ready_fd);

 private:
  bool Launch();  // false: the task could not start (status already written)
  void Loop();
  void ReadControl();
  void CheckLease();
  void Apply(const std::string& action, TimeMicros grace);
  void Escalate();
  void Signal(int sig) {
    if (status_.pid > 0) ::kill(-status_.pid, sig);
  }
  void Finish(int wait_status);
  void Publish() { IgnoreError(WriteShimStatus(dir_, status_), "the next change publishes the whole status again"); }

  enum class Phase { kRunning, kSuspending, kStopping, kKilled };
  const std::string dir_;
  const ShimSpec spec_;
  LogWriter log_;
  ShimStatus status_;
  int out_fd_ = -1;
  Phase phase_ = Phase::kRunning;
  SteadyClock::time_point deadline_{};
  TimeMicros kill_grace_ = 0;
  bool stop_requested_ = false;
  bool suspend_requested_ = false;
  off_t control_offset_ = 0;
  std::string control_partial_;
  bool log_note_published_ = false;
  SteadyClock::time_point next_lease_check_{};
};

bool Shim::Launch() {
  status_.shim_pid = ::getpid();
  status_.started_at = spec_.started_at > 0 ? spec_.started_at : RealNow();
  auto fail = [&](std::string error) {
    status_.state = TaskState::kFailed;
    status_.exit_code = 127;
    status_.error = std::move(error);
    status_.ended_at = RealNow();
    log_.Note("task could not start: " + status_.error);
    Publish();
    return false;
  };
  log_.Note("start: " + (spec_.argv.empty() ? spec_.program : spec_.argv[0]) + " (restart " +
            std::to_string(spec_.restart_count) + ")");
  std::vector<std::string> env_strings = spec_.env, argv_strings = spec_.argv;
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const std::string procs = spec_.cgroup_dir.empty() ? "" : spec_.cgroup_dir + "/cgroup.procs";
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return fail(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return fail(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    return fail(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    // The task: a session (and process group) of its own, so signals to -pid reach all of it and not the shim.
    internal::StartOwnSessionWithDefaultSignals();
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(out_pipe[1], 2);
    if (!procs.empty()) {
      int fd = ::open(procs.c_str(), O_WRONLY | O_CREAT, 0644);
      if (fd >= 0) {
        (void)!::write(fd, "0", 1);
        ::close(fd);
      }
    }
    // Nothing of the shim's but the pipes above reaches the task (its lock, its log: close-on-exec anyway).
    ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    ChildError e{kStageChdir, 0};
    if (const int stage = DropPrivileges(spec_.uid, spec_.gid); stage != 0) {
      e = ChildError{stage, errno};
      (void)!::write(err_pipe[1], &e, sizeof e);
      ::_exit(127);
    }
    // After the change of uid: a workdir the task's user may not enter is refused like a missing one.
    if (::chdir(spec_.workdir.c_str()) != 0) {
      e.err = errno;
      (void)!::write(err_pipe[1], &e, sizeof e);
      ::_exit(127);
    }
    ::execve(spec_.program.c_str(), argv.data(), envp.data());
    e = ChildError{kStageExec, errno};
    (void)!::write(err_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ChildError e{0, 0};
  ssize_t n;
  while ((n = ::read(err_pipe[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  ::close(err_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof e)) {  // the child could not exec
    int ws = 0;
    while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    ::close(out_pipe[0]);
    return fail(ChildErrorText(spec_, e));
  }
  status_.pid = pid;
  status_.pid_start = ProcessStartTime(pid);
  status_.state = TaskState::kRunning;
  out_fd_ = out_pipe[0];
  Publish();
  return true;
}

void Shim::ReadControl() {
  const int fd = ::open(Path(dir_, kShimControlFile).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[4096];
  ssize_t n;
  while ((n = ::pread(fd, buf, sizeof buf, control_offset_)) > 0) {
    control_offset_ += n;
    control_partial_.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  size_t nl;
  while ((nl = control_partial_.find('\n')) != std::string::npos) {
    std::istringstream line(control_partial_.substr(0, nl));
    control_partial_.erase(0, nl + 1);
    std::string action;
    long long grace = 0;
    if (line >> action >> grace) Apply(action, std::max<TimeMicros>(grace, 0));
  }
}

void Shim::Apply(const std::string& action, TimeMicros grace) {
  const auto now = SteadyClock::now();
  if (action == "stop") {
    if (phase_ == Phase::kKilled) return;
    stop_requested_ = true;
    const auto deadline = now + std::chrono::microseconds(grace);
    if (phase_ == Phase::kStopping && deadline_ <= deadline) return;
    Signal(SIGTERM);
    phase_ = Phase::kStopping;
    deadline_ = deadline;
  } else if (action == "suspend") {
    if (phase_ != Phase::kRunning) return;  // already suspending or stopping
    suspend_requested_ = true;
    // The file and the signal back to back: a task that sees the file first and exits must not meet the signal
    // long after, while its handler is already gone.
    WriteSuspendFile(spec_.suspend_file.empty() ? dir_ + "/suspend" : spec_.suspend_file);
    Signal(spec_.suspend_signal);
    phase_ = Phase::kSuspending;
    kill_grace_ = grace;
    deadline_ = now + std::chrono::microseconds(grace);
  }
}

// The agent renews its lease after every heartbeat the server answered; an expired (or missing) lease means the
// server is about to count the node lost and run the job elsewhere: the task must be gone before that.
void Shim::CheckLease() {
  if (spec_.lease_file.empty() || status_.fenced || phase_ == Phase::kKilled) return;
  const auto now = SteadyClock::now();
  if (now < next_lease_check_) return;
  next_lease_check_ = now + kLeaseCheckEvery;
  auto lease = ReadLease(spec_.lease_file);
  if (lease.ok() && BootTimeMicros() < lease->expires_at) return;
  status_.fenced = true;
  const long long timeout_s = lease.ok() ? lease->node_timeout / kMicrosPerSecond : 0;
  log_.Note(lease.ok() ? "fenced: the agent has not reached the server for over the node timeout (" +
                             std::to_string(timeout_s) + " s); stopping the task, the server runs the job again"
                       : "fenced: the agent's lease " + spec_.lease_file + " is gone (" + lease.status().message() +
                             "); stopping the task");
  Apply("stop", kFenceGrace);
}

void Shim::Escalate() {
  const auto now = SteadyClock::now();
  if (phase_ == Phase::kSuspending && now >= deadline_) {
    stop_requested_ = true;
    Signal(SIGTERM);
    phase_ = Phase::kStopping;
    deadline_ = now + std::chrono::microseconds(kill_grace_);
  } else if (phase_ == Phase::kStopping && now >= deadline_) {
    Signal(SIGKILL);
    phase_ = Phase::kKilled;
  }
}

void Shim::Loop() {
  char buf[16384];
  auto next_control = SteadyClock::now();
  for (;;) {
    pollfd p{out_fd_, POLLIN, 0};
    const int r = out_fd_ >= 0 ? ::poll(&p, 1, 50) : ::poll(nullptr, 0, 50);
    if (r > 0 && out_fd_ >= 0) {
      const ssize_t n = ::read(out_fd_, buf, sizeof buf);
      if (n > 0) {
        log_.Write(std::string_view(buf, static_cast<size_t>(n)));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(out_fd_);  // every writer is gone; the leader's exit still comes through waitpid
        out_fd_ = -1;
      }
    }
    if (log_.stopped() && !log_note_published_) {
      log_note_published_ = true;
      status_.log_note = log_.note();
      Publish();
    }
    int ws = 0;
    if (::waitpid(status_.pid, &ws, WNOHANG) == status_.pid) return Finish(ws);
    const auto now = SteadyClock::now();
    if (g_control_poked) {
      g_control_poked = 0;
      next_control = now;
    }
    if (now >= next_control) {
      next_control = now + std::chrono::milliseconds(50);
      if (g_stop_requested) {
        g_stop_requested = 0;
        Apply("stop", kSelfStopGrace);
      }
      ReadControl();
      CheckLease();
      Escalate();
    }
  }
}

// After the leader ended: nothing of the task may outlive it, and its last output is in the log before the
// status says it ended.
void Shim::Finish(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    status_.signal = WTERMSIG(wait_status);
  } else {
    status_.exit_code = WEXITSTATUS(wait_status);
  }
  if (status_.fenced) {
    status_.state = TaskState::kStopped;
  } else if (suspend_requested_) {
    status_.state = TaskState::kSuspended;
  } else if (stop_requested_) {
    status_.state = TaskState::kStopped;
  } else {
    status_.state = (status_.signal == 0 && status_.exit_code == 0) ? TaskState::kSucceeded : TaskState::kFailed;
  }
  status_.ended_at = RealNow();
  Signal(SIGKILL);
  if (!spec_.cgroup_dir.empty()) {
    const int fd = ::open((spec_.cgroup_dir + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      (void)!::write(fd, "1", 1);
      ::close(fd);
    }
  }
  char buf[16384];
  const auto until = SteadyClock::now() + kDrainAfterExit;
  while (out_fd_ >= 0 && SteadyClock::now() < until) {
    pollfd p{out_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    log_.Write(std::string_view(buf, static_cast<size_t>(n)));
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  out_fd_ = -1;
  log_.Note("task " + ExitText(status_) + " (" + std::string(TaskStateName(status_.state)) + ")");
  status_.log_note = log_.note();
  Publish();
}

int Shim::Run(int ready_fd) {
  struct sigaction sa {};
  struct sigaction poke {};
  poke.sa_handler = OnControlPoke;  // no SA_RESTART: it interrupts the loop's poll
  ::sigaction(SIGURG, &poke, nullptr);
  sa.sa_handler = OnStopSignal;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::signal(SIGHUP, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  if (!log_.Open().ok()) {
    // No log at all: the task still runs; its output is drained and dropped.
  }
  const bool running = Launch();
  if (ready_fd >= 0) ::close(ready_fd);
  if (running) Loop();
  return 0;
}

}  // namespace

TaskState TaskStateFromName(std::string_view name) {
  for (TaskState s :
       {TaskState::kRunning, TaskState::kSucceeded, TaskState::kFailed, TaskState::kStopped, TaskState::kSuspended}) {
    if (TaskStateName(s) == name) return s;
  }
  return TaskState::kFailed;
}

uint64_t ProcessStartTime(pid_t pid) {
  if (pid <= 0) return 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream rest(line.substr(paren + 2));
  std::string field;
  // Fields after the command: 3 = state ... 22 = starttime.
  for (int i = 3; i < 22; ++i) {
    if (!(rest >> field)) return 0;
  }
  uint64_t start = 0;
  rest >> start;
  return start;
}

Status WriteShimSpec(const std::string& task_dir, const ShimSpec& s) {
  Json j = {{"task_id", s.task_id},
            {"job_id", s.job_id},
            {"replica", s.replica},
            {"restart_count", s.restart_count},
            {"program", s.program},
            {"argv", s.argv},
            {"env", s.env},
            {"workdir", s.workdir},
            {"log_max_bytes", s.log_limits.max_bytes},
            {"log_keep", s.log_limits.keep},
            {"cgroup_dir", s.cgroup_dir},
            {"suspend_signal", s.suspend_signal},
            {"started_at", s.started_at},
            {"uid", s.uid},
            {"gid", s.gid},
            {"lease_file", s.lease_file},
            {"suspend_file", s.suspend_file}};
  return WriteAtomically(Path(task_dir, kShimSpecFile), j.dump(), 0600);
}

Result<ShimSpec> ReadShimSpec(const std::string& task_dir) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(Path(task_dir, kShimSpecFile)));
  Json j = Json::parse(text, nullptr, false);
  if (!j.is_object()) return InvalidArgumentError(Path(task_dir, kShimSpecFile) + ": not a task spec");
  try {
    ShimSpec s;
    s.task_id = j.at("task_id").get<std::string>();
    s.job_id = j.at("job_id").get<int64_t>();
    s.replica = j.at("replica").get<int>();
    s.restart_count = j.at("restart_count").get<int>();
    s.program = j.at("program").get<std::string>();
    s.argv = j.at("argv").get<std::vector<std::string>>();
    s.env = j.at("env").get<std::vector<std::string>>();
    s.workdir = j.at("workdir").get<std::string>();
    s.log_limits.max_bytes = j.at("log_max_bytes").get<int64_t>();
    s.log_limits.keep = j.at("log_keep").get<int>();
    s.cgroup_dir = j.at("cgroup_dir").get<std::string>();
    s.suspend_signal = j.at("suspend_signal").get<int>();
    s.started_at = j.at("started_at").get<int64_t>();
    // Absent in the specs of older agents (adopted after an upgrade): the shim's own user, never fenced.
    s.uid = j.value("uid", int64_t{-1});
    s.gid = j.value("gid", int64_t{-1});
    s.lease_file = j.value("lease_file", "");
    s.suspend_file = j.value("suspend_file", "");
    return s;
  } catch (const Json::exception& e) {
    return InvalidArgumentError(Path(task_dir, kShimSpecFile) + ": " + e.what());
  }
}

Status WriteShimStatus(const std::string& task_dir, const ShimStatus& s) {
  Json j = {{"state", std::string(TaskStateName(s.state))},
            {"pid", s.pid},
            {"pid_start", s.pid_start},
            {"shim_pid", s.shim_pid},
            {"exit_code", s.exit_code},
            {"signal", s.signal},
            {"error", s.error},
            {"log_note", s.log_note},
            {"started_at", s.started_at},
            {"ended_at", s.ended_at},
            {"fenced", s.fenced}};
  return WriteAtomically(Path(task_dir, kShimStatusFile), j.dump(), 0600);
}

Result<ShimStatus> ReadShimStatus(const std::string& task_dir) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(Path(task_dir, kShimStatusFile)));
  Json j = Json::parse(text, nullptr, false);
  if (!j.is_object()) return InvalidArgumentError(Path(task_dir, kShimStatusFile) + ": not a task status");
  ShimStatus s;
  s.state = TaskStateFromName(j.value("state", ""));
  s.pid = j.value("pid", 0);
  s.pid_start = j.value("pid_start", uint64_t{0});
  s.shim_pid = j.value("shim_pid", 0);
  s.exit_code = j.value("exit_code", -1);
  s.signal = j.value("signal", 0);
  s.error = j.value("error", "");
  s.log_note = j.value("log_note", "");
  s.started_at = j.value("started_at", int64_t{0});
  s.ended_at = j.value("ended_at", int64_t{0});
  s.fenced = j.value("fenced", false);
  return s;
}

TimeMicros BootTimeMicros() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<TimeMicros>(ts.tv_sec) * kMicrosPerSecond + ts.tv_nsec / 1000;
}

Status WriteLease(const std::string& path, const Lease& lease) {
  return WriteAtomically(path, std::to_string(lease.expires_at) + " " + std::to_string(lease.node_timeout) + "\n",
                         0600);
}

Result<Lease> ReadLease(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  std::istringstream in(text);
  Lease lease;
  long long expires = 0, timeout = 0;
  if (!(in >> expires >> timeout)) return InvalidArgumentError(path + ": not a lease");
  lease.expires_at = expires;
  lease.node_timeout = timeout;
  return lease;
}

Status SendShimControl(const std::string& task_dir, const std::string& action, TimeMicros grace_micros,
                       pid_t shim_pid) {
  const std::string path = Path(task_dir, kShimControlFile);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return UnavailableError("cannot write " + path + ": " + std::strerror(errno));
  const std::string line = action + " " + std::to_string(std::max<TimeMicros>(grace_micros, 0)) + "\n";
  const ssize_t n = ::write(fd, line.data(), line.size());  // one small O_APPEND write: never interleaved
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size()))
    return UnavailableError("cannot write " + path + ": " + std::strerror(err));
  if (shim_pid > 0) ::kill(shim_pid, SIGURG);
  return Status::Ok();
}

bool ShimAlive(const std::string& task_dir) {
  const int fd = ::open(Path(task_dir, kShimLockFile).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases our shared lock if we got it
  return held;
}

int RunTaskShim(const std::string& task_dir, int ready_fd) {
  // The task must not inherit the ready fd: the agent waits for its last writer to close it.
  if (ready_fd >= 0) ::fcntl(ready_fd, F_SETFD, FD_CLOEXEC);
  const std::string lock_path = Path(task_dir, kShimLockFile);
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || ::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    std::fprintf(stderr, "task-shim: %s: %s\n", lock_path.c_str(),
                 lock < 0 ? std::strerror(errno) : "another shim runs this task");
    return 1;
  }
  auto spec = ReadShimSpec(task_dir);
  if (!spec.ok()) {
    std::fprintf(stderr, "task-shim: %s\n", spec.status().message().c_str());
    return 1;
  }
  Shim shim(task_dir, std::move(*spec));
  return shim.Run(ready_fd);  // the lock is released when this process ends
}

}  // namespace xpool::agent
