#pragma once
// `xpool agent`: the node agent (agent_command.cc). For now: device discovery (--print-devices) and
// a local one-task run through the launcher (--run -- CMD...); the loop with the server comes with
// the agent protocol.
#include "cli/commands.h"

namespace xpool::cli {

int RunAgent(const Args& args);
// `xpool task-shim`: internal, the per-task supervisor the agent starts (task_shim_command.cc).
int RunTaskShimCommand(const Args& args);

}  // namespace xpool::cli
