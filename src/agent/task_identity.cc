#include "agent/task_identity.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace xpool::agent {
namespace {

constexpr uint32_t kMaxId = 0x7FFFFFFE;  // below (uid_t)-1 and the overflow ids; fits a signed 32-bit id

Result<uint32_t> ParseId(const std::string& text, const std::string& whole) {
  if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgumentError("--task-uid-range \"" + whole + "\": \"" + text + "\" is not a number");
  }
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (v < 1 || v > kMaxId) {
    return InvalidArgumentError("--task-uid-range \"" + whole + "\": " + text + " is not in 1.." +
                                std::to_string(kMaxId));
  }
  return static_cast<uint32_t>(v);
}

}  // namespace

Result<UidRange> ParseUidRange(const std::string& text) {
  const size_t dash = text.find('-');
  if (dash == std::string::npos) {
    return InvalidArgumentError("--task-uid-range \"" + text + "\" must be FIRST-LAST, e.g. " + kDefaultTaskUidRange);
  }
  UidRange r;
  ASSIGN_OR_RETURN(r.first, ParseId(text.substr(0, dash), text));
  ASSIGN_OR_RETURN(r.last, ParseId(text.substr(dash + 1), text));
  if (r.first > r.last) {
    return InvalidArgumentError("--task-uid-range \"" + text + "\": FIRST must not be above LAST");
  }
  return r;
}

Status CheckUidRangeFree(const UidRange& range) {
  // getpwent/getgrent walk the whole databases (files, or whatever NSS serves): a range that holds a real account
  // is refused, whoever owns it.
  std::string clash;
  ::setpwent();
  while (const passwd* pw = ::getpwent()) {
    if (pw->pw_uid >= range.first && pw->pw_uid <= range.last) {
      clash = "user " + std::string(pw->pw_name) + " (uid " + std::to_string(pw->pw_uid) + ")";
      break;
    }
  }
  ::endpwent();
  if (clash.empty()) {
    ::setgrent();
    while (const group* gr = ::getgrent()) {
      if (gr->gr_gid >= range.first && gr->gr_gid <= range.last) {
        clash = "group " + std::string(gr->gr_name) + " (gid " + std::to_string(gr->gr_gid) + ")";
        break;
      }
    }
    ::endgrent();
  }
  if (!clash.empty()) {
    return FailedPreconditionError("--task-uid-range " + range.ToString() + " holds the " + clash +
                                   ": tasks would own its files; choose a range no account uses");
  }
  return Status::Ok();
}

Result<TaskIdentity> IdentityForTenant(const UidRange& range, int64_t tenant_id) {
  if (tenant_id <= 0) {
    return InvalidArgumentError(
        "the assignment names no tenant (tenant_id), so its uid is unknown; an agent running as root runs tasks "
        "only as their tenant's uid (is the server older than this agent?)");
  }
  if (static_cast<uint64_t>(tenant_id) >= range.size()) {
    return InvalidArgumentError("tenant " + std::to_string(tenant_id) + " has no uid in --task-uid-range " +
                                range.ToString() + " (it holds tenant ids 1.." + std::to_string(range.size() - 1) +
                                "); give the agent a larger range");
  }
  TaskIdentity id;
  id.isolated = true;
  id.uid = static_cast<uid_t>(range.first + static_cast<uint32_t>(tenant_id));
  id.gid = static_cast<gid_t>(id.uid);
  id.user = "xpool-" + std::to_string(tenant_id);
  return id;
}

bool AllowedTaskEnvName(const std::string& name) {
  static const char* const kNames[] = {"PATH", "LANG", "LANGUAGE", "TZ", "TERM"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return name.rfind("LC_", 0) == 0;
}

std::map<std::string, std::string> BaseTaskEnv(char** agent_env, const std::vector<std::string>& pass_env,
                                               const std::string& home, const TaskIdentity& identity) {
  std::map<std::string, std::string> env;
  for (char** e = agent_env; e && *e; ++e) {
    const std::string kv(*e);
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string name = kv.substr(0, eq);
    bool passed = AllowedTaskEnvName(name);
    for (const std::string& p : pass_env) passed = passed || p == name;
    if (passed) env[name] = kv.substr(eq + 1);
  }
  if (!env.count("PATH")) env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  if (identity.isolated) env["PATH"] = PathReachableByTasks(env["PATH"]);
  env["HOME"] = home;
  env["SHELL"] = "/bin/sh";
  if (identity.isolated) {
    env["USER"] = identity.user;
    env["LOGNAME"] = identity.user;
  } else if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr) {
    env["USER"] = pw->pw_name;
    env["LOGNAME"] = pw->pw_name;
  }
  return env;
}

std::string PathReachableByTasks(const std::string& path_list) {
  std::string out;
  size_t start = 0;
  while (start <= path_list.size()) {
    size_t colon = path_list.find(':', start);
    if (colon == std::string::npos) colon = path_list.size();
    const std::string dir = path_list.substr(start, colon - start);
    struct stat st {};
    if (!dir.empty() && dir[0] == '/' && ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
        (st.st_mode & S_IXOTH) != 0 && CheckReachableByTasks(dir).ok()) {
      out += (out.empty() ? "" : ":") + dir;
    }
    start = colon + 1;
  }
  return out;
}

Status CheckReachableByTasks(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(dir, ec);
  if (ec) return FailedPreconditionError("cannot resolve " + dir + ": " + ec.message());
  std::filesystem::path walked;
  for (const auto& part : p.lexically_normal()) {
    walked /= part;
    struct stat st {};
    if (::stat(walked.c_str(), &st) != 0) {
      if (errno == ENOENT) return Status::Ok();  // created below with the right modes
      return FailedPreconditionError("cannot stat " + walked.string() + ": " + std::strerror(errno));
    }
    if (S_ISDIR(st.st_mode) && (st.st_mode & S_IXOTH) == 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      return FailedPreconditionError("tasks run as their tenant's uid cannot reach " + p.string() + ": " +
                                     walked.string() + " is mode " + mode +
                                     " (others may not search it); choose a --task-root under directories others "
                                     "may search, e.g. /var/lib/xpool/tasks");
    }
  }
  return Status::Ok();
}

}  // namespace xpool::agent
