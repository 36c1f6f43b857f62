// xpool: one binary for every role (server, agent, simulator, Kubernetes components) and the user CLI.
#include <cstdio>
#include <cstring>
#include <span>
#include <string>

#include "cli/agent_command.h"
#include "cli/commands.h"
#include "cli/control_commands.h"
#include "cli/k8s_command.h"
#include "cli/sim_command.h"
#include "cli/up_command.h"

namespace xpool::cli {
namespace {

int RunVersion(const Args&) {
  std::printf("xpool 0.1.0\n");
  return 0;
}

int RunHelp(const Args&);

// One row per subcommand. Areas add their rows here (declared in their own cli/*.h).
const Command kCommands[] = {
    {"version", "print the version", RunVersion},
    {"help", "list the subcommands", RunHelp},
    {"server", "run the control plane: REST API, scheduling loop, state", RunServer},
    {"submit", "submit a job: xpool submit -f job.yaml", RunSubmit},
    {"get", "list jobs, nodes or tenants [-o wide|json]", RunGet},
    {"describe", "show a job: spec, state, placement, events", RunDescribe},
    {"cancel", "cancel a job", RunCancel},
    {"logs", "print a job's output: xpool logs JOB [--replica N] [-f]", RunLogs},
    {"suspend", "suspend a job", RunSuspend},
    {"resume", "resume a suspended job", RunResume},
    {"priority", "change a job's priority (admin): xpool priority JOB 0..100|low|normal|high", RunPriority},
    {"top", "devices: memory and cores allocated / capacity", RunTop},
    {"tenants", "create, update or list tenants (admin)", RunTenants},
    {"tokens", "create a token for a tenant or a node agent (admin)", RunTokens},
    {"nodes", "register, cordon or uncordon nodes (admin)", RunNodes},
    {"k8s", "Kubernetes: scheduler extender, device plugin, admission webhook (docs/kubernetes.md)", RunK8s},
    {"agent", "node agent: serve a server (--server URL --token-file F), --print-devices, --run", RunAgent},
    {"task-shim", "internal: supervises one task for the agent (docs/agent.md)", RunTaskShimCommand},
    {"sim", "simulate scheduling on a trace (fill, validate)", RunSim},
    {"up", "run xpool on this machine: server + agent (simulated 4xA100-80GB without NVML)", RunUp},
};

int RunHelp(const Args&) {
  std::printf("xpool — a shared pool of accelerators\n\nusage: xpool <command> [flags]\n\ncommands:\n");
  for (const Command& c : kCommands) std::printf("  %-12s %s\n", c.name, c.summary);
  std::printf("\n`xpool <command> --help` describes a command's flags.\n");
  return 0;
}

}  // namespace
}  // namespace xpool::cli

int main(int argc, char** argv) {
  using namespace xpool::cli;
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    return RunHelp({});
  }
  Args args(argv + 2, argv + argc);
  for (const Command& c : kCommands) {
    if (std::strcmp(c.name, argv[1]) == 0) return c.run(args);
  }
  std::fprintf(stderr, "xpool: unknown command \"%s\" (try `xpool help`)\n", argv[1]);
  return 2;
}
