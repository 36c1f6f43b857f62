#include "agent/mps.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "agent/launcher.h"
#include "agent/task_env.h"
#include "common/testing/test_util.h"
#include "model/node_builder.h"

namespace xpool::agent {
namespace {

// A stand-in for nvidia-cuda-mps-control. `-d` "starts" the daemon: <pipe dir>/control records the environment
// it was started with (and refuses a second start, as the real one does). Without -d it is a client: it fails
// when no daemon runs, else reads commands from stdin (`quit` ends the daemon). Every call is appended to
// <log dir>/calls. FAIL_VISIBLE names a device whose daemon fails to start.
constexpr char kFakeControl[] = R"(#!/bin/sh
p="$CUDA_MPS_PIPE_DIRECTORY"
if [ "$1" = "-d" ]; then
  echo "-d" >> "$CUDA_MPS_LOG_DIRECTORY/calls"
  if [ "$CUDA_VISIBLE_DEVICES" = "$FAIL_VISIBLE" ]; then echo "failed to start: device busy" >&2; exit 1; fi
  if [ -e "$p/control" ]; then echo "An instance of this daemon is already running" >&2; exit 1; fi
  echo "visible=$CUDA_VISIBLE_DEVICES order=$CUDA_DEVICE_ORDER log=$CUDA_MPS_LOG_DIRECTORY" > "$p/control"
  exit 0
fi
[ -e "$p/control" ] || { echo "Cannot find MPS control daemon process" >&2; exit 1; }
while read -r cmd; do
  echo "$cmd" >> "$CUDA_MPS_LOG_DIRECTORY/calls"
  [ "$cmd" = quit ] && /bin/rm -f "$p/control"
done
exit 0
)";

class MpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir("mps_" + CurrentTestName());
    control_ = dir_ + "/bin/nvidia-cuda-mps-control";
    std::filesystem::create_directories(dir_ + "/bin");
    std::ofstream(control_) << kFakeControl;
    ::chmod(control_.c_str(), 0755);
  }
  void TearDown() override {
    ::unsetenv("FAIL_VISIBLE");
    if (had_path_) ::setenv("PATH", saved_path_.c_str(), 1);
    std::filesystem::remove_all(dir_);
  }
  MpsOptions Options() const {
    MpsOptions o;
    o.control_program = control_;
    o.dir = dir_ + "/mps";
    o.timeout_ms = 5000;
    return o;
  }
  std::string Calls(int index) const { return ReadFile(dir_ + "/mps/" + std::to_string(index) + "/log/calls"); }
  std::string Control(int index) const { return ReadFile(dir_ + "/mps/" + std::to_string(index) + "/pipe/control"); }

  std::string dir_, control_, saved_path_;
  bool had_path_ = false;
};

TEST_F(MpsTest, StartsOneDaemonPerMpsDeviceAndQuitsThem) {
  Node node = MakeNode("n1").WithGpus(3, "A100", 81920).Build();
  ASSERT_TRUE(SetMpsMode("0,2", &node).ok());
  {
    MpsDaemons daemons(Options());
    const std::vector<std::string> lines = daemons.Start(&node);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("MPS control daemons run for devices 0,2"), std::string::npos) << lines[0];
    EXPECT_EQ(node.labels.at(kMpsLabel), "devices 0,2");
    EXPECT_EQ(node.devices[0].mode, DeviceMode::kMps);
    EXPECT_EQ(node.devices[1].mode, DeviceMode::kShared);
    EXPECT_EQ(node.devices[2].mode, DeviceMode::kMps);
    ASSERT_EQ(daemons.pipe_dirs().size(), 2u);
    EXPECT_EQ(daemons.pipe_dirs().at(2), dir_ + "/mps/2/pipe");
    EXPECT_EQ(Control(0), "visible=0 order=PCI_BUS_ID log=" + dir_ + "/mps/0/log\n");
    EXPECT_EQ(Control(2), "visible=2 order=PCI_BUS_ID log=" + dir_ + "/mps/2/log\n");
    struct stat st {};
    ASSERT_EQ(::stat((dir_ + "/mps/2/pipe").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0755u);
    EXPECT_TRUE(daemons.Stop().empty());
    EXPECT_EQ(Calls(0), "-d\nquit\n");
    EXPECT_EQ(Control(2), "");  // quit ended it
    EXPECT_TRUE(daemons.pipe_dirs().empty());
  }
  EXPECT_EQ(Calls(2), "-d\nquit\n");  // the destructor did not quit again
}

