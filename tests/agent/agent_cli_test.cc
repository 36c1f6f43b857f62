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

// Writes an executable script (mode 0755) at `path`.
void Script(const std::string& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body;
  std::filesystem::permissions(path, std::filesystem::perms(0755));
}

// --discovery VENDOR runs the vendor's tool (here a stand-in printing npu-smi's table) and lists its devices; a
// missing tool and an unknown source are clear errors.
TEST(AgentCliTest, DiscoversAVendorThroughItsTool) {
  const std::string dir = testing::TempDir() + "xpool_agent_cli_vendor";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Script(dir + "/npu-smi", R"([ "$1" = info ] || exit 2
cat <<'OUT'
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 93.6        40                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3161 / 65536         |
+===========================+===============+====================================================+
OUT
)");
  CliRun r = Xpool("agent --discovery ascend --vendor-tool " + dir + "/npu-smi --name npu-node --print-devices");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("node npu-node: 1 device(s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("source ascend"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("910B3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ASCEND-0000:C1:00.0"), std::string::npos) << r.output;

  CliRun missing = Xpool("agent --discovery ascend --vendor-tool " + dir + "/none --print-devices");
  EXPECT_EQ(missing.code, 1) << missing.output;
  EXPECT_NE(missing.output.find("discovery ascend: its tool " + dir + "/none"), std::string::npos) << missing.output;
  CliRun unknown = Xpool("agent --discovery tpu --print-devices");
  EXPECT_EQ(unknown.code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("unknown discovery source \"tpu\""), std::string::npos) << unknown.output;
  std::filesystem::remove_all(dir);
}

// --mps: the agent starts the MPS control daemon (a stand-in here) for the device, the task gets the MPS client
// variables, the daemon is told to quit at the end; without the control program MPS is refused with the reason.
TEST(AgentCliTest, MpsRunGivesTheTaskItsDaemon) {
  const std::string dir = testing::TempDir() + "xpool_agent_cli_mps";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Script(dir + "/mps-control", R"(p="$CUDA_MPS_PIPE_DIRECTORY"
if [ "$1" = "-d" ]; then echo "-d $CUDA_VISIBLE_DEVICES" >> "$CUDA_MPS_LOG_DIRECTORY/calls"; : > "$p/control"; exit 0; fi
[ -e "$p/control" ] || exit 1
while read -r cmd; do echo "$cmd" >> "$CUDA_MPS_LOG_DIRECTORY/calls"; done
)");
  const std::string task =
      " -- sh -c 'echo pipe=$CUDA_MPS_PIPE_DIRECTORY threads=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE "
      "mem=$CUDA_MPS_PINNED_DEVICE_MEM_LIMIT'";
  CliRun r = Xpool("agent --simulate 2xA100-80GB --mps 1 --mps-control " + dir +
                   "/mps-control --run --devices 1 --gpumem 8192 --gpucores 50 --state-dir " + dir + "/state" + task);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("MPS control daemons run for devices 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("pipe=" + dir + "/state/mps/1/pipe threads=50 mem=0=8192M"), std::string::npos) << r.output;
  EXPECT_EQ(Slurp(dir + "/state/mps/1/log/calls"), "-d 1\nquit\n");

  CliRun refused = Xpool("agent --simulate 2xA100-80GB --mps all --mps-control " + dir +
                         "/none --run --devices 1 --state-dir " + dir + "/state2" + task);
  EXPECT_EQ(refused.code, 0) << refused.output;
  EXPECT_NE(refused.output.find("MPS refused for devices 0,1: the MPS control program " + dir +
                                "/none: No such file or directory (those devices are shared without MPS)"),
            std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("pipe= threads= mem="), std::string::npos) << refused.output;

  CliRun bad = Xpool("agent --simulate 2xA100-80GB --mps 7 --print-devices");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--mps \"7\": this node has no device 7"), std::string::npos) << bad.output;
  std::filesystem::remove_all(dir);
}

// MIG through NVML (the fake driver keeps its MIG state in a file, as the real one keeps it on the GPU): the
// agent partitions GPU 0, offers its instances as devices and gives a task its instance's MIG uuid.
TEST(AgentCliTest, MigGeometryOffersInstancesAndTasksGetTheirUuid) {
  const std::string mig_state = testing::TempDir() + "xpool_agent_cli_mig_state";
  const std::string state = testing::TempDir() + "xpool_agent_cli_mig_tasks";
  std::filesystem::remove(mig_state);
  setenv("FAKE_NVML_MIG_STATE", mig_state.c_str(), 1);
  const std::string nvml = std::string("agent --discovery nvml --nvml-library ") + XPOOL_FAKE_NVML_PATH;
  CliRun r = Xpool(nvml + " --mig-geometry '0=2x1g.10gb,3g.40gb' --print-devices");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("A100-SXM4-80GB MIG 3g.40gb"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("MIG-fake-0000-0002"), std::string::npos) << r.output;
  CliRun run = Xpool(nvml + " --run --devices 1 --state-dir " + state + " -- sh -c 'echo dev=$CUDA_VISIBLE_DEVICES'");
  EXPECT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("dev=MIG-fake-0000-0002"), std::string::npos) << run.output;
  CliRun too_much = Xpool(nvml + " --mig-geometry 0=4x3g.40gb --print-devices");
  EXPECT_EQ(too_much.code, 2) << too_much.output;
  EXPECT_NE(too_much.output.find("do not fit"), std::string::npos) << too_much.output;
  setenv("FAKE_NVML_MIG_DENIED", "1", 1);
  CliRun denied = Xpool(nvml + " --mig-geometry 1=7g.80gb --print-devices");
  EXPECT_EQ(denied.code, 1) << denied.output;
  EXPECT_NE(denied.output.find("needs root"), std::string::npos) << denied.output;
  unsetenv("FAKE_NVML_MIG_DENIED");
  unsetenv("FAKE_NVML_MIG_STATE");
  std::filesystem::remove(mig_state);
}

TEST(AgentCliTest, UnreachableServerAndBadTokenAreClear) {
  // A bad token file is a usage error before any connection.
  CliRun r = Xpool("agent --simulate 1xT4-16GB --server http://127.0.0.1:1 --token-file /nonexistent/token");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot read a token"), std::string::npos) << r.output;
}

}  // namespace
