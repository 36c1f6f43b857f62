#pragma once
// `xpool agent`: the node agent (agent_command.cc). For now: device discovery (--print-devices) and
// a local one-task run through the launcher (--run -- CMD...); the loop with the server comes with
// the agent protocol.
#include <string>

#include "agent/launcher.h"
#include "cli/commands.h"
#include "common/flags.h"

namespace xpool::cli {

// The task-identity flags `xpool agent` and `xpool up` share (docs/agent.md, "Task identity").
struct TaskIdentityFlags {
  std::string uid_range;  // --task-uid-range; empty = the default when root
  std::string task_root;  // --task-root; empty = the command's default
  std::string pass_env;   // --pass-env NAME,NAME
  void Add(FlagSet& flags);
  // Sets the launcher's isolation from the flags: as root, tasks run as their tenant's uid (the range checked:
  // well-formed, no account in it, the task root reachable); otherwise as this user, and a --task-uid-range is an
  // error. `root_task_root` is the default task root as root ("" = the state dir). InvalidArgument /
  // FailedPrecondition with the reason for a start-up error.
  Status Apply(agent::LauncherOptions* options, const std::string& root_task_root) const;
};

int RunAgent(const Args& args);
// `xpool task-shim`: internal, the per-task supervisor the agent starts (task_shim_command.cc).
int RunTaskShimCommand(const Args& args);

}  // namespace xpool::cli
