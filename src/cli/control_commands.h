#pragma once
// Entry points of the control-plane subcommands: `xpool server` (server_command.cc) and the user CLI that talks
// to it over the REST API (client_command.cc). Each returns the process exit code; errors go to stderr.
#include "cli/commands.h"

namespace xpool::cli {

int RunServer(const Args& args);
int RunSubmit(const Args& args);
int RunGet(const Args& args);
int RunDescribe(const Args& args);
int RunCancel(const Args& args);
int RunSuspend(const Args& args);
int RunResume(const Args& args);
int RunPriority(const Args& args);
int RunTop(const Args& args);
int RunUsage(const Args& args);
int RunTenants(const Args& args);
int RunTokens(const Args& args);
int RunNodes(const Args& args);
int RunLogs(const Args& args);

}  // namespace xpool::cli
