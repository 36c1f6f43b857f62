// xpool: the user CLI, and the door to every role (server, agent, simulator, Kubernetes components). The client
// commands run here; a role runs in `xpool-roles` beside this binary (roles.h), so that a client command loads only
// the few libraries it uses.
#include <cstdio>
#include <cstring>
#include <span>
#include <string>

#include "cli/commands.h"
#include "cli/control_commands.h"
#include "cli/roles.h"

namespace xpool::cli {
namespace {

// `xpool <role> ...` is `xpool-roles <role> ...`.
template <const char* kRole>
int InRoles(const Args& args) {
  return RunInRoles(kRole, args);
}
constexpr char kServer[] = "server";
constexpr char kK8s[] = "k8s";
constexpr char kAgent[] = "agent";
constexpr char kTaskShim[] = "task-shim";
constexpr char kSim[] = "sim";
constexpr char kUp[] = "up";

int RunVersion(const Args&) {
  std::printf("xpool 0.1.0\n");
  return 0;
}

int RunHelp(const Args&);

// One row per subcommand. Areas add their rows here (declared in their own cli/*.h).
const Command kCommands[] = {
    {"version", "print the version", RunVersion},
    {"help", "list the subcommands", RunHelp},
    {"server", "run the control plane: REST API, scheduling loop, state", InRoles<kServer>},
    {"submit", "submit a job: xpool submit -f job.yaml", RunSubmit},
    {"get", "list jobs, nodes or tenants, or show one: xpool get job 21 [-o wide|json|yaml]", RunGet},
    {"describe", "show a job: state and why, placement, replicas' exits, spec, events: xpool describe 21", RunDescribe},
    {"cancel", "cancel a job", RunCancel},
    {"logs", "print a job's output: xpool logs JOB [--replica N] [-f]", RunLogs},
    {"suspend", "suspend a job", RunSuspend},
    {"resume", "resume a suspended job", RunResume},
    {"priority", "change a job's priority (admin): xpool priority JOB 0..100|low|normal|high", RunPriority},
    {"top", "devices: memory (GiB) and compute (%) allocated / capacity", RunTop},
    {"usage", "GPU-hours allocated and used per tenant and job: xpool usage --tenant T --since 7d [--by-job]",
     RunUsage},
    {"tenants", "create, update or list tenants (admin)", RunTenants},
    {"tokens", "create a token for a tenant or a node agent (admin)", RunTokens},
    {"nodes", "list nodes; register, cordon or uncordon them (admin)", RunNodes},
    {"k8s", "Kubernetes: scheduler extender, device plugin, admission webhook (docs/kubernetes.md)", InRoles<kK8s>},
    {"agent", "node agent: serve a server (--server URL --token-file F), --print-devices, --run", InRoles<kAgent>},
    {"task-shim", "internal: supervises one task for the agent (docs/agent.md)", InRoles<kTaskShim>},
    {"sim", "simulate scheduling on a trace: sim fill, sim replay, sim validate", InRoles<kSim>},
    {"up", "run xpool on this machine: server + agent (simulated 4xA100-80GB without NVML)", InRoles<kUp>},
};

int RunHelp(const Args&) {
  std::printf(
      "xpool — a shared pool of accelerators\n\nusage: xpool [--server URL] [--token TOKEN] <command> [flags]\n"
      "       xpool --version\n\ncommands:\n");
  for (const Command& c : kCommands) std::printf("  %-12s %s\n", c.name, c.summary);
  std::printf(
      "\n--server and --token before the command apply to it as if given after it (the client commands take\n"
      "them; see docs/api.md). `xpool <command> --help` describes a command's flags.\n");
  return 0;
}

// The flags that may come before the command: --server and --token (moved after the command name, where every
// client command reads them), --version and --help. Returns the index of the command in argv, or -1 after
// printing the error (exit code 2).
int TakeGlobalFlags(int argc, char** argv, Args* moved) {
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; ++i) {
    const std::string arg = argv[i];
    bool known = false;
    for (const char* name : {"--server", "--token"}) {
      const std::string n = name;
      if (arg == n) {
        if (i + 1 >= argc) {
          std::fprintf(stderr, "error: flag %s needs a value\n", name);
          return -1;
        }
        moved->push_back(arg);
        moved->push_back(argv[++i]);
        known = true;
      } else if (arg.rfind(n + "=", 0) == 0) {
        moved->push_back(arg);
        known = true;
      }
    }
    if (known) continue;
    if (arg == "--version" || arg == "--help" || arg == "-h") break;
    std::fprintf(stderr, "error: unknown flag %s before the command (try `xpool help`)\n", arg.c_str());
    return -1;
  }
  return i;
}

}  // namespace
}  // namespace xpool::cli

int main(int argc, char** argv) {
  using namespace xpool::cli;
  Args global;
  const int at = TakeGlobalFlags(argc, argv, &global);
  if (at < 0) return 2;
  if (at >= argc || std::strcmp(argv[at], "--help") == 0 || std::strcmp(argv[at], "-h") == 0) {
    if (at >= argc && !global.empty()) {
      std::fprintf(stderr, "error: a command must follow %s (try `xpool help`)\n", global[0].c_str());
      return 2;
    }
    return RunHelp({});
  }
  if (std::strcmp(argv[at], "--version") == 0) return RunVersion({});
  Args args = global;  // the global flags first: a "--" among the command's own arguments stays last
  args.insert(args.end(), argv + at + 1, argv + argc);
  for (const Command& c : kCommands) {
    if (std::strcmp(c.name, argv[at]) == 0) return c.run(args);
  }
  std::fprintf(stderr, "error: unknown command \"%s\" (try `xpool help`)\n", argv[at]);
  return 2;
}
