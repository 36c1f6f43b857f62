#pragma once
// FlagSet: the one command-line flag parser for every `xpool` subcommand.
//
//   FlagSet flags("xpool sim fill", "Runs the FGD fill experiment.");
//   std::string cluster; int64_t jobs = 1; bool verbose = false;
//   flags.String("cluster", &cluster, "node list CSV");
//   flags.Int("jobs", &jobs, "parallel runs");
//   flags.Bool("verbose", &verbose, "more output");
//   Status s = flags.Parse(args);   // --name value, --name=value, --bool / --bool=false; "--" ends flags
// A one-letter flag is written with one dash as well: -o wide, -owide, -o=wide, -f (and shown so in the usage).
//   flags.positional();             // what was not a flag
// Unknown flags, missing values and bad integers are InvalidArgument naming the flag. `--help` yields a
// FailedPrecondition whose message is the usage text. Owned by one command; not thread-safe.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace xpool {

class FlagSet {
 public:
  FlagSet(std::string command, std::string summary);

  void String(std::string name, std::string* target, std::string help);
  void Int(std::string name, int64_t* target, std::string help);
  void Bool(std::string name, bool* target, std::string help);
  // A flag that may be given many times (--env A=1 --env B=2).
  void Repeated(std::string name, std::vector<std::string>* target, std::string help);

  Status Parse(const std::vector<std::string>& args);
  const std::vector<std::string>& positional() const { return positional_; }
  // True when the flag appeared on the command line.
  bool WasSet(std::string_view name) const;
  std::string Usage() const;

 private:
  enum class Kind { kString, kInt, kBool, kRepeated };
  struct Flag {
    std::string name;
    Kind kind;
    void* target;
    std::string help;
    bool set = false;
  };
  Flag* Find(std::string_view name);
  Status Assign(Flag& flag, std::string_view value);

  std::string command_;
  std::string summary_;
  std::vector<Flag> flags_;
  std::vector<std::string> positional_;
};

// Runs `flags.Parse(args)` and handles the common outcomes for a CLI entry point: prints usage on --help
// (returns 0 through *exit_code), prints the error and usage to stderr on a bad flag (exit code 2).
// Returns true when the command should go on.
bool ParseFlagsOrExit(FlagSet& flags, const std::vector<std::string>& args, int* exit_code);

}  // namespace xpool
