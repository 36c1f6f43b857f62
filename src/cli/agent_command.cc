// `xpool agent`: discovers this machine's devices and (later) serves the server's assignments.
//
//   xpool agent --print-devices                          NVML, or "no NVML found"
//   xpool agent --simulate 4xA100-80GB --print-devices   a simulated node
//   xpool agent --node-file node.yaml --print-devices
//   xpool agent --server grpc://127.0.0.1:8471 --token-file var/admin.token [--simulate
//   4xA100-80GB]
//       registers the node and runs what the server assigns (heartbeats, task reports) until
//       Ctrl-C. Its tasks keep running after it (under their shims) and the next agent adopts them,
//       unless --stop-tasks.
//   xpool agent --stop-tasks --state-dir var/agent
//       stops every task left running there (a drain) and exits.
//   xpool agent --simulate 2xA100-80GB --run --devices 1 --gpumem 8192 --gpucores 50 -- python3
//   train.py
//       runs one task through the launcher as the agent would (env, process group, logs) and
//       streams its log.
#include "cli/agent_command.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "agent/change_watcher.h"
#include "agent/discovery.h"
#include "agent/grpc_client.h"
#include "agent/launcher.h"
#include "agent/mps.h"
#include "agent/node_agent.h"
#include "agent/nvml/nvml_mig.h"
#include "agent/task_env.h"
#include "common/flags.h"
#include "common/units.h"

namespace xpool::cli {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }

Result<std::vector<protocol::TaskDevice>> ParseDevices(const std::string& list, const agent::DiscoveryReport& report,
                                                       int64_t gpumem, int64_t gpucores) {
  std::vector<protocol::TaskDevice> devices;
  size_t start = 0;
  while (!list.empty() && start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    auto index = ParseNonNegativeInt(list.substr(start, comma - start));
    if (!index.ok()) return InvalidArgumentError("--devices: " + index.status().message());
    if (*index >= static_cast<int64_t>(report.node.devices.size())) {
      return InvalidArgumentError("--devices: no device " + std::to_string(*index) + " on this node (it has " +
                                  std::to_string(report.node.devices.size()) + ")");
    }
    devices.push_back({static_cast<int>(*index), gpumem, static_cast<int>(gpucores)});
    start = comma + 1;
  }
  return devices;
}

void PrintNotices(agent::Launcher& launcher) {
  for (const std::string& notice : launcher.TakeNotices()) std::fprintf(stderr, "notice: %s\n", notice.c_str());
}

