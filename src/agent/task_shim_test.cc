// The task shim and adoption: tasks run under a shim process of their own, outlive their launcher, and a new
// launcher on the same state dir adopts them (running or ended). Real processes (/bin/sh), the test shim binary.
#include "agent/task_shim.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "agent/launcher.h"
#include "common/testing/test_util.h"

namespace xpool::agent {
namespace {

constexpr TimeMicros kWait = 10 * kMicrosPerSecond;

pid_t ParentOf(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string state;
  pid_t ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

class TaskShimTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir("shim_" + CurrentTestName());
    std::filesystem::create_directories(dir_ + "/work");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  LauncherOptions Options(bool stop_tasks_on_exit) {
    LauncherOptions o;
    o.state_dir = dir_ + "/state";
    o.cgroup_root = "";
    o.vgpu_library = "/nonexistent/libxpool-vgpu.so";
    o.shim_command = {XPOOL_TEST_SHIM_PATH};
    o.stop_tasks_on_exit = stop_tasks_on_exit;
    return o;
  }
  LaunchSpec Shell(const std::string& id, const std::string& script, int64_t job = 7) {
    LaunchSpec spec;
    spec.task_id = id;
    spec.job_id = job;
    spec.replica = 1;
    spec.restart_count = 2;
    spec.argv = {"/bin/sh", "-c", script};
    spec.workdir = dir_ + "/work";
    return spec;
  }
  std::string TaskDir(const std::string& id) const { return dir_ + "/state/" + id; }

  std::string dir_;
};

TEST_F(TaskShimTest, ShimSupervisesTheTaskInSessionsOfTheirOwn) {
  Launcher launcher(Options(true));
  ASSERT_TRUE(launcher.Start(Shell("t1", "echo hello; exec sleep 30")).ok());
  auto st = launcher.Get("t1");
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(st->running());
  const pid_t task = st->pid;
  ASSERT_GT(task, 0);
  auto recorded = ReadShimStatus(TaskDir("t1"));
  ASSERT_TRUE(recorded.ok());
  const pid_t shim = recorded->shim_pid;
  EXPECT_EQ(recorded->state, TaskState::kRunning);
  EXPECT_EQ(recorded->pid, task);
  EXPECT_EQ(recorded->pid_start, ProcessStartTime(task));
  EXPECT_NE(shim, task);
  EXPECT_EQ(ParentOf(task), shim);      // the shim, not the agent, waits for the task
  EXPECT_EQ(ParentOf(shim), getpid());  // the agent reaps its own shims
  EXPECT_EQ(::getsid(shim), shim);      // both lead sessions of their own: the agent's end reaches neither
  EXPECT_EQ(::getsid(task), task);
  EXPECT_TRUE(ShimAlive(TaskDir("t1")));
  struct stat spec_file {};
  ASSERT_EQ(::stat((TaskDir("t1") + "/" + kShimSpecFile).c_str(), &spec_file), 0);
  EXPECT_EQ(spec_file.st_mode & 0777, 0600u);  // the job's env may hold secrets
  auto spec = ReadShimSpec(TaskDir("t1"));
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->job_id, 7);
  EXPECT_EQ(spec->replica, 1);
  EXPECT_EQ(spec->restart_count, 2);
  EXPECT_TRUE(WaitUntil(
      [&] { return ReadLogTail(launcher.LogPath("t1"), 0).value_or("").find("hello\n") != std::string::npos; }));
  // Stop goes through the control file; the shim records the end, then exits (and is reaped).
  ASSERT_TRUE(launcher.Stop("t1", kWait).ok());
  st = launcher.WaitFor("t1", kWait);
  EXPECT_EQ(st->state, TaskState::kStopped);
  EXPECT_EQ(st->signal, SIGTERM);
  EXPECT_TRUE(WaitUntil([&] { return !ShimAlive(TaskDir("t1")); }));
  EXPECT_EQ(ReadShimStatus(TaskDir("t1"))->state, TaskState::kStopped);
  EXPECT_NE(ReadFile(launcher.LogPath("t1")).find("killed by signal 15"), std::string::npos);
}

TEST_F(TaskShimTest, RunningTaskOutlivesItsLauncherAndIsAdopted) {
  const std::string counter = "i=0; while [ $i -lt 1500 ]; do echo tick $i; i=$((i+1)); sleep 0.02; done";
  pid_t task = 0;
  {
    Launcher first(Options(/*stop_tasks_on_exit=*/false));
    ASSERT_TRUE(first.Start(Shell("job7-r1", counter)).ok());
    task = first.Get("job7-r1")->pid;
  }  // the first agent is gone
  ASSERT_TRUE(IsRunning(task));
  const std::string log_path = TaskDir("job7-r1") + "/output.log";
  const size_t before = ReadFile(log_path).size();
  EXPECT_TRUE(WaitUntil([&] { return ReadFile(log_path).size() > before + 20; })) << "the log stopped growing";

  Launcher second(Options(/*stop_tasks_on_exit=*/true));
  auto adopted = second.Adopt();
  ASSERT_EQ(adopted.size(), 1u);
  EXPECT_EQ(adopted[0].status.task_id, "job7-r1");
  EXPECT_TRUE(adopted[0].status.running());
  EXPECT_EQ(adopted[0].status.pid, task);  // the same process
  EXPECT_EQ(adopted[0].job_id, 7);
  EXPECT_EQ(adopted[0].replica, 1);
  EXPECT_EQ(adopted[0].restart_count, 2);
  EXPECT_TRUE(second.Adopt().empty());  // adopted once
  EXPECT_TRUE(second.Poll().empty());
  // A second launcher cannot start the same task beside the shim that runs it.
  Launcher third(Options(true));
  EXPECT_EQ(third.Start(Shell("job7-r1", "exit 0")).code(), StatusCode::kAlreadyExists);
  // The adopter can suspend and stop it.
  ASSERT_TRUE(second.Suspend("job7-r1", 0).ok());
  EXPECT_TRUE(WaitUntil([&] { return std::filesystem::exists(TaskDir("job7-r1") + "/suspend"); }));
  auto st = second.WaitFor("job7-r1", kWait);
  EXPECT_EQ(st->state, TaskState::kSuspended);
  EXPECT_FALSE(IsRunning(task));
  auto ended = second.Poll();
  ASSERT_EQ(ended.size(), 1u);
  // Forgotten (the server acknowledged it): a later agent does not adopt it again.
  ASSERT_TRUE(second.Forget("job7-r1").ok());
  Launcher fourth(Options(true));
  EXPECT_TRUE(fourth.Adopt().empty());
}

TEST_F(TaskShimTest, TaskThatEndsWhileNoLauncherRunsIsReportedWithItsExitCode) {
  const std::string go = dir_ + "/go";
  {
    Launcher first(Options(false));
    ASSERT_TRUE(first
                    .Start(Shell("job8-r0",
                                 "i=0; while [ ! -f " + go +
                                     " ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i+1)); done; echo bye; exit 3",
                                 8))
                    .ok());
  }
  std::ofstream(go) << "go\n";
  ASSERT_TRUE(WaitUntil([&] {
    auto st = ReadShimStatus(TaskDir("job8-r0"));
    return st.ok() && st->state != TaskState::kRunning;
  }));
  EXPECT_TRUE(WaitUntil([&] { return !ShimAlive(TaskDir("job8-r0")); }));
  Launcher second(Options(true));
  auto adopted = second.Adopt();
  ASSERT_EQ(adopted.size(), 1u);
  EXPECT_EQ(adopted[0].status.state, TaskState::kFailed);
  EXPECT_EQ(adopted[0].status.exit_code, 3);
  EXPECT_EQ(adopted[0].job_id, 8);
  auto ended = second.Poll();  // reported once, like any ended task
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].exit_code, 3);
  EXPECT_TRUE(second.Poll().empty());
  const std::string log = ReadFile(second.LogPath("job8-r0"));
  EXPECT_NE(log.find("bye\n"), std::string::npos) << log;
  EXPECT_NE(log.find("exited with code 3 (failed)"), std::string::npos) << log;
}

