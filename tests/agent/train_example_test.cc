// examples/train.py run through the launcher: progress in the log, suspend → checkpoint → resume.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "agent/launcher.h"

namespace xpool::agent {
namespace {

std::string Source() {
  const char* dir = std::getenv("XPOOL_SOURCE_DIR");
  return dir ? dir : ".";
}

TEST(TrainExampleTest, SuspendCheckpointsAndResumes) {
  const std::string dir = std::filesystem::path(testing::TempDir()).lexically_normal().string() +
                          "xpool_train_example_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/work");
  LauncherOptions o;
  o.state_dir = dir + "/state";
  o.cgroup_root = "";
  const char* bin = std::getenv("XPOOL_BINARY_DIR");
  o.shim_command = {std::string(bin ? bin : ".") + "/bin/xpool", "task-shim"};  // tasks run under `xpool task-shim`
  o.stop_tasks_on_exit = true;
  Launcher launcher(o);
  LaunchSpec spec;
  spec.task_id = "job1-r0";
  spec.job_id = 1;
  spec.argv = {
      "python3", Source() + "/examples/train.py", "--steps", "400", "--step-seconds", "0.02", "--checkpoint-every",
      "1000"};
  spec.workdir = dir + "/work";
  ASSERT_TRUE(launcher.Start(spec).ok());
  // Wait for progress, then suspend.
  bool progressing = false;
  for (int i = 0; i < 1000 && !progressing; ++i) {
    progressing = ReadLogTail(launcher.LogPath("job1-r0"), 0).value_or("").find("step 5/400") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(progressing) << ReadLogTail(launcher.LogPath("job1-r0"), 0).value_or("");
  ASSERT_TRUE(launcher.Suspend("job1-r0", 10 * kMicrosPerSecond).ok());
  auto st = launcher.WaitFor("job1-r0", 20 * kMicrosPerSecond);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state, TaskState::kSuspended);
  EXPECT_EQ(st->exit_code, 0);
  const std::string log = ReadLogTail(launcher.LogPath("job1-r0"), 0).value_or("");
  EXPECT_NE(log.find("checkpoint saved"), std::string::npos) << log;
  ASSERT_TRUE(std::filesystem::exists(dir + "/work/checkpoint.json"));

  // Resume: the same task again, restart 1, a short run to the end.
  spec.restart_count = 1;
  spec.argv = {"python3", Source() + "/examples/train.py", "--steps", "400", "--step-seconds", "0"};
  ASSERT_TRUE(launcher.Start(spec).ok());
  st = launcher.WaitFor("job1-r0", 20 * kMicrosPerSecond);
  EXPECT_EQ(st->state, TaskState::kSucceeded);
  const std::string resumed = ReadLogTail(launcher.LogPath("job1-r0"), 0).value_or("");
  EXPECT_NE(resumed.find("resuming from step"), std::string::npos) << resumed;
  EXPECT_NE(resumed.find("restart 1"), std::string::npos) << resumed;
  EXPECT_NE(resumed.find("done: 400 steps"), std::string::npos) << resumed;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace xpool::agent