// Runs one task in the foreground, streaming its log; Ctrl-C stops it (SIGTERM, SIGKILL after the
// grace).
int RunOneTask(const agent::DiscoveryReport& report, const std::vector<protocol::TaskDevice>& devices,
               const std::vector<std::string>& command, const std::string& state_dir, const std::string& workdir,
               int64_t grace_s, const std::string& mps_control) {
  agent::LauncherOptions options;
  options.state_dir = state_dir;
  options.stop_tasks_on_exit = true;  // a foreground run: its task ends with it
  Node node = report.node;
  std::unique_ptr<agent::MpsDaemons> mps = StartMps(&node, mps_control, state_dir, &options);
  agent::Launcher launcher(options);
  PrintNotices(launcher);
  protocol::LaunchSpec spec;
  spec.task_id = "local-r0";
  spec.argv = command;
  spec.workdir = workdir;
  spec.devices = devices;
  spec.vendor = devices.empty() ? Vendor::kNvidia : report.node.devices[devices[0].index].vendor;
  for (const auto& d : devices) {
    if ((d.memory_mib > 0 && d.memory_mib < report.node.devices[d.index].memory_mib) ||
        (d.core_percent > 0 && d.core_percent < 100)) {
      spec.shares_device = true;
    }
  }
  if (Status s = launcher.Start(spec); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  PrintNotices(launcher);
  std::signal(SIGINT, OnInterrupt);
  std::signal(SIGTERM, OnInterrupt);
  protocol::LogFollower follower(launcher.LogPath(spec.task_id));
  bool following = follower.Open(true).ok();
  bool stopping = false;
  for (;;) {
    if (g_interrupted && !stopping) {
      stopping = true;
      std::fprintf(stderr, "stopping the task (SIGTERM, SIGKILL after %llds)\n", static_cast<long long>(grace_s));
      if (Status s = launcher.Stop(spec.task_id, grace_s * kMicrosPerSecond); !s.ok()) {
        std::fprintf(stderr, "stopping the task: %s\n", s.ToString().c_str());
      }
    }
    auto ended = launcher.Poll();
    if (following) {
      auto text = follower.ReadNew();
      if (text.ok()) std::fwrite(text->data(), 1, text->size(), stdout);
      std::fflush(stdout);
    }
    if (!ended.empty()) {
      const protocol::TaskStatus& st = ended[0];
      if (following) {
        auto text = follower.ReadNew();
        if (text.ok()) std::fwrite(text->data(), 1, text->size(), stdout);
      }
      std::fprintf(stderr, "task %s: %s", st.task_id.c_str(), std::string(protocol::TaskStateName(st.state)).c_str());
      if (!st.error.empty()) std::fprintf(stderr, " — %s", st.error.c_str());
      if (!st.log_note.empty()) std::fprintf(stderr, " — %s", st.log_note.c_str());
      std::fprintf(stderr, "\nlog: %s\n", launcher.LogPath(spec.task_id).c_str());
      CheckOk(launcher.Forget(spec.task_id), "the task has ended");  // an agent here must not adopt it later
      StopMps(*mps);
      if (st.signal > 0) return 128 + st.signal;
      return st.exit_code;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Serve's answer when the node's MIG geometry changed: discover the node again and serve it anew.
constexpr int kDiscoverAgain = -1;

// Registers, then heartbeats and reconciles until interrupted. Every error is retried with a backoff (1 s
// doubling to 30 s; the tasks keep running meanwhile) and said once, in words: an unreachable or unknown server,
// a rejected token (the agent keeps trying: an admin may create the token after the agent starts).
int Serve(const agent::DiscoveryReport& report, const std::string& server, const std::string& token,
          const std::string& state_dir, bool stop_tasks, const TaskIdentityFlags& identity,
          const std::string& mps_control, const std::string& nvml_library, bool mig_dynamic) {
  agent::LauncherOptions options;
  options.state_dir = state_dir;
  options.stop_tasks_on_exit = stop_tasks;
  if (Status s = identity.Apply(&options, ""); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 2;
  }
  if (options.task_uids) {
    std::fprintf(stderr, "agent: running as root: each task runs as uid %u + its tenant's id (--task-uid-range %s)\n",
                 options.task_uids->first, options.task_uids->ToString().c_str());
  } else {
    std::fprintf(stderr, "agent: not running as root: tasks run as this user (uid %d), not isolated\n",
                 static_cast<int>(::geteuid()));
  }
  Node node = report.node;
  std::unique_ptr<agent::MpsDaemons> mps =
      StartMps(&node, mps_control, options.task_root.empty() ? state_dir : options.task_root, &options);
  agent::Launcher launcher(options);
  PrintNotices(launcher);
  auto client = agent::MakeControlPlaneClient(server, token, 5 * kMicrosPerSecond);
  if (!client.ok()) {
    std::fprintf(stderr, "error: %s\n", client.status().message().c_str());  // a bad URL: retrying cannot help
    return 2;
  }
  agent::NodeAgent node_agent(node, client->get(), &launcher);
  std::unique_ptr<agent::UsageProbe> usage_probe = agent::MakeUsageProbe(report.source, nvml_library);
  node_agent.SetUsageProbe(usage_probe.get());        // measured use in every heartbeat (null: none)
  agent::ChangeWatcher watcher(client->get(), node);  // heartbeats at once on a change (docs/agent.md)
  std::signal(SIGINT, OnInterrupt);
  std::signal(SIGTERM, OnInterrupt);
  bool registered = false;
  std::string last_error;
  TimeMicros backoff = 0;
  while (!g_interrupted) {
    const bool registering = !registered;
    Status s = registered ? node_agent.Tick() : node_agent.Register();
    if (s.ok() && !registered) {
      registered = true;
      std::fprintf(stderr, "agent: node %s registered with %s (%zu device(s)%s)\n", report.node.name.c_str(),
                   server.c_str(), report.node.devices.size(), report.node.simulated ? ", SIMULATED" : "");
    }
    if (s.code() == StatusCode::kInvalidArgument && !registered) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());  // a bad URL: retrying cannot help
      return 2;
    }
    if (!s.ok()) {
      backoff = backoff == 0 ? kMicrosPerSecond : std::min<TimeMicros>(2 * backoff, 30 * kMicrosPerSecond);
      if (s.message() != last_error) {
        std::string hint;
        if (s.code() == StatusCode::kUnauthenticated) {
          hint = "; give a valid token (xpool tokens create --node " + report.node.name + ", or the admin token)";
        } else if (s.code() == StatusCode::kPermissionDenied) {
          hint = "; this token may not act for node " + report.node.name;
        }
        std::fprintf(stderr, "agent: %s%s (retrying with backoff up to 30 s; tasks keep running)\n",
                     s.message().c_str(), hint.c_str());
      }
    } else {
      if (!last_error.empty()) std::fprintf(stderr, "agent: connected again to %s\n", server.c_str());
      backoff = 0;
    }
    last_error = s.ok() ? "" : s.message();
    if (s.code() == StatusCode::kNotFound) registered = false;  // the server forgot the node: register again
    PrintNotices(launcher);
    for (const std::string& n : node_agent.TakeNotices()) std::fprintf(stderr, "agent: %s\n", n.c_str());
    if (s.ok()) {
      if (registering) continue;  // the first heartbeat at once
      const bool no_mps = std::none_of(node.devices.begin(), node.devices.end(),
                                       [](const Device& d) { return d.mode == DeviceMode::kMps; });
      if (mig_dynamic && !node_agent.wanted_mig_geometry().empty() &&
          TakeMigGeometry(node_agent.wanted_mig_geometry(), launcher, nvml_library, !stop_tasks && no_mps)) {
        StopMps(*mps);
        return kDiscoverAgain;
      }
      watcher.Seen(node_agent.generation());
      watcher.WaitForWork(node_agent, node_agent.interval_micros(), [] { return g_interrupted != 0; });
      continue;
    }
    const TimeMicros wait = backoff;
    // An unreachable server that comes back (the transport connects again) ends the backoff at once: a long
    // backoff would otherwise outlast the restarted server's node timeout and its jobs would be requeued.
    bool seen_down = false;
    for (TimeMicros waited = 0; waited < wait && !g_interrupted; waited += 50'000) {
      if (s.code() == StatusCode::kUnavailable) {
        const bool up = (*client)->Connected();
        if (up && seen_down) break;
        seen_down = seen_down || !up;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (stop_tasks) {
    std::fprintf(stderr, "agent: stopping; --stop-tasks: its tasks are stopped with it\n");
  } else {
    std::fprintf(stderr,
                 "agent: stopping; its tasks keep running under their shims (an agent started again on %s adopts "
                 "them; `xpool agent --stop-tasks --state-dir %s` stops them)\n",
                 state_dir.c_str(), state_dir.c_str());
  }
  StopMps(*mps);
  return 0;
}

// `xpool agent --stop-tasks` without --server: stops every task an agent left running on this state dir (a node
// drain), waits for their ends, and exits.
int StopLeftTasks(const std::string& state_dir, int64_t grace_s) {
  agent::LauncherOptions options;
  options.state_dir = state_dir;
  options.cgroup_root = "";  // only stops: no cgroup probing, no notice
  options.stop_tasks_on_exit = true;
  agent::Launcher launcher(options);
  int stopping = 0;
  for (const agent::AdoptedTask& t : launcher.Adopt()) {
    if (!t.status.running()) continue;
    if (Status s = launcher.Stop(t.status.task_id, grace_s * kMicrosPerSecond); !s.ok()) {
      std::fprintf(stderr, "error: %s: %s\n", t.status.task_id.c_str(), s.message().c_str());
      continue;
    }
    ++stopping;
  }
  for (const protocol::TaskStatus& t : launcher.List()) {
    auto st = launcher.WaitFor(t.task_id, (grace_s + 10) * kMicrosPerSecond);
    if (st.ok() && !t.running()) continue;  // ended before: not ours to say
    if (st.ok()) {
      std::fprintf(stderr, "task %s: %s\n", t.task_id.c_str(), std::string(protocol::TaskStateName(st->state)).c_str());
    }
  }
  std::fprintf(stderr, "agent: stopped %d task(s) in %s\n", stopping, state_dir.c_str());
  return 0;
}

}  // namespace

std::unique_ptr<agent::MpsDaemons> StartMps(Node* node, const std::string& control, const std::string& dir,
                                            agent::LauncherOptions* options) {
  agent::MpsOptions mps;
  mps.control_program = control;
  mps.dir = dir + "/mps";
  auto daemons = std::make_unique<agent::MpsDaemons>(mps);
  for (const std::string& line : daemons->Start(node)) std::fprintf(stderr, "agent: %s\n", line.c_str());
  options->mps_pipe_dirs = daemons->pipe_dirs();
  options->visible_names = agent::VisibleDeviceNames(*node);
  return daemons;
}

void StopMps(agent::MpsDaemons& daemons) {
  for (const std::string& line : daemons.Stop()) std::fprintf(stderr, "agent: %s\n", line.c_str());
}

int ApplyMigGeometryFlag(const std::string& text, const std::string& nvml_library) {
  auto geometry = agent::ParseMigGeometry(text);
  if (!geometry.ok()) {
    std::fprintf(stderr, "error: --mig-geometry: %s\n", geometry.status().message().c_str());
    return 2;
  }
  auto nvml = agent::NvmlMig::Open(nvml_library);
  Status s = nvml.ok() ? agent::ApplyMigGeometry(**nvml, *geometry) : nvml.status();
  if (!s.ok()) {
    std::fprintf(stderr, "error: --mig-geometry: %s\n", s.message().c_str());
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}

Status CheckMigDynamic(const Node& node) {
  auto label = node.labels.find(std::string(kMigDynamicLabel));
  if (label == node.labels.end() || label->second.empty()) {
    return FailedPreconditionError(
        "--mig-dynamic: no GPU is in MIG mode (turn it on with --mig-geometry, e.g. "
        "0=7g.80gb)");
  }
  return Status::Ok();
}

namespace {

// True when a geometry the server sent places every instance ("0=3g.40gb@0,1g.10gb@4"): it planned around the
// instances in use, which stay where they are.
bool PlacesEveryInstance(const std::string& geometry) {
  auto parsed = agent::ParseMigGeometry(geometry);
  if (!parsed.ok()) return false;
  for (const auto& [gpu, wanted] : *parsed) {
    for (const agent::MigWanted& w : wanted) {
      if (w.start < 0) return false;
    }
  }
  return true;
}

}  // namespace

bool TakeMigGeometry(const std::string& geometry, agent::Launcher& launcher, const std::string& nvml_library,
                     bool tasks_outlive_restart) {
  int running = 0;
  for (const protocol::TaskStatus& t : launcher.List()) running += t.running() ? 1 : 0;
  if (running > 0 && !(tasks_outlive_restart && PlacesEveryInstance(geometry))) return false;
  std::fprintf(stderr, "agent: the server asks for MIG geometry %s (%d task(s) keep running)\n", geometry.c_str(),
               running);
  if (ApplyMigGeometryFlag(geometry, nvml_library) != 0) {
    std::fprintf(stderr, "agent: MIG geometry %s not taken; registering the GPUs as they are\n", geometry.c_str());
  }
  return true;
}

void DeviceModeFlags::Add(FlagSet& flags) {
  flags.String("mps", &mps,
               "CUDA MPS mode for these devices: all (every NVIDIA device) or indexes like 0,2; an MPS control daemon "
               "runs per device (docs/agent.md, \"MPS mode\")");
  flags.String("mps-control", &mps_control, "the MPS control program: a path, or a name on PATH");
  flags.String("mig-geometry", &mig_geometry,
               "MIG instances to hold before discovery, e.g. 0=2x1g.10gb,3g.40gb;1=7g.80gb (0= for none): MIG mode "
               "on and the GPU repartitioned where it differs (through NVML; needs root; docs/mig.md)");
  flags.Bool("mig-dynamic", &mig_dynamic,
             "the server may make and destroy MIG instances on this machine's GPUs in MIG mode for the requests "
             "waiting, keeping those in use; the GPUs are offered by start slot (through NVML; needs root; "
             "docs/mig.md)");
}

int DeviceModeFlags::ApplyBeforeDiscovery(const std::string& nvml_library) const {
  return mig_geometry.empty() ? 0 : ApplyMigGeometryFlag(mig_geometry, nvml_library);
}

int DeviceModeFlags::ApplyToNode(Node* node) const {
  if (mig_dynamic && !mps.empty()) {
    std::fprintf(stderr, "error: --mps and --mig-dynamic do not go together (MPS devices are whole GPUs)\n");
    return 2;
  }
  Status s = mps.empty() ? Status::Ok() : agent::SetMpsMode(mps, node);
  if (s.ok() && mig_dynamic) s = CheckMigDynamic(*node);
  if (s.ok()) return 0;
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kFailedPrecondition ? 2 : 1;
}

void TaskIdentityFlags::Add(FlagSet& flags) {
  flags.String("task-uid-range", &uid_range,
               std::string("as root: run each task as uid (and gid) FIRST + its tenant's id, from FIRST-LAST "
                           "(default ") +
                   agent::kDefaultTaskUidRange + "; no account may use an id in it)");
  flags.String("task-root", &task_root,
               "where the tasks' own directories go (HOME, default workdir); as root others must be able to "
               "search every directory above it");
  flags.String("pass-env", &pass_env,
               "NAME,NAME...: variables of this process's environment tasks also get (beyond PATH, LANG, LC_*, TZ, "
               "TERM)");
}

Status TaskIdentityFlags::Apply(agent::LauncherOptions* options, const std::string& root_task_root) const {
  for (size_t start = 0; start < pass_env.size();) {
    size_t comma = pass_env.find(',', start);
    if (comma == std::string::npos) comma = pass_env.size();
    const std::string name = pass_env.substr(start, comma - start);
    if (name.empty() || name.find('=') != std::string::npos) {
      return InvalidArgumentError("--pass-env: \"" + name + "\" is not a variable name");
    }
    options->pass_env.push_back(name);
    start = comma + 1;
  }
  if (!task_root.empty()) options->task_root = task_root;
  if (::geteuid() != 0) {
    if (!uid_range.empty()) {
      return InvalidArgumentError("--task-uid-range needs the agent to run as root (tasks run as this user, uid " +
                                  std::to_string(::geteuid()) + ")");
    }
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(agent::UidRange range,
                   agent::ParseUidRange(uid_range.empty() ? agent::kDefaultTaskUidRange : uid_range));
  options->task_uids = range;
  if (task_root.empty() && !root_task_root.empty()) options->task_root = root_task_root;
  return agent::Launcher::CheckOptions(*options);
}

int RunAgent(const Args& args) {
  FlagSet flags("xpool agent",
                "The node agent: discovers this machine's accelerators and runs the tasks assigned to it.\n"
                "With --server it registers with the server (gRPC, docs/agent.md) and runs what it assigns; it also\n"
                "prints the devices (--print-devices) or runs one task locally (--run -- CMD ARGS...).");
  std::string simulate, node_file, nvml_library = "libnvidia-ml.so.1", name, devices_list;
  std::string discovery = "auto", vendor_tool;
  int64_t discovery_timeout = 10;
  std::string state_dir = "var/agent", workdir = ".", server, token, token_file, address;
  bool print_devices = false, run = false, stop_tasks = false;
  int64_t gpumem = 0, gpucores = 0, grace = 10;
  TaskIdentityFlags identity;
  flags.String("simulate", &simulate, "simulated devices, e.g. 4xA100-80GB or 2xA100-80GB,2xT4-16GB");
  flags.String("node-file", &node_file, "YAML file describing a simulated node (docs/agent.md)");
  flags.String("nvml-library", &nvml_library, "NVML library to dlopen");
  flags.String("discovery", &discovery,
               "where devices come from: auto (NVML, else the first vendor tool on PATH), nvml, simulated, or a "
               "vendor (ascend, cambricon, hygon, iluvatar, metax: runs npu-smi, cnmon, hy-smi, ixsmi, mx-smi)");
  flags.String("vendor-tool", &vendor_tool,
               "with --discovery VENDOR: the vendor tool's path (default: on PATH, else where the vendor installs it)");
  flags.Int("discovery-timeout", &discovery_timeout, "seconds a vendor tool may run before it is killed");
  DeviceModeFlags modes;
  modes.Add(flags);
  flags.String("name", &name, "node name (default: host name)");
  flags.Bool("print-devices", &print_devices, "print the discovered devices and exit");
  flags.String("server", &server,
               "serve this server's assignments: grpc://HOST:PORT (or HOST:PORT; the server's --agent-listen, "
               "default port 8471), or http://HOST:PORT (the API, HTTP fallback)");
  flags.String("address", &address,
               "the address other nodes reach this node's tasks at, registered with the node (a multi-replica "
               "job's MASTER_ADDR when its replica 0 runs here); default 127.0.0.1 when --server is on this "
               "machine, else the host name");
  flags.String("token", &token, "node (or admin) token; default $XPOOL_TOKEN");
  flags.String("token-file", &token_file, "read the token from this file");
  flags.Bool("run", &run, "run the command after -- as one task on this node, stream its log, exit with its code");
  flags.String("devices", &devices_list, "with --run: device indexes for the task, e.g. 0,1");
  flags.Int("gpumem", &gpumem, "with --run: memory limit per device in MiB (0 = none)");
  flags.Int("gpucores", &gpucores, "with --run: compute limit per device in percent (0 = none)");
  flags.String("state-dir", &state_dir, "where task logs and files go");
  flags.String("workdir", &workdir, "with --run: the task's working directory");
  flags.Int("grace", &grace, "with --run: seconds between SIGTERM and SIGKILL on Ctrl-C; with --stop-tasks: per task");
  flags.Bool("stop-tasks", &stop_tasks,
             "with --server: stop the tasks when the agent stops (by default they keep running and the next agent "
             "adopts them); alone: stop every task left running in --state-dir (a drain) and exit");
  identity.Add(flags);
  int code = 0;
  if (!ParseFlagsOrExit(flags, args, &code)) return code;
  if (gpumem < 0 || gpucores < 0 || gpucores > 100 || grace < 0 || discovery_timeout < 1) {
    std::fprintf(stderr, "error: --gpumem and --grace must be >= 0, --gpucores 0..100, --discovery-timeout >= 1\n");
    return 2;
  }
  if (stop_tasks && server.empty() && !run && !print_devices) return StopLeftTasks(state_dir, grace);
  if (!print_devices && !run && server.empty()) {
    std::fprintf(stderr, "error: give --server URL (serve), --print-devices or --run\n\n%s", flags.Usage().c_str());
    return 2;
  }
  if (!server.empty() && run) {
    std::fprintf(stderr, "error: --run and --server do not go together\n");
    return 2;
  }
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!(in >> token)) {
      std::fprintf(stderr, "error: cannot read a token from %s\n", token_file.c_str());
      return 2;
    }
  } else if (token.empty() && std::getenv("XPOOL_TOKEN")) {
    token = std::getenv("XPOOL_TOKEN");
  }
  if (run && flags.positional().empty()) {
    std::fprintf(stderr, "error: --run needs a command after --, e.g. --run -- python3 train.py\n");
    return 2;
  }
  if (modes.mig_dynamic && server.empty()) {
    std::fprintf(stderr, "error: --mig-dynamic goes with --server\n");
    return 2;
  }
  if (int failed = modes.ApplyBeforeDiscovery(nvml_library); failed != 0) return failed;
  agent::DiscoveryOptions options;
  options.simulate = simulate;
  options.node_file = node_file;
  options.nvml_library = nvml_library;
  options.source = discovery;
  options.vendor_tool = vendor_tool;
  options.tool_timeout_ms = discovery_timeout * 1000;
  options.node_name = name;
  options.mig_slots = modes.mig_dynamic;  // GPUs in MIG mode offered by start slot, the node labelled
  for (;;) {  // once, unless a new MIG geometry (--mig-dynamic) makes the node's devices change
    auto report = agent::DiscoverNode(options);
    if (!report.ok()) {
      std::fprintf(stderr, "error: %s\n", report.status().message().c_str());
      return report.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
    }
    if (int failed = modes.ApplyToNode(&report->node); failed != 0) return failed;
    if (print_devices) std::fputs(agent::FormatDeviceTable(*report).c_str(), stdout);
    if (server.empty()) {
      if (!run) return 0;
      auto devices = ParseDevices(devices_list, *report, gpumem, gpucores);
      if (!devices.ok()) {
        std::fprintf(stderr, "error: %s\n", devices.status().message().c_str());
        return 2;
      }
      return RunOneTask(*report, *devices, flags.positional(), state_dir, workdir, grace, modes.mps_control);
    }
    if (!print_devices && !report->note.empty()) std::fprintf(stderr, "agent: %s\n", report->note.c_str());
    report->node.labels[protocol::kNodeAddressLabel] = address.empty() ? agent::DefaultNodeAddress(server) : address;
    const int served = Serve(*report, server, token, state_dir, stop_tasks, identity, modes.mps_control, nvml_library,
                             modes.mig_dynamic);
    if (served != kDiscoverAgain) return served;
    print_devices = false;
  }
}

}  // namespace xpool::cli
