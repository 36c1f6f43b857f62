#pragma once
// Running a helper program to its end: a vendor's management tool for discovery (`npu-smi info`), the MPS control
// program (`nvidia-cuda-mps-control -d`). Not for tasks: those run under their task shim (agent/launcher.h).
//
// RunCommand forks the program into a session of its own, writes `input` to its stdin, collects stdout and stderr
// (each capped), and waits for it with a deadline; past the deadline the program's whole process group is killed.
// It returns when the program has exited, without waiting for descendants that keep its pipes open (a daemon's
// first process exits at once). Stateless functions; thread-safe (the child is set up with async-signal-safe calls
// only).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace xpool::agent {

struct CommandSpec {
  std::string program;                     // a path; RunCommand does not search PATH (SearchPath does)
  std::vector<std::string> args;           // after the program's name
  std::map<std::string, std::string> env;  // set or replaced on top of the agent's environment
  std::string input;                       // written to stdin, which is then closed
  int64_t timeout_ms = 10000;
};

struct CommandOutput {
  int exit_code = 0;  // 128 + signal when the program was killed by a signal
  std::string out;    // stdout, at most kMaxCommandOutputBytes
  std::string err;    // stderr, at most kMaxCommandOutputBytes
};

inline constexpr size_t kMaxCommandOutputBytes = 1 << 20;

// The program's exit, whatever its code (a nonzero exit is the caller's to judge). Errors: a program that cannot
// be executed (NotFound / PermissionDenied, with the exec error) and one still running at the deadline
// (Unavailable: "... did not finish within N ms (killed)").
Result<CommandOutput> RunCommand(const CommandSpec& spec);

// Finds `name` (no slash) in `path_list` (colon-separated, an empty entry is ".") the way execvp would: the first
// regular file there that is executable. With `by_others` only a file others may execute counts. Empty when none.
std::string SearchPath(const std::string& name, const std::string& path_list, bool by_others = false);

// `program` as a path to run: one with a slash must be an executable file; a bare name is searched in this
// process's PATH (/usr/local/bin:/usr/bin:/bin when unset). NotFound names the program and where it looked.
Result<std::string> ResolveProgram(const std::string& program);

// What a program said about its failure, for a message: the first line of its stderr (of its stdout when stderr is
// empty), at most 200 characters.
std::string Complaint(const CommandOutput& output);

// "npu-smi info": the program's base name and its arguments, for messages.
std::string CommandLine(const CommandSpec& spec);

}  // namespace xpool::agent
