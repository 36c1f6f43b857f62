#pragma once
// ServerProcess: starts the real `xpool server` binary on a free loopback port for end-to-end tests and
// benchmarks, and kills it (SIGKILL, as a crash) or stops it (SIGTERM). Owned by one test; not thread-safe.
#include <sys/types.h>

#include <string>

namespace xpool::testing {

class ServerProcess {
 public:
  // `binary` is the xpool executable; `state_dir` is passed as --state-dir; the log goes to state_dir/server.log.
  ServerProcess(std::string binary, std::string state_dir);
  ~ServerProcess();

  // Starts the server (on the same port as before when restarted) and waits for /healthz (up to 60 s).
  bool Start(const std::string& extra_flags = "");
  void Kill9();
  void Stop();
  bool running() const { return pid_ > 0; }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  // Contents of STATE_DIR/admin.token without the newline ("" if absent).
  std::string AdminToken() const;
  std::string Log() const;

 private:
  std::string binary_;
  std::string state_dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// A TCP port that was free a moment ago.
int FreePort();

}  // namespace xpool::testing
