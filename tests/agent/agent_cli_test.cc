// Runs the real `xpool agent` binary as a user would.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

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

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A task an agent left running under `xpool task-shim` (here: a shim started by hand on a task.json) is stopped by
// the drain `xpool agent --stop-tasks --state-dir DIR`.
TEST(AgentCliTest, StopTasksDrainsTasksLeftRunning) {
  const std::string state = testing::TempDir() + "xpool_agent_cli_drain";
  const std::string task = state + "/job5-r0";
  std::filesystem::remove_all(state);
  std::filesystem::create_directories(task);
  std::ofstream(task + "/task.json")
      << R"({"task_id": "job5-r0", "job_id": 5, "replica": 0, "restart_count": 0, "program": "/bin/sh",
             "argv": ["sh", "-c", "echo started; exec sleep 30"], "env": ["PATH=/usr/bin:/bin"], "workdir": "/",
             "log_max_bytes": 1048576, "log_keep": 1, "cgroup_dir": "", "suspend_signal": 10, "started_at": 0})";
  CliRun shim = Xpool("task-shim " + task + " > /dev/null 2>&1 &");
  ASSERT_EQ(shim.code, 0) << shim.output;
  bool running = false;
  for (int i = 0; i < 200 && !running; ++i) {
    running = Slurp(task + "/status.json").find("\"running\"") != std::string::npos &&
              Slurp(task + "/output.log").find("started") != std::string::npos;
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(running) << Slurp(task + "/shim.log");
  CliRun drain = Xpool("agent --stop-tasks --grace 1 --state-dir " + state);
  EXPECT_EQ(drain.code, 0) << drain.output;
  EXPECT_NE(drain.output.find("stopped 1 task(s)"), std::string::npos) << drain.output;
  EXPECT_NE(Slurp(task + "/status.json").find("\"stopped\""), std::string::npos) << Slurp(task + "/status.json");
  EXPECT_NE(Slurp(task + "/output.log").find("killed by signal 15 (Terminated) (stopped)"), std::string::npos)
      << Slurp(task + "/output.log");
  CliRun usage = Xpool("task-shim");
  EXPECT_EQ(usage.code, 2) << usage.output;
  std::filesystem::remove_all(state);
}

TEST(AgentCliTest, UnreachableServerAndBadTokenAreClear) {
  // A bad token file is a usage error before any connection.
  CliRun r = Xpool("agent --simulate 1xT4-16GB --server http://127.0.0.1:1 --token-file /nonexistent/token");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot read a token"), std::string::npos) << r.output;
}

}  // namespace
