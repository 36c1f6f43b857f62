#pragma once
// FreshDir: an empty directory of one test's own under gtest's TempDir, for the agent tests that write files
// (logs, state dirs, task shims). Test-only (it includes gtest). Stateless; thread-safe as the filesystem is.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace xpool::agent {

// <TempDir>xpool_<name>_<pid>, emptied first (a crashed earlier run may have left it); the caller removes it.
inline std::string FreshDir(const std::string& name) {
  const std::string dir = std::filesystem::path(::testing::TempDir()).lexically_normal().string() + "xpool_" +
                          name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The running test's name (TEST_F(Suite, Name) → "Name"), for a directory per test.
inline std::string CurrentTestName() { return ::testing::UnitTest::GetInstance()->current_test_info()->name(); }

}  // namespace xpool::agent
