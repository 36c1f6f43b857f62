#pragma once
// Who a task runs as, and what it starts from: the tenant → uid mapping of an agent that runs as root, the
// checks of that mapping's range, and the allow-listed base environment every task starts from.
//
// Mapping: an agent that runs as root runs each task as uid = gid = first + tenant id of its --task-uid-range (the
// tenant id is the server's, stable for the tenant's life): the same uid on every node and after every restart,
// with no state to keep or lose. No account is created: the uid needs no /etc/passwd entry (USER and LOGNAME are
// set to "xpool-<tenant>"). The range must hold no existing user or group, so a task never gets a real account's
// files; a tenant id past the end of the range is an error for that task, never a fallback.
//
// Base environment: tasks never inherit the agent's (or the server's) environment. They start from an allow-list
// (PATH, LANG, LANGUAGE, LC_*, TZ, TERM, plus names the operator passes with --pass-env), then HOME (the task's
// own directory), USER/LOGNAME and SHELL are set; the job's env and xpool's variables come on top (launcher.cc).
//
// Value types and pure functions (CheckUidRangeFree reads the user and group databases); thread-compatible.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace xpool::agent {

// A closed range of uids (and the gids of the same numbers) for tasks.
struct UidRange {
  uint32_t first = 0;
  uint32_t last = 0;
  uint32_t size() const { return last - first + 1; }
  std::string ToString() const { return std::to_string(first) + "-" + std::to_string(last); }
};

// The default range of an agent that runs as root.
inline constexpr const char* kDefaultTaskUidRange = "200000-299999";

// "FIRST-LAST": both in 1..2^31-2, FIRST <= LAST. InvalidArgument naming the flag (--task-uid-range) otherwise.
Result<UidRange> ParseUidRange(const std::string& text);
// FailedPrecondition when a user or group of the system (getpwent/getgrent) has an id in the range: a task would
// own that account's files.
Status CheckUidRangeFree(const UidRange& range);

// What a task runs as. `isolated` = false: as the agent's own user (uid/gid unchanged).
struct TaskIdentity {
  bool isolated = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string user;  // USER / LOGNAME; empty = the agent's
};

// The identity of tenant `tenant_id`'s tasks under `range`. InvalidArgument when the assignment names no tenant
// (0: a server that does not send one) or the tenant's uid would fall outside the range.
Result<TaskIdentity> IdentityForTenant(const UidRange& range, int64_t tenant_id);

// The names always taken from the agent's environment (others only through `pass_env`).
bool AllowedTaskEnvName(const std::string& name);

// The base environment of a task: the allow-listed variables of `agent_env` (KEY=VALUE strings, as `environ`) and
// those named in `pass_env`, then HOME=`home`, USER/LOGNAME (the identity's, or the agent's when not isolated) and
// SHELL=/bin/sh; PATH defaults to the standard system path when the agent has none, and holds only the directories
// an isolated task can search (PathReachableByTasks).
std::map<std::string, std::string> BaseTaskEnv(char** agent_env, const std::vector<std::string>& pass_env,
                                               const std::string& home, const TaskIdentity& identity);

// The entries of a PATH list a task running as another user can search (absolute, reachable, o+x), in order: the
// PATH of an isolated task (root's PATH may name /root/... directories it cannot enter).
std::string PathReachableByTasks(const std::string& path_list);

// Checks that a task running as another user can reach `dir` by its path: every existing directory from / down to
// it must be searchable by others (mode o+x). FailedPrecondition naming the first one that is not.
Status CheckReachableByTasks(const std::string& dir);

}  // namespace xpool::agent
