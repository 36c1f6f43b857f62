#include "agent/command.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>

#include "common/testing/test_util.h"

namespace xpool::agent {
namespace {

CommandSpec Shell(const std::string& script) {
  CommandSpec spec;
  spec.program = "/bin/sh";
  spec.args = {"-c", script};
  spec.timeout_ms = 5000;
  return spec;
}

TEST(RunCommandTest, CollectsOutputsExitCodeAndInput) {
  CommandSpec spec = Shell("cat; echo oops >&2; echo \"$XPOOL_CMD_TEST\"; exit 3");
  spec.input = "line one\nline two\n";
  spec.env["XPOOL_CMD_TEST"] = "from env";
  auto out = RunCommand(spec);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->exit_code, 3);
  EXPECT_EQ(out->out, "line one\nline two\nfrom env\n");
  EXPECT_EQ(out->err, "oops\n");
}

TEST(RunCommandTest, ProgramThatCannotRunIsNotFound) {
  CommandSpec spec;
  spec.program = "/nonexistent/tool";
  auto out = RunCommand(spec);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kNotFound);
  EXPECT_NE(out.status().message().find("cannot execute /nonexistent/tool"), std::string::npos)
      << out.status().message();
}

TEST(RunCommandTest, KillsTheProcessGroupAtTheDeadline) {
  const std::string dir = FreshDir("cmd_deadline");
  CommandSpec spec = Shell("echo $$ > " + dir + "/pid; exec sleep 30");
  spec.timeout_ms = 300;
  const auto start = std::chrono::steady_clock::now();
  auto out = RunCommand(spec);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(out.status().message().find("sh -c"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("did not finish within 300 ms (killed)"), std::string::npos);
  EXPECT_LT(took, std::chrono::seconds(5));
  const pid_t pid = std::stoi(ReadFile(dir + "/pid"));
  EXPECT_FALSE(IsRunning(pid));
  std::filesystem::remove_all(dir);
}

// A daemon's first process exits at once while its child keeps the output pipe open: the run ends with the first.
TEST(RunCommandTest, ReturnsWhenTheProgramExitsEvenIfADescendantHoldsItsPipes) {
  CommandSpec spec = Shell("sleep 20 & echo $!");
  const auto start = std::chrono::steady_clock::now();
  auto out = RunCommand(spec);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(out->exit_code, 0);
  const pid_t daemon = std::stoi(out->out);
  EXPECT_TRUE(IsRunning(daemon));
  ::kill(daemon, SIGKILL);
}

TEST(RunCommandTest, ChildThatIgnoresItsInputDoesNotKillTheCaller) {
  CommandSpec spec = Shell("exec 0<&-; sleep 0.2");
  spec.input = std::string(1 << 20, 'x');  // more than a pipe holds
  auto out = RunCommand(spec);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->exit_code, 0);
}

TEST(ResolveProgramTest, PathsAndNames) {
  const std::string dir = FreshDir("cmd_resolve");
  {
    std::ofstream(dir + "/tool") << "#!/bin/sh\n";
    std::ofstream(dir + "/plain") << "data\n";
  }
  ::chmod((dir + "/tool").c_str(), 0755);
  EXPECT_EQ(*ResolveProgram(dir + "/tool"), dir + "/tool");
  EXPECT_EQ(ResolveProgram(dir + "/plain").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(ResolveProgram(dir + "/missing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(SearchPath("tool", "/nonexistent:" + dir), dir + "/tool");
  EXPECT_EQ(SearchPath("plain", dir), "");
  auto sh = ResolveProgram("sh");
  ASSERT_TRUE(sh.ok()) << sh.status().ToString();
  auto missing = ResolveProgram("xpool-no-such-tool");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("xpool-no-such-tool not found (PATH="), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace xpool::agent