// A task whose shim is gone without a recorded end: failed; its recorded pid is killed only when it is still the
// same process (same start time), never a process that reused the pid.
TEST_F(TaskShimTest, ShimLostIsFailedAndAReusedPidIsNotKilled) {
  auto start_stray = [] {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setsid();
      ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  };
  auto plant = [&](const std::string& id, pid_t pid, uint64_t pid_start) {
    std::filesystem::create_directories(TaskDir(id));
    ShimSpec spec;
    spec.task_id = id;
    spec.job_id = 9;
    spec.program = "/bin/sleep";
    spec.argv = {"sleep", "30"};
    spec.workdir = dir_;
    ASSERT_TRUE(WriteShimSpec(TaskDir(id), spec).ok());
    ShimStatus st;
    st.state = TaskState::kRunning;
    st.pid = pid;
    st.pid_start = pid_start;
    ASSERT_TRUE(WriteShimStatus(TaskDir(id), st).ok());
  };
  const pid_t stranger = start_stray();
  const pid_t own = start_stray();
  // Each its own session (the launcher kills a task's process group), as a task under its shim is.
  ASSERT_TRUE(WaitUntil([&] {
    return ProcessStartTime(stranger) != 0 && ProcessStartTime(own) != 0 && ::getsid(stranger) == stranger &&
           ::getsid(own) == own;
  }));
  plant("reused", stranger, ProcessStartTime(stranger) + 1);  // the pid now belongs to another process
  plant("orphan", own, ProcessStartTime(own));                // still the task's own process
  Launcher launcher(Options(true));
  auto adopted = launcher.Adopt();
  ASSERT_EQ(adopted.size(), 2u);
  for (const AdoptedTask& t : adopted) {
    EXPECT_EQ(t.status.state, TaskState::kFailed) << t.status.task_id;
    EXPECT_NE(t.status.error.find("task shim ended"), std::string::npos) << t.status.error;
  }
  EXPECT_TRUE(IsRunning(stranger)) << "a process that reused the task's pid was killed";
  int ws = 0;
  ASSERT_EQ(::waitpid(own, &ws, 0), own);
  EXPECT_TRUE(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL) << "the task left without its shim still ran";
  ::kill(stranger, SIGKILL);
  ::waitpid(stranger, &ws, 0);
}

