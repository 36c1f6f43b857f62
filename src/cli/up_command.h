#pragma once
// `xpool up`: the one-machine install — the control plane and an agent for this machine in one process.
#include "cli/commands.h"

namespace xpool::cli {

int RunUp(const Args& args);

}  // namespace xpool::cli
