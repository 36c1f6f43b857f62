#pragma once
// The roles `xpool` hands to `xpool-roles` (roles_main.cc), the binary beside it that links the server, agent,
// simulator and Kubernetes code: RunInRoles replaces this process with `xpool-roles <role> <args>` (exec), so the
// role runs with this process's pid, signals and standard streams, and exits with its own code.
#include "cli/commands.h"

namespace xpool::cli {

// Execs xpool-roles; returns (1, after printing why) only when it cannot be run.
int RunInRoles(const char* role, const Args& args);

}  // namespace xpool::cli
