// xpool-roles: the long-running roles of xpool (server, agent, up, k8s, sim, task-shim). `xpool <role> ...` runs
// this binary beside itself with the same arguments, so that `xpool`'s client commands load only what they use
// (docs/ARCHITECTURE.md, "Binaries"). It may also be run directly: `xpool-roles <role> [flags]`.
#include <cstdio>
#include <cstring>

#include "cli/agent_command.h"
#include "cli/commands.h"
#include "cli/control_commands.h"
#include "cli/k8s_command.h"
#include "cli/roles.h"
#include "cli/sim_command.h"
#include "cli/up_command.h"

namespace xpool::cli {
namespace {

// One row per role; their summaries are `xpool help`'s (roles.h).
struct Role {
  const char* name;
  int (*run)(const Args& args);
};
const Role kRoles[] = {
    {"server", RunServer}, {"agent", RunAgent}, {"task-shim", RunTaskShimCommand},
    {"sim", RunSim},       {"up", RunUp},       {"k8s", RunK8s},
};

}  // namespace
}  // namespace xpool::cli

int main(int argc, char** argv) {
  using namespace xpool::cli;
  if (argc >= 2) {
    for (const Role& r : kRoles) {
      if (std::strcmp(r.name, argv[1]) == 0) return r.run(Args(argv + 2, argv + argc));
    }
  }
  std::fprintf(stderr, "usage: xpool-roles <role> [flags], a role being one of:");
  for (const Role& r : kRoles) std::fprintf(stderr, " %s", r.name);
  std::fprintf(stderr, "\n(`xpool <role>` runs it; `xpool help` describes them)\n");
  return 2;
}
