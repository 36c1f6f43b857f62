#pragma once
// Helpers shared by the tests of processes and files (agent, protocol): a fresh directory per test, reading a file,
// waiting for a condition and telling whether a process still runs. Test-only (it includes gtest). Stateless;
// thread-safe as the filesystem and /proc are.
#include <gtest/gtest.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

namespace xpool {

// <TempDir>xpool_<name>_<pid>, emptied first (a crashed earlier run may have left it); the caller removes it.
inline std::string FreshDir(const std::string& name) {
  const std::string dir = std::filesystem::path(::testing::TempDir()).lexically_normal().string() + "xpool_" + name +
                          "_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The running test's name (TEST_F(Suite, Name) → "Name"), for a directory per test.
inline std::string CurrentTestName() { return ::testing::UnitTest::GetInstance()->current_test_info()->name(); }

// The whole file; "" when it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Polls `cond` every 5 ms for up to `ms`; its last value.
inline bool WaitUntil(const std::function<bool()>& cond, int ms = 10000) {
  for (int i = 0; i < ms / 5; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

// Alive and not a zombie.
inline bool IsRunning(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

}  // namespace xpool
