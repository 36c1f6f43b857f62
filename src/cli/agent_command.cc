// `xpool agent`: discovers this machine's devices and (later) serves the server's assignments.
//
//   xpool agent --print-devices                          NVML, or "no NVML found"
//   xpool agent --simulate 4xA100-80GB --print-devices   a simulated node
//   xpool agent --node-file node.yaml --print-devices
//   xpool agent --simulate 2xA100-80GB --run --devices 1 --gpumem 8192 --gpucores 50 -- python3 train.py
//       runs one task through the launcher as the agent would (env, process group, logs) and streams its log.
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "agent/discovery.h"
#include "agent/launcher.h"
#include "cli/agent_command.h"
#include "common/flags.h"
#include "common/units.h"

namespace xpool::cli {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }

Result<std::vector<agent::TaskDevice>> ParseDevices(const std::string& list, const agent::DiscoveryReport& report,
                                                    int64_t gpumem, int64_t gpucores) {
  std::vector<agent::TaskDevice> devices;
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

// Runs one task in the foreground, streaming its log; Ctrl-C stops it (SIGTERM, SIGKILL after the grace).
int RunOneTask(const agent::DiscoveryReport& report, const std::vector<agent::TaskDevice>& devices,
               const std::vector<std::string>& command, const std::string& state_dir, const std::string& workdir,
               int64_t grace_s) {
  agent::LauncherOptions options;
  options.state_dir = state_dir;
  agent::Launcher launcher(options);
  for (const std::string& notice : launcher.TakeNotices()) std::fprintf(stderr, "notice: %s\n", notice.c_str());
  agent::LaunchSpec spec;
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
  for (const std::string& notice : launcher.TakeNotices()) std::fprintf(stderr, "notice: %s\n", notice.c_str());
  std::signal(SIGINT, OnInterrupt);
  std::signal(SIGTERM, OnInterrupt);
  agent::LogFollower follower(launcher.LogPath(spec.task_id));
  bool following = follower.Open(true).ok();
  bool stopping = false;
  for (;;) {
    if (g_interrupted && !stopping) {
      stopping = true;
      std::fprintf(stderr, "stopping the task (SIGTERM, SIGKILL after %llds)\n", static_cast<long long>(grace_s));
      (void)launcher.Stop(spec.task_id, grace_s * kMicrosPerSecond);
    }
    auto ended = launcher.Poll();
    if (following) {
      auto text = follower.ReadNew();
      if (text.ok()) std::fwrite(text->data(), 1, text->size(), stdout);
      std::fflush(stdout);
    }
    if (!ended.empty()) {
      const agent::TaskStatus& st = ended[0];
      if (following) {
        auto text = follower.ReadNew();
        if (text.ok()) std::fwrite(text->data(), 1, text->size(), stdout);
      }
      std::fprintf(stderr, "task %s: %s", st.task_id.c_str(), std::string(agent::TaskStateName(st.state)).c_str());
      if (!st.error.empty()) std::fprintf(stderr, " — %s", st.error.c_str());
      if (!st.log_note.empty()) std::fprintf(stderr, " — %s", st.log_note.c_str());
      std::fprintf(stderr, "\nlog: %s\n", launcher.LogPath(spec.task_id).c_str());
      if (st.signal > 0) return 128 + st.signal;
      return st.exit_code;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

int RunAgent(const Args& args) {
  FlagSet flags("xpool agent",
                "The node agent: discovers this machine's accelerators and runs the tasks assigned to it.\n"
                "Until the agent protocol lands it prints the devices (--print-devices) or runs one task locally\n"
                "(--run -- CMD ARGS...).");
  std::string simulate, node_file, nvml_library = "libnvidia-ml.so.1", name, devices_list;
  std::string state_dir = "var/agent", workdir = ".";
  bool print_devices = false, run = false;
  int64_t gpumem = 0, gpucores = 0, grace = 10;
  flags.String("simulate", &simulate, "simulated devices, e.g. 4xA100-80GB or 2xA100-80GB,2xT4-16GB");
  flags.String("node-file", &node_file, "YAML file describing a simulated node (docs/agent.md)");
  flags.String("nvml-library", &nvml_library, "NVML library to dlopen");
  flags.String("name", &name, "node name (default: host name)");
  flags.Bool("print-devices", &print_devices, "print the discovered devices and exit");
  flags.Bool("run", &run, "run the command after -- as one task on this node, stream its log, exit with its code");
  flags.String("devices", &devices_list, "with --run: device indexes for the task, e.g. 0,1");
  flags.Int("gpumem", &gpumem, "with --run: memory limit per device in MiB (0 = none)");
  flags.Int("gpucores", &gpucores, "with --run: compute limit per device in percent (0 = none)");
  flags.String("state-dir", &state_dir, "with --run: where task logs and files go");
  flags.String("workdir", &workdir, "with --run: the task's working directory");
  flags.Int("grace", &grace, "with --run: seconds between SIGTERM and SIGKILL on Ctrl-C");
  int code = 0;
  if (!ParseFlagsOrExit(flags, args, &code)) return code;
  if (gpumem < 0 || gpucores < 0 || gpucores > 100 || grace < 0) {
    std::fprintf(stderr, "error: --gpumem and --grace must be >= 0, --gpucores 0..100\n");
    return 2;
  }
  if (!print_devices && !run) {
    std::fprintf(stderr,
                 "error: the agent's server connection is not implemented yet; use --print-devices or --run\n\n%s",
                 flags.Usage().c_str());
    return 2;
  }
  if (run && flags.positional().empty()) {
    std::fprintf(stderr, "error: --run needs a command after --, e.g. --run -- python3 train.py\n");
    return 2;
  }
  agent::DiscoveryOptions options;
  options.simulate = simulate;
  options.node_file = node_file;
  options.nvml_library = nvml_library;
  options.node_name = name;
  auto report = agent::DiscoverNode(options);
  if (!report.ok()) {
    std::fprintf(stderr, "error: %s\n", report.status().message().c_str());
    return report.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  if (print_devices) std::fputs(agent::FormatDeviceTable(*report).c_str(), stdout);
  if (!run) return 0;
  auto devices = ParseDevices(devices_list, *report, gpumem, gpucores);
  if (!devices.ok()) {
    std::fprintf(stderr, "error: %s\n", devices.status().message().c_str());
    return 2;
  }
  return RunOneTask(*report, *devices, flags.positional(), state_dir, workdir, grace);
}

}  // namespace xpool::cli
