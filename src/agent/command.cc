#include "agent/command.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "agent/internal/child_session.h"

extern char** environ;

namespace xpool::agent {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A file descriptor closed on scope exit.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// A pipe whose ends are close-on-exec (the child dups the ends it uses onto 0/1/2).
Status MakePipe(Fd* read_end, Fd* write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return InternalError(std::string("pipe: ") + std::strerror(errno));
  read_end->Reset(fds[0]);
  write_end->Reset(fds[1]);
  return Status::Ok();
}

// The agent's environment with `overrides` set, as the NAME=VALUE strings execve takes.
std::vector<std::string> MergedEnv(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (overrides.count(name) == 0) env.push_back(entry);
  }
  for (const auto& [name, value] : overrides) {
    std::string entry = name;
    entry += '=';
    entry += value;
    env.push_back(std::move(entry));
  }
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Reads what `fd` has now (non-blocking) into `out` up to the cap; false at EOF or on an error.
bool Drain(int fd, std::string* out) {
  char buf[8192];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      const size_t room = kMaxCommandOutputBytes > out->size() ? kMaxCommandOutputBytes - out->size() : 0;
      out->append(buf, std::min(room, static_cast<size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

int ExitCode(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

// Runs in the forked child: only async-signal-safe calls. Reports a failed exec's errno on `report_fd`.
[[noreturn]] void ExecChild(const char* program, char* const* argv, char* const* envp, int in_fd, int out_fd,
                            int err_fd, int report_fd) {
  internal::StartOwnSessionWithDefaultSignals();
  ::dup2(in_fd, 0);
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  ::execve(program, argv, envp);
  const int err = errno;
  (void)!::write(report_fd, &err, sizeof err);
  ::_exit(127);
}

// Feeds `input` to the child's stdin without blocking; closes it once everything is written (or the child
// stopped reading). SIGPIPE is blocked meanwhile and a pending one taken back, so a child that closed its stdin
// gives EPIPE here instead of ending a process that did not ignore the signal.
void Feed(Fd* in, const std::string& input, size_t* written) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  bool done = false;
  while (!done && *written < input.size()) {
    const ssize_t n = ::write(in->get(), input.data() + *written, input.size() - *written);
    if (n > 0) {
      *written += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else {
      done = true;  // EPIPE: the child closed its stdin
      const timespec zero{};
      ::sigtimedwait(&pipe_set, nullptr, &zero);
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (done || *written == input.size()) in->Reset();
}

}  // namespace

std::string SearchPath(const std::string& name, const std::string& path_list, bool by_others) {
  size_t start = 0;
  while (start <= path_list.size()) {
    size_t colon = path_list.find(':', start);
    if (colon == std::string::npos) colon = path_list.size();
    std::string dir = path_list.substr(start, colon - start);
    if (dir.empty()) dir = ".";
    std::string candidate = std::move(dir);
    candidate += '/';
    candidate += name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0 &&
        (!by_others || (st.st_mode & S_IXOTH) != 0)) {
      return candidate;
    }
    start = colon + 1;
  }
  return "";
}

Result<std::string> ResolveProgram(const std::string& program) {
  if (program.empty()) return InvalidArgumentError("no program given");
  if (program.find('/') != std::string::npos) {
    struct stat st {};
    if (::stat(program.c_str(), &st) != 0) return NotFoundError(program + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode) || ::access(program.c_str(), X_OK) != 0) {
      return PermissionDeniedError(program + ": not an executable file");
    }
    return program;
  }
  const char* env_path = std::getenv("PATH");
  const std::string path_list = env_path ? env_path : "/usr/local/bin:/usr/bin:/bin";
  std::string found = SearchPath(program, path_list);
  if (found.empty()) return NotFoundError(program + " not found (PATH=" + path_list + ")");
  return found;
}

std::string Complaint(const CommandOutput& output) {
  const std::string& text = output.err.empty() ? output.out : output.err;
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  return line;
}

std::string CommandLine(const CommandSpec& spec) {
  std::string line = spec.program.substr(spec.program.rfind('/') + 1);
  for (const std::string& a : spec.args) line += " " + a;
  return line;
}

Result<CommandOutput> RunCommand(const CommandSpec& spec) {
  const std::string what = CommandLine(spec);
  std::vector<std::string> argv_strings = {spec.program};
  argv_strings.insert(argv_strings.end(), spec.args.begin(), spec.args.end());
  std::vector<std::string> env_strings = MergedEnv(spec.env);
  std::vector<char*> argv = Pointers(argv_strings);
  std::vector<char*> envp = Pointers(env_strings);

  Fd in_r, in_w, out_r, out_w, err_r, err_w, rep_r, rep_w;
  RETURN_IF_ERROR(MakePipe(&in_r, &in_w));
  RETURN_IF_ERROR(MakePipe(&out_r, &out_w));
  RETURN_IF_ERROR(MakePipe(&err_r, &err_w));
  RETURN_IF_ERROR(MakePipe(&rep_r, &rep_w));
  const pid_t pid = ::fork();
  if (pid < 0) return InternalError(what + ": fork: " + std::strerror(errno));
  if (pid == 0) {
    ExecChild(spec.program.c_str(), argv.data(), envp.data(), in_r.get(), out_w.get(), err_w.get(), rep_w.get());
  }
  in_r.Reset();
  out_w.Reset();
  err_w.Reset();
  rep_w.Reset();
  int exec_errno = 0;
  if (::read(rep_r.get(), &exec_errno, sizeof exec_errno) == static_cast<ssize_t>(sizeof exec_errno)) {
    int ignored = 0;
    ::waitpid(pid, &ignored, 0);
    const std::string why = what + ": cannot execute " + spec.program + ": " + std::strerror(exec_errno);
    return exec_errno == ENOENT ? NotFoundError(why) : PermissionDeniedError(why);
  }
  for (const Fd* fd : {&in_w, &out_r, &err_r}) ::fcntl(fd->get(), F_SETFL, O_NONBLOCK);
  if (spec.input.empty()) in_w.Reset();

  CommandOutput result;
  size_t written = 0;
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(spec.timeout_ms);
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
    if (left <= 0) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return UnavailableError(what + " did not finish within " + std::to_string(spec.timeout_ms) + " ms (killed)");
    }
    pollfd fds[3] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}, {in_w.get(), POLLOUT, 0}};
    // Short waits: the child's exit is seen by waitpid, not by the pipes (a daemon it left may hold them open).
    ::poll(fds, 3, static_cast<int>(std::min<int64_t>(left, 20)));
    if (out_r.get() >= 0 && !Drain(out_r.get(), &result.out)) out_r.Reset();
    if (err_r.get() >= 0 && !Drain(err_r.get(), &result.err)) err_r.Reset();
    if (in_w.get() >= 0) Feed(&in_w, spec.input, &written);
  }
  if (out_r.get() >= 0) Drain(out_r.get(), &result.out);
  if (err_r.get() >= 0) Drain(err_r.get(), &result.err);
  result.exit_code = ExitCode(status);
  return result;
}

}  // namespace xpool::agent
