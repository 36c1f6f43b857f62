// `xpool-task-shim --ready-fd N TASK_DIR`: the task shim as a small executable of its own (agent/task_shim.h), next
// to `xpool` in bin/. The launcher starts one per task and prefers it to `xpool task-shim` (the same RunTaskShim):
// it loads a fraction of the `xpool` binary's libraries, so a task starts sooner (docs/PERFORMANCE.md,
// "End-to-end latency"). The agent tests run their tasks under it too.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "agent/task_shim.h"

int main(int argc, char** argv) {
  if (argc != 4 || std::strcmp(argv[1], "--ready-fd") != 0) {
    std::fprintf(stderr, "usage: %s --ready-fd N TASK_DIR\n", argv[0]);
    return 2;
  }
  return xpool::agent::RunTaskShim(argv[3], std::atoi(argv[2]));
}