TEST_F(TaskShimTest, StatusAndControlFilesRoundTrip) {
  std::filesystem::create_directories(TaskDir("x"));
  EXPECT_EQ(ReadShimStatus(TaskDir("x")).status().code(), StatusCode::kNotFound);
  ShimStatus st;
  st.state = TaskState::kSuspended;
  st.pid = 123;
  st.pid_start = 456;
  st.exit_code = 0;
  st.error = "e";
  st.log_note = "n";
  st.ended_at = 99;
  ASSERT_TRUE(WriteShimStatus(TaskDir("x"), st).ok());
  auto back = ReadShimStatus(TaskDir("x"));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->state, TaskState::kSuspended);
  EXPECT_EQ(back->pid, 123);
  EXPECT_EQ(back->pid_start, 456u);
  EXPECT_EQ(back->error, "e");
  EXPECT_EQ(back->log_note, "n");
  EXPECT_EQ(back->ended_at, 99);
  std::ofstream(TaskDir("x") + "/" + kShimSpecFile) << "{\"task_id\": 3}";
  EXPECT_EQ(ReadShimSpec(TaskDir("x")).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(SendShimControl(TaskDir("x"), "stop", 5).ok());
  ASSERT_TRUE(SendShimControl(TaskDir("x"), "suspend", -1).ok());
  EXPECT_EQ(ReadFile(TaskDir("x") + "/" + kShimControlFile), "stop 5\nsuspend 0\n");
  EXPECT_FALSE(ShimAlive(TaskDir("x")));
  // A bad spec is not adopted; the launcher says so.
  Launcher launcher(Options(true));
  (void)launcher.TakeNotices();
  EXPECT_TRUE(launcher.Adopt().empty());
  auto notices = launcher.TakeNotices();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("not adopting"), std::string::npos) << notices[0];
}

}  // namespace
}  // namespace xpool::agent