TEST_F(MpsTest, DestructorQuitsTheDaemons) {
  Node node = MakeNode("n1").WithGpus(1, "A100", 81920).Build();
  ASSERT_TRUE(SetMpsMode("all", &node).ok());
  {
    MpsDaemons daemons(Options());
    daemons.Start(&node);
    EXPECT_NE(Control(0), "");
  }
  EXPECT_EQ(Calls(0), "-d\nquit\n");
}

TEST_F(MpsTest, WithoutTheControlProgramMpsIsRefused) {
  Node node = MakeNode("n1").WithGpus(2, "A100", 81920).Build();
  ASSERT_TRUE(SetMpsMode("all", &node).ok());
  MpsOptions options = Options();
  options.control_program = dir_ + "/missing/nvidia-cuda-mps-control";
  MpsDaemons daemons(options);
  const std::vector<std::string> lines = daemons.Start(&node);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "MPS refused for devices 0,1: the MPS control program " + options.control_program +
                          ": No such file or directory (those devices are shared without MPS)");
  EXPECT_EQ(node.labels.at(kMpsLabel), "MPS refused for devices 0,1: the MPS control program " +
                                           options.control_program + ": No such file or directory");
  for (const Device& d : node.devices) EXPECT_EQ(d.mode, DeviceMode::kShared);
  EXPECT_TRUE(daemons.pipe_dirs().empty());

  // By name, looked up on PATH.
  if (const char* path = std::getenv("PATH")) saved_path_ = path;
  had_path_ = true;
  ::setenv("PATH", (dir_ + "/empty").c_str(), 1);
  ASSERT_TRUE(SetMpsMode("1", &node).ok());
  MpsOptions by_name = Options();
  by_name.control_program = "nvidia-cuda-mps-control";
  MpsDaemons on_path(by_name);
  on_path.Start(&node);
  EXPECT_EQ(node.labels.at(kMpsLabel),
            "MPS refused for devices 1: the MPS control program nvidia-cuda-mps-control "
            "not found (PATH=" +
                dir_ + "/empty)");
}

TEST_F(MpsTest, ADaemonThatDoesNotStartRefusesOnlyItsDevice) {
  ::setenv("FAIL_VISIBLE", "1", 1);
  Node node = MakeNode("n1").WithGpus(2, "A100", 81920).Build();
  ASSERT_TRUE(SetMpsMode("all", &node).ok());
  MpsDaemons daemons(Options());
  daemons.Start(&node);
  EXPECT_EQ(node.labels.at(kMpsLabel),
            "devices 0; MPS refused for device 1: nvidia-cuda-mps-control -d exited with 1: failed to start: device "
            "busy");
  EXPECT_EQ(node.devices[0].mode, DeviceMode::kMps);
  EXPECT_EQ(node.devices[1].mode, DeviceMode::kShared);
  EXPECT_EQ(daemons.pipe_dirs().count(1), 0u);
}

// A daemon an earlier agent left (still serving its tasks) is taken over, not started twice.
TEST_F(MpsTest, TakesOverADaemonLeftRunning) {
  std::filesystem::create_directories(dir_ + "/mps/0/pipe");
  std::filesystem::create_directories(dir_ + "/mps/0/log");
  std::ofstream(dir_ + "/mps/0/pipe/control") << "left by an earlier agent\n";
  Node node = MakeNode("n1").WithGpus(1, "A100", 81920).Build();
  ASSERT_TRUE(SetMpsMode("0", &node).ok());
  MpsDaemons daemons(Options());
  daemons.Start(&node);
  EXPECT_EQ(node.labels.at(kMpsLabel), "devices 0");
  EXPECT_EQ(Calls(0), "get_server_list\n");
  EXPECT_EQ(Control(0), "left by an earlier agent\n");
}

