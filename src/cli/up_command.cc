// `xpool up`: runs the server (state in ./var, API on 127.0.0.1:8470) and, in a thread of the same process, the
// node agent for this machine, wired to the control plane in-process (server::AgentService) rather than over
// HTTP. NVML devices when present; otherwise a simulated 4xA100-80GB node, said clearly. The tasks run as real
// processes (the agent's launcher, logs in STATE_DIR/tasks/<task>/output.log).
#include "cli/up_command.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "agent/change_watcher.h"
#include "agent/discovery.h"
#include "agent/launcher.h"
#include "agent/node_agent.h"
#include "agent/task_env.h"
#include "cli/agent_command.h"
#include "cli/server_flags.h"
#include "cli/stop_signals.h"
#include "common/flags.h"
#include "protocol/log_relay.h"
#include "server/agent_service.h"
#include "server/server.h"

namespace xpool::cli {
namespace {

std::atomic<bool> g_stop_agent{false};

// `xpool up --mig-dynamic`: how the in-process agent finds its devices again after the server's MIG geometry.
struct DynamicMig {
  bool on = false;
  agent::DiscoveryOptions discovery;
  std::string address;  // the node's kNodeAddressLabel
  agent::Launcher* launcher = nullptr;
};

// Takes the MIG geometry the server's last reply asked for, if any and if it may (cli/agent_command.h
// TakeMigGeometry: the launcher stays, so running tasks keep running), and gives the agent the node as discovered
// again. True when the node must register again.
bool FollowMigGeometry(const DynamicMig& mig, agent::NodeAgent* node_agent) {
  if (!mig.on || node_agent->wanted_mig_geometry().empty() ||
      !TakeMigGeometry(node_agent->wanted_mig_geometry(), *mig.launcher, mig.discovery.nvml_library,
                       /*tasks_outlive_restart=*/true)) {
    return false;
  }
  auto report = agent::DiscoverNode(mig.discovery);
  if (!report.ok()) {
    std::fprintf(stderr, "agent: discovering the GPUs again: %s (registering as before)\n",
                 report.status().message().c_str());
    return true;
  }
  report->node.labels[protocol::kNodeAddressLabel] = mig.address;
  mig.launcher->SetVisibleNames(agent::VisibleDeviceNames(report->node));
  node_agent->ReplaceNode(std::move(report->node));
  return true;
}

// Registers, then ticks until stopped: at once when the server changed what it wants here or a task ended or
// started (agent/change_watcher.h), else every interval. Errors are printed once each and retried.
void AgentLoop(agent::NodeAgent* node_agent, protocol::ControlPlaneClient* client, const DynamicMig* mig) {
  agent::ChangeWatcher watcher(client, node_agent->node(), /*long_poll=*/200'000);  // in process: no round trip
  bool registered = false;
  std::string last_error;
  while (!g_stop_agent.load()) {
    const bool registering = !registered;
    Status s = registered ? node_agent->Tick() : node_agent->Register();
    if (s.ok()) registered = true;
    if (s.code() == StatusCode::kNotFound) registered = false;
    if (!s.ok() && s.message() != last_error) std::fprintf(stderr, "agent: %s (retrying)\n", s.message().c_str());
    last_error = s.ok() ? "" : s.message();
    for (const std::string& n : node_agent->TakeNotices()) std::fprintf(stderr, "agent: %s\n", n.c_str());
    if (s.ok() && registering) continue;  // the first heartbeat at once
    if (s.ok() && FollowMigGeometry(*mig, node_agent)) {
      registered = false;
      continue;
    }
    watcher.Seen(node_agent->generation());
    watcher.WaitForWork(*node_agent, node_agent->interval_micros(), [] { return g_stop_agent.load(); });
  }
}

}  // namespace

int RunUp(const Args& args) {
  FlagSet flags("xpool up",
                "Runs xpool on this machine: the control plane and an agent for this machine's accelerators\n"
                "(a simulated 4xA100-80GB node when NVML is not available).");
  server::ServerOptions options;
  options.state_dir = "var";
  std::string simulate, nvml_library = "libnvidia-ml.so.1", name, address;
  flags.String("listen", &options.listen, "HOST:PORT to serve the API on (default 127.0.0.1:8470)");
  flags.String("agent-listen", &options.agent_listen,
               "HOST:PORT for more agents (gRPC), or off (default: the API's host, port 8471 when --listen is on "
               "port 8470, else any free port, printed)");
  flags.String("state-dir", &options.state_dir,
               "directory for the database, admin.token and task logs (default ./var)");
  flags.String("policy", &options.policy,
               "placement policy (default: default, the fragmentation-aware one; docs/scheduling.md)");
  flags.String("simulate", &simulate, "simulate these devices instead of discovering, e.g. 4xA100-80GB");
  flags.String("nvml-library", &nvml_library, "the NVML library to load (default libnvidia-ml.so.1)");
  DeviceModeFlags modes;
  modes.Add(flags);
  flags.String("node-name", &name, "this node's name (default: the host name)");
  flags.String("address", &address,
               "the address other nodes reach this node's tasks at (MASTER_ADDR of a multi-replica job whose "
               "replica 0 runs here); default 127.0.0.1 when agents can only connect from this machine, else the "
               "host name");
  AddSharedServerFlags(flags, &options);
  TaskIdentityFlags identity;
  identity.Add(flags);
  int code = 0;
  if (!ParseFlagsOrExit(flags, args, &code)) return code;

  agent::DiscoveryOptions discovery;
  discovery.simulate = simulate;
  discovery.nvml_library = nvml_library;
  discovery.fallback_simulate = "4xA100-80GB";
  discovery.node_name = name;
  discovery.mig_slots = modes.mig_dynamic;
  if (int failed = modes.ApplyBeforeDiscovery(nvml_library); failed != 0) return failed;
  auto report = agent::DiscoverNode(discovery);
  if (!report.ok()) {
    std::fprintf(stderr, "error: %s\n", report.status().message().c_str());
    return report.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  if (int failed = modes.ApplyToNode(&report->node); failed != 0) return failed;

  if (address.empty()) {
    // Remote agents connect to --agent-listen (off: none; unset: the --listen host).
    const std::string& peer = options.agent_listen.empty() ? options.listen : options.agent_listen;
    address = peer == "off" ? "127.0.0.1" : agent::DefaultNodeAddress(peer);
  }
  report->node.labels[protocol::kNodeAddressLabel] = address;

  options.task_log_dirs.push_back(options.state_dir + "/tasks");  // the in-process agent's tasks (see below)
  const sigset_t stop_signals = BlockStopSignals();

  auto server = server::Server::Create(options);
  if (!server.ok()) {
    std::fprintf(stderr, "error: %s\n", server.status().message().c_str());
    return 1;
  }
  if (report->node.simulated) {
    std::fprintf(stderr,
                 "xpool up: NOTICE: no GPU found through NVML; this node is SIMULATED (%zu devices). Jobs run as\n"
                 "          real processes, but their devices are not real.\n",
                 report->node.devices.size());
    if (!report->note.empty()) std::fprintf(stderr, "          %s\n", report->note.c_str());
  }
  agent::LauncherOptions launcher_options;
  launcher_options.state_dir = options.state_dir + "/tasks";
  launcher_options.stop_tasks_on_exit = true;  // the whole pool stops; a crashed `xpool up` adopts its tasks
  // As root the tasks' own directories cannot be under the state dir (mode 0700: the database, the admin token):
  // they go next to it, in STATE_DIR-tasks, unless --task-root says where.
  if (Status s = identity.Apply(&launcher_options, options.state_dir + "-tasks"); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 2;
  }
  if (launcher_options.task_uids) {
    std::fprintf(stderr, "agent: running as root: each task runs as uid %u + its tenant's id, in %s\n",
                 launcher_options.task_uids->first, launcher_options.task_root.c_str());
  } else {
    std::fprintf(stderr, "agent: not running as root: tasks run as this user (uid %d), not isolated\n",
                 static_cast<int>(::geteuid()));
  }
  // MPS daemons (none unless --mps) under the tasks' root, which tasks run as other users can reach.
  std::unique_ptr<agent::MpsDaemons> mps_daemons = StartMps(
      &report->node, modes.mps_control,
      launcher_options.task_root.empty() ? launcher_options.state_dir : launcher_options.task_root, &launcher_options);
  launcher_options.visible_names = agent::VisibleDeviceNames(report->node);
  agent::Launcher launcher(launcher_options);
  for (const std::string& n : launcher.TakeNotices()) std::fprintf(stderr, "agent: %s\n", n.c_str());
  // The server's own agent service (it keeps the reports' log chunks in the server's relay, as for remote agents).
  agent::NodeAgent node_agent(report->node, &(*server)->agent_service(), &launcher);
  std::unique_ptr<agent::UsageProbe> usage_probe = agent::MakeUsageProbe(report->source, nvml_library);
  node_agent.SetUsageProbe(usage_probe.get());
  const DynamicMig mig{modes.mig_dynamic, discovery, address, &launcher};
  std::thread agent_thread(AgentLoop, &node_agent, &(*server)->agent_service(), &mig);

  // The hint names the bound port (with --listen HOST:0 that is only known once the server has bound it).
  const std::string host = options.listen.substr(0, options.listen.rfind(':'));
  auto print_hint = [&](int port) {
    const std::string url = "http://" + host + ":" + std::to_string(port);
    std::fprintf(stderr,
                 "xpool up: node %s with %zu device(s); admin token in %s/admin.token\n"
                 "Try (another shell, same directory):\n"
                 "  export XPOOL_SERVER=%s XPOOL_TOKEN=$(cat %s/admin.token)\n"
                 "  build/bin/xpool submit -f examples/up/half-gpu.yaml && build/bin/xpool get jobs\n"
                 "Studio (web UI): %s/ (sign in with the admin token)\n",
                 report->node.name.c_str(), report->node.devices.size(), options.state_dir.c_str(), url.c_str(),
                 options.state_dir.c_str(), url.c_str());
    std::fflush(stderr);
  };
  Status s = ServeUntilStopSignal(
      stop_signals, "xpool up", " (tasks are stopped)", [&] { return (*server)->Run(print_hint); },
      [&] { (*server)->Shutdown(); });
  g_stop_agent = true;
  agent_thread.join();  // the launcher stops the tasks as it goes, then the MPS daemons quit
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace xpool::cli
