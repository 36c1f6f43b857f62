// `xpool server`: the control plane (REST API, scheduling loop, durable state). See docs/api.md.
#include <csignal>
#include <cstdio>
#include <string>

#include "cli/control_commands.h"
#include "cli/server_flags.h"
#include "cli/stop_signals.h"
#include "common/flags.h"
#include "server/server.h"

namespace xpool::cli {

int RunServer(const Args& args) {
  server::ServerOptions options;
  FlagSet flags("xpool server", "Runs the control plane: REST API, scheduling loop, durable state.");
  int64_t max_body = static_cast<int64_t>(options.max_body_bytes);
  int64_t threads = options.threads;
  flags.String("listen", &options.listen, "HOST:PORT to serve the API on (default 127.0.0.1:8470)");
  flags.String("agent-listen", &options.agent_listen,
               "HOST:PORT for agents (gRPC), or off (default: the API's host, port 8471 when --listen is on port "
               "8470, else any free port, printed)");
  flags.String("state-dir", &options.state_dir, "directory for admin.token and the SQLite database (required)");
  flags.String("store", &options.store, "postgres://... to keep state in PostgreSQL (default: SQLite in --state-dir)");
  flags.String("policy", &options.policy,
               "placement policy (default: default, the fragmentation-aware one; docs/scheduling.md)");
  flags.Int("max-body", &max_body, "largest request body in bytes (default 1 MiB); larger is 413");
  flags.Int("threads", &threads, "HTTP worker threads running requests (default 128)");
  flags.Int("tick-ms", &options.tick_ms, "periodic scheduling pass interval in ms (default 1000)");
  std::string task_log_dirs;
  flags.String("task-log-dir", &task_log_dirs,
               "agents' --state-dir on this machine, comma-separated: `xpool logs` reads the task log files there "
               "when the server's copy does not hold them (after a server restart)");
  AddSharedServerFlags(flags, &options);
  int code = 0;
  if (!ParseFlagsOrExit(flags, args, &code)) return code;
  for (size_t start = 0; start < task_log_dirs.size();) {
    size_t comma = task_log_dirs.find(',', start);
    if (comma == std::string::npos) comma = task_log_dirs.size();
    if (comma > start) options.task_log_dirs.push_back(task_log_dirs.substr(start, comma - start));
    start = comma + 1;
  }
  if (max_body < 1024 || threads < 1 || threads > 1024 || options.tick_ms < 10) {
    std::fprintf(stderr, "error: --max-body must be >= 1024, --threads 1..1024, --tick-ms >= 10\n");
    return 2;
  }
  options.max_body_bytes = static_cast<size_t>(max_body);
  options.threads = static_cast<int>(threads);

  // SIGINT/SIGTERM are taken by a thread (sigwait) so the shutdown runs outside a signal handler.
  const sigset_t stop_signals = BlockStopSignals();

  auto server = server::Server::Create(options);
  if (!server.ok()) {
    std::fprintf(stderr, "error: %s\n", server.status().message().c_str());
    return 1;
  }
  Status s = ServeUntilStopSignal(
      stop_signals, "xpool server", "", [&] { return (*server)->Run(); }, [&] { (*server)->Shutdown(); });
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace xpool::cli