TEST_F(MpsTest, SetMpsModeRefusesBadLists) {
  Node node = MakeNode("n1").WithGpus(2, "A100", 81920).WithGpus(1, "910B", 65536, Vendor::kAscend).Build();
  auto missing = SetMpsMode("0,5", &node);
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.message(), "--mps \"0,5\": this node has no device 5");
  EXPECT_EQ(SetMpsMode("2", &node).message(), "--mps \"2\": device 2 is ascend; MPS is NVIDIA's");
  EXPECT_EQ(SetMpsMode("0,,1", &node).message(), "--mps \"0,,1\": expected \"all\" or device indexes like 0,2");
  for (const Device& d : node.devices) EXPECT_EQ(d.mode, DeviceMode::kShared);  // nothing half-applied
  ASSERT_TRUE(SetMpsMode("all", &node).ok());                                   // every NVIDIA device
  EXPECT_EQ(node.devices[0].mode, DeviceMode::kMps);
  EXPECT_EQ(node.devices[1].mode, DeviceMode::kMps);
  EXPECT_EQ(node.devices[2].mode, DeviceMode::kShared);
}

TEST(MpsTaskEnvTest, ClientVariablesForMpsDevices) {
  LaunchSpec spec;
  spec.devices = {{2, 20480, 50}, {0, 0, 0}, {1, 8192, 30}};
  TaskPaths paths;
  paths.mps_pipe_dirs = {{0, "/mps/0/pipe"}, {2, "/mps/2/pipe"}};
  auto env = BuildTaskEnv(spec, paths, "");
  EXPECT_EQ(env.at("CUDA_MPS_PIPE_DIRECTORY"), "/mps/2/pipe");
  EXPECT_EQ(env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "50");
  EXPECT_EQ(env.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=20480M");  // device 1 does not run MPS

  spec.devices = {{1, 8192, 30}};
  env = BuildTaskEnv(spec, paths, "");
  EXPECT_EQ(env.count("CUDA_MPS_PIPE_DIRECTORY"), 0u);
  EXPECT_EQ(env.count("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), 0u);

  spec.devices = {{0, 0, 100}};  // the whole device: no limits, still an MPS client
  env = BuildTaskEnv(spec, paths, "");
  EXPECT_EQ(env.at("CUDA_MPS_PIPE_DIRECTORY"), "/mps/0/pipe");
  EXPECT_EQ(env.count("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), 0u);
  EXPECT_EQ(env.count("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), 0u);

  spec.vendor = Vendor::kMetax;
  EXPECT_EQ(BuildTaskEnv(spec, paths, "").count("CUDA_MPS_PIPE_DIRECTORY"), 0u);
}

// End to end on the agent's side: daemons started, a task launched on an MPS device reaches its daemon through the
// variables it was given.
TEST_F(MpsTest, TaskOnAnMpsDeviceTalksToItsDaemon) {
  Node node = MakeNode("n1").WithGpus(2, "A100", 81920).Build();
  ASSERT_TRUE(SetMpsMode("1", &node).ok());
  MpsDaemons daemons(Options());
  daemons.Start(&node);
  ASSERT_EQ(daemons.pipe_dirs().count(1), 1u);
  std::filesystem::create_directories(dir_ + "/work");
  LauncherOptions o;
  o.state_dir = dir_ + "/state";
  o.cgroup_root = "";
  o.vgpu_library = "/nonexistent/libxpool-vgpu.so";
  o.shim_command = {XPOOL_TEST_SHIM_PATH};
  o.stop_tasks_on_exit = true;
  o.mps_pipe_dirs = daemons.pipe_dirs();
  Launcher launcher(o);
  LaunchSpec spec;
  spec.task_id = "mps-r0";
  spec.workdir = dir_ + "/work";
  spec.devices = {{1, 40960, 50}};
  spec.shares_device = true;
  spec.argv = {"/bin/sh", "-c",
               "echo \"pipe=$CUDA_MPS_PIPE_DIRECTORY threads=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE "
               "mem=$CUDA_MPS_PINNED_DEVICE_MEM_LIMIT\"; echo get_server_list | CUDA_MPS_LOG_DIRECTORY=" +
                   dir_ + "/mps/1/log " + control_};
  ASSERT_TRUE(launcher.Start(spec).ok());
  auto st = launcher.WaitFor("mps-r0", 20 * kMicrosPerSecond);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state, TaskState::kSucceeded) << st->error;
  const std::string log = ReadLogTail(launcher.LogPath("mps-r0"), 0).value_or("");
  EXPECT_NE(log.find("pipe=" + dir_ + "/mps/1/pipe threads=50 mem=0=40960M"), std::string::npos) << log;
  EXPECT_EQ(Calls(1), "-d\nget_server_list\n");
}

}  // namespace
}  // namespace xpool::agent
