// Runs the real `xpool agent` binary as a user would.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct CliRun {
  int code = -1;
  std::string output;  // stdout and stderr
};

CliRun Xpool(const std::string& args) {
  const char* bin = std::getenv("XPOOL_BINARY_DIR");
  const std::string cmd = std::string(bin ? bin : ".") + "/bin/xpool " + args + " 2>&1";
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(AgentCliTest, PrintsSimulatedDevices) {
  CliRun r = Xpool("agent --simulate 2xA100-80GB,1xT4-16GB --name box --print-devices");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("node box (SIMULATED): 3 device(s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("A100-80GB"), std::string::npos);
  EXPECT_NE(r.output.find("SIM-box-2"), std::string::npos);
}

TEST(AgentCliTest, BadSpecIsAUsageError) {
  CliRun r = Xpool("agent --simulate 4xA100 --print-devices");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("expected MODEL-MEMORY"), std::string::npos) << r.output;
}

TEST(AgentCliTest, MissingNvmlIsNotAnError) {
  CliRun r = Xpool("agent --nvml-library /nonexistent/libnvidia-ml.so.1 --print-devices");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("no NVML found"), std::string::npos) << r.output;
}

TEST(AgentCliTest, RunReportsExitCodeAndEnv) {
  const std::string state = testing::TempDir() + "xpool_agent_cli_state";
  CliRun r = Xpool("agent --simulate 2xA100-80GB --run --devices 1 --gpumem 8192 --state-dir " + state +
                " -- sh -c 'echo dev=$CUDA_VISIBLE_DEVICES mem=$XPOOL_DEVICE_MEMORY_LIMIT_0; exit 3'");
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("dev=1 mem=8192"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("failed"), std::string::npos) << r.output;
  CliRun missing = Xpool("agent --simulate 1xT4-16GB --run --state-dir " + state + " -- xpool-no-such-command");
  EXPECT_EQ(missing.code, 127) << missing.output;
  EXPECT_NE(missing.output.find("command not found"), std::string::npos) << missing.output;
}

TEST(AgentCliTest, UnreachableServerAndBadTokenAreClear) {
  // A bad token file is a usage error before any connection.
  CliRun r = Xpool("agent --simulate 1xT4-16GB --server http://127.0.0.1:1 --token-file /nonexistent/token");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot read a token"), std::string::npos) << r.output;
}

}  // namespace
