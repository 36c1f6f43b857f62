// `xpool task-shim --ready-fd N TASK_DIR`: internal. The agent's launcher starts one per task; it runs the task
// described by TASK_DIR/task.json to its end, detached from the agent (agent/task_shim.h, docs/agent.md).
#include <cstdio>

#include "agent/task_shim.h"
#include "cli/agent_command.h"
#include "common/flags.h"

namespace xpool::cli {

int RunTaskShimCommand(const Args& args) {
  FlagSet flags("xpool task-shim",
                "Internal: supervises one task for the node agent (started by the agent, not by people).");
  int64_t ready_fd = -1;
  flags.Int("ready-fd", &ready_fd, "fd to close once the task runs (or could not start)");
  int code = 0;
  if (!ParseFlagsOrExit(flags, args, &code)) return code;
  if (flags.positional().size() != 1) {
    std::fprintf(stderr, "error: give the task's directory\n\n%s", flags.Usage().c_str());
    return 2;
  }
  return agent::RunTaskShim(flags.positional()[0], static_cast<int>(ready_fd));
}

}  // namespace xpool::cli
