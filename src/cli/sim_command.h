#pragma once
// `xpool sim`: the simulator's subcommands (fill, validate, replay), in sim_command.cc.
#include "cli/commands.h"

namespace xpool::cli {

int RunSim(const Args& args);

}  // namespace xpool::cli
