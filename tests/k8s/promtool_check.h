#pragma once
// PromtoolCheck: `promtool check metrics` (Debian's `prometheus` package, scripts/debian-packages.txt) on an
// exposition text, for the k8s end-to-end tests: the format and Prometheus' naming conventions. Header-only;
// stateless; each call runs promtool once on a temp file.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <optional>
#include <string>

namespace xpool::k8s::testing {

// std::nullopt when promtool is not installed; else "" when promtool accepts `text`, its report (or "exit N")
// otherwise.
inline std::optional<std::string> PromtoolCheck(const std::string& text) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) return std::nullopt;
  char path[] = "/tmp/xpool_promtool_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return "cannot create a temp file";
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  std::string report;
  if (written) {
    FILE* p = ::popen(("promtool check metrics < " + std::string(path) + " 2>&1").c_str(), "r");
    if (p != nullptr) {
      std::array<char, 4096> buf;
      size_t n = 0;
      while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) report.append(buf.data(), n);
      const int status = ::pclose(p);
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      if (code != 0 && report.empty()) report = "exit " + std::to_string(code);
    } else {
      report = "cannot run promtool";
    }
  } else {
    report = "cannot write a temp file";
  }
  ::unlink(path);
  return report;
}

}  // namespace xpool::k8s::testing
