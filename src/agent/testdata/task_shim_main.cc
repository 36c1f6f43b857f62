// The task shim as its own small executable, for the agent tests: `xpool_test_task_shim --ready-fd N DIR` does
// what `xpool task-shim --ready-fd N DIR` does (agent/task_shim.h).
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
