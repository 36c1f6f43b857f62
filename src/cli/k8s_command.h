#pragma once
// `xpool k8s`: the Kubernetes components (scheduler extender, admission webhook), in k8s_command.cc.
#include "cli/commands.h"

namespace xpool::cli {

int RunK8s(const Args& args);

}  // namespace xpool::cli
