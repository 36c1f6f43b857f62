#pragma once
// `xpool sim replay`, in sim_replay_command.cc; dispatched from `xpool sim` (sim_command.cc).
#include "cli/commands.h"

namespace xpool::cli {

int RunReplayCommand(const Args& args);

}  // namespace xpool::cli
