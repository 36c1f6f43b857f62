#include "cli/roles.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace xpool::cli {

int RunInRoles(const char* role, const Args& args) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string roles = ec ? std::string("xpool-roles") : (self.parent_path() / "xpool-roles").string();
  std::vector<std::string> owned = {roles, role};
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(roles.c_str(), argv.data());
  std::fprintf(stderr, "error: cannot run %s for `xpool %s`: %s (it is installed beside xpool)\n", roles.c_str(), role,
               std::strerror(errno));
  return 1;
}

}  // namespace xpool::cli
