#pragma once
// Test support for the end-to-end tests under tests/ (library xpool_test_support): the real `xpool` binary run
// as child processes — any command (XpoolProcess), `xpool server` (ServerProcess), `xpool up` (UpProcess) —,
// CLI runs, free ports, files. Each object is owned by one test and is not thread-safe.
//
// What needs no HTTP (ports, files, XpoolProcess, RunCli) is inline: a test that uses only that part need not
// link the library. TempDir, XpoolProcess::WaitHealthy, ServerProcess and UpProcess are in xpool_process.cc.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/testing/free_port.h"  // FreePort(), shared with src/store/testing

namespace httplib {
class Client;
}  // namespace httplib

namespace xpool::testing {

// The file's text without trailing newlines and blanks; "" when it cannot be read.
inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// True while `pid` runs (a zombie left for an init that does not reap counts as gone).
inline bool ProcessAlive(pid_t pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] != 'Z';
}

// BUILD/bin/xpool, from XPOOL_BINARY_DIR (set by ctest for every xpool_test).
inline std::string XpoolBinary() {
  const char* bin_dir = std::getenv("XPOOL_BINARY_DIR");
  return std::string(bin_dir ? bin_dir : ".") + "/bin/xpool";
}

// Mode 1777 for `dir`: a test run as root runs its tasks as their tenant's uid (docs/agent.md, "Task identity"),
// and tasks that write files (pid files, checkpoints) write them into the test's directory.
inline void LetTasksWrite(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::permissions(dir, std::filesystem::perms::all | std::filesystem::perms::sticky_bit, ec);
}

// A new empty directory TMP/xpool_e2e_<name>_<pid> (an old one of that name is removed first), tasks may write in
// it (LetTasksWrite).
std::filesystem::path TempDir(const std::string& name);

// Runs `[env] xpool ARGS` through the shell (arguments single-quoted; `env` is a prefix such as "HOME=/x A=b")
// and returns its stdout (and stderr after it when `with_stderr`); *code gets the exit code (-1 if it died).
inline std::string RunCli(const std::vector<std::string>& args, int* code, bool with_stderr = true,
                          const std::string& env = "") {
  std::string cmd = env + " '" + XpoolBinary() + "'";
  for (const std::string& a : args) cmd += " '" + a + "'";
  cmd += with_stderr ? " 2>&1" : " 2>/dev/null";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    if (code) *code = -1;
    return out;
  }
  std::array<char, 4096> buf;
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(p);
  if (code) *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// A child process running `BINARY ARGS...` in `cwd` with stdout and stderr appended to `log`.
class XpoolProcess {
 public:
  explicit XpoolProcess(std::string binary = XpoolBinary()) : binary_(std::move(binary)) {}
  XpoolProcess(const XpoolProcess&) = delete;
  XpoolProcess& operator=(const XpoolProcess&) = delete;
  ~XpoolProcess() { Stop(); }

  bool Start(const std::vector<std::string>& args, const std::filesystem::path& cwd, const std::filesystem::path& log) {
    log_ = log;
    pid_ = ::fork();
    if (pid_ == 0) {
      if (::chdir(cwd.c_str()) != 0) std::_Exit(126);
      if (!std::freopen(log.c_str(), "a", stderr)) std::_Exit(126);
      ::dup2(::fileno(stderr), STDOUT_FILENO);
      std::vector<char*> argv;
      argv.push_back(binary_.data());
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(binary_.c_str(), argv.data());
      std::_Exit(127);
    }
    return pid_ > 0;
  }
  // False once the process has exited (it is reaped then).
  bool Alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }
  // Sends `signal`; SIGKILL after 10 s if it is still running. Waits for the exit.
  void Stop(int signal = SIGTERM) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    int status = 0;
    for (int i = 0; i < 100 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (::waitpid(pid_, &status, WNOHANG) == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
    pid_ = -1;
  }
  pid_t pid() const { return pid_; }
  std::string Log() const { return ReadFile(log_); }
  // Waits up to `seconds` for `text` to appear in the log.
  bool WaitForLog(const std::string& text, int seconds) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      if (Log().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  // Waits up to `seconds` for GET http://127.0.0.1:PORT/healthz to answer 200; false early if the process exits.
  bool WaitHealthy(int port, int seconds);

 private:
  std::string binary_;
  pid_t pid_ = -1;
  std::filesystem::path log_;
};

// `xpool server --listen 127.0.0.1:PORT --state-dir STATE_DIR` on a free port (the same one after a restart),
// log in STATE_DIR/server.log. Stopped (SIGTERM) on destruction.
class ServerProcess {
 public:
  ServerProcess(std::string binary, std::string state_dir);

  // Starts the server with the extra flags (split at spaces) and waits for /healthz (up to 60 s).
  bool Start(const std::string& extra_flags = "");
  void Kill9() { process_.Stop(SIGKILL); }
  void Stop() { process_.Stop(SIGTERM); }
  bool running() { return process_.Alive(); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  pid_t pid() const { return process_.pid(); }
  // Contents of STATE_DIR/admin.token without the newline ("" if absent).
  std::string AdminToken() const { return ReadFile(std::filesystem::path(state_dir_) / "admin.token"); }
  std::string Log() const { return process_.Log(); }
  // A client of this server sending `token` (none when empty); 2 s to connect, 20 s to read.
  std::unique_ptr<httplib::Client> Client(const std::string& token) const;

 private:
  std::string state_dir_;
  int port_ = 0;
  XpoolProcess process_;
};

// `xpool up --listen 127.0.0.1:0 --state-dir DIR/var EXTRA...` run in DIR, log in DIR/up.log. Start learns the
// bound port from the hint `xpool up` prints, then waits for the admin token and for its node to register.
class UpProcess {
 public:
  explicit UpProcess(std::filesystem::path dir) : dir_(std::move(dir)) {}

  bool Start(const std::vector<std::string>& extra_args, int seconds = 30);
  void Stop() { process_.Stop(SIGTERM); }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& token() const { return token_; }
  std::string Log() const { return process_.Log(); }
  pid_t pid() const { return process_.pid(); }

 private:
  std::filesystem::path dir_;
  int port_ = 0;
  std::string token_;
  XpoolProcess process_;
};

}  // namespace xpool::testing
