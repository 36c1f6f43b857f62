#pragma once
// The `xpool` subcommands. Each area implements its entry points in its own file under src/cli/ and adds one
// row to the table in main.cc. An entry point gets the arguments after the subcommand name and returns the
// process exit code (0 ok, 1 runtime error, 2 usage error); errors go to stderr.
#include <string>
#include <vector>

namespace xpool::cli {

using Args = std::vector<std::string>;

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const Args& args);
};

}  // namespace xpool::cli
