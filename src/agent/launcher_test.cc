// Launcher tests with real child processes (/bin/sh scripts).
#include "agent/launcher.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "common/testing/test_util.h"

namespace xpool::agent {
namespace {

constexpr TimeMicros kWait = 10 * kMicrosPerSecond;

class LauncherTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir("launcher_" + CurrentTestName());
    work_ = dir_ + "/work";
    std::filesystem::create_directories(work_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  LauncherOptions Options() {
    LauncherOptions o;
    o.state_dir = dir_ + "/state";
    o.cgroup_root = "";  // unit tests never touch the machine's cgroups
    o.vgpu_library = "/nonexistent/libxpool-vgpu.so";
    o.shim_command = {XPOOL_TEST_SHIM_PATH};  // tasks run under the shim, as in the agent
    o.stop_tasks_on_exit = true;
    return o;
  }
  LaunchSpec Shell(const std::string& id, const std::string& script) {
    LaunchSpec spec;
    spec.task_id = id;
    spec.argv = {"/bin/sh", "-c", script};
    spec.workdir = work_;
    spec.job_id = 42;
    return spec;
  }
  std::string Log(Launcher& l, const std::string& id) { return ReadLogTail(l.LogPath(id), 0).value_or(""); }

  std::string dir_, work_;
};

// An image: the command runs through podman — here a stand-in `podman` on the task's PATH that prints its
// arguments — or, with no podman at all, the task fails with the reason that it can never run on this node.
TEST_F(LauncherTest, AnImageRunsThroughPodmanOrCannotRunHere) {
  Launcher launcher(Options());
  const std::string bin = dir_ + "/bin";
  std::filesystem::create_directories(bin);
  std::ofstream(bin + "/podman") << "#!/bin/sh\necho podman \"$@\"\n";
  ::chmod((bin + "/podman").c_str(), 0755);
  LaunchSpec spec = Shell("job42-r0", "echo never on the host");
  spec.image = "localhost/team/train:v1";
  spec.env["PATH"] = bin;
  ASSERT_TRUE(launcher.Start(spec).ok());
  auto st = launcher.WaitFor("job42-r0", kWait);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state, TaskState::kSucceeded) << st->error;
  const std::string log = Log(launcher, "job42-r0");
  EXPECT_NE(log.find("podman run --rm --name xpool-job42-r0 --network host --ipc host --volume " + work_ + ":" + work_ +
                     " --workdir " + work_),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("localhost/team/train:v1 /bin/sh -c echo never on the host"), std::string::npos) << log;
  EXPECT_EQ(log.rfind("never on the host", 0), std::string::npos) << "ran on the host:\n" << log;
  EXPECT_EQ(log.find("\nnever on the host"), std::string::npos) << "ran on the host:\n" << log;

  LaunchSpec none = Shell("job43-r0", "true");
  none.image = "localhost/team/train:v1";
  none.env["PATH"] = dir_ + "/empty";
  ASSERT_TRUE(launcher.Start(none).ok());
  st = launcher.WaitFor("job43-r0", kWait);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state, TaskState::kFailed);
  EXPECT_NE(st->error.find("podman is not installed"), std::string::npos) << st->error;
  EXPECT_NE(st->error.find("can never run here"), std::string::npos) << st->error;
}

TEST_F(LauncherTest, RunsInWorkdirWithTaskEnv) {
  LauncherOptions o = Options();
  o.vgpu_library = XPOOL_FAKE_NVML_PATH;  // any real shared library stands in for libxpool-vgpu.so
  Launcher launcher(o);
  LaunchSpec spec = Shell("job42-r1", "pwd; env | sort; echo to-stderr >&2");
  spec.replica = 1;
  spec.restart_count = 3;
  spec.devices = {{2, 40960, 50}, {0, 0, 0}};
  spec.shares_device = true;
  spec.env["MY_VAR"] = "hello";
  spec.distributed = DistributedEnv{"10.1.2.3", 29501, 2, 1, 1, 2, 0};  // both replicas on this node
  ASSERT_TRUE(launcher.Start(spec).ok());
  auto st = launcher.WaitFor("job42-r1", kWait);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state, TaskState::kSucceeded);
  EXPECT_EQ(st->exit_code, 0);
  const std::string log = Log(launcher, "job42-r1");
  for (const std::string& want : {work_ + "\n",
                                  std::string("CUDA_VISIBLE_DEVICES=2,0\n"),
                                  std::string("NVIDIA_VISIBLE_DEVICES=2,0\n"),
                                  std::string("XPOOL_DEVICE_MEMORY_LIMIT_0=40960\n"),
                                  std::string("XPOOL_DEVICE_CORE_LIMIT_0=50\n"),
                                  "XPOOL_SHARED_REGION=" + dir_ + "/state/job42-r1/vgpu.region\n",
                                  "XPOOL_SUSPEND_FILE=" + dir_ + "/state/job42-r1/suspend\n",
                                  std::string("LD_PRELOAD=") + XPOOL_FAKE_NVML_PATH,
                                  std::string("XPOOL_JOB_ID=42\n"),
                                  std::string("XPOOL_REPLICA=1\n"),
                                  std::string("XPOOL_RESTART_COUNT=3\n"),
                                  std::string("MY_VAR=hello\n"),
                                  std::string("MASTER_ADDR=10.1.2.3\n"),
                                  std::string("MASTER_PORT=29501\n"),
                                  std::string("WORLD_SIZE=2\n"),
                                  std::string("RANK=1\n"),
                                  std::string("LOCAL_RANK=1\n"),
                                  std::string("LOCAL_WORLD_SIZE=2\n"),
                                  std::string("NODE_RANK=0\n"),
                                  std::string("to-stderr\n")}) {
    EXPECT_NE(log.find(want), std::string::npos) << "missing " << want << " in:\n" << log;
  }
  EXPECT_EQ(log.find("XPOOL_DEVICE_MEMORY_LIMIT_1"), std::string::npos);
}

TEST_F(LauncherTest, ExitCodeAndSignalAreReported) {
  Launcher launcher(Options());
  ASSERT_TRUE(launcher.Start(Shell("three", "echo bye; exit 3")).ok());
  ASSERT_TRUE(launcher.Start(Shell("killed", "kill -SEGV $$")).ok());
  auto three = launcher.WaitFor("three", kWait);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->state, TaskState::kFailed);
  EXPECT_EQ(three->exit_code, 3);
  EXPECT_EQ(three->signal, 0);
  auto killed = launcher.WaitFor("killed", kWait);
  EXPECT_EQ(killed->state, TaskState::kFailed);
  EXPECT_EQ(killed->signal, SIGSEGV);
  EXPECT_NE(Log(launcher, "three").find("exited with code 3"), std::string::npos);
  // Poll reports each ended task once.
  auto ended = launcher.Poll();
  EXPECT_EQ(ended.size(), 2u);
  EXPECT_TRUE(launcher.Poll().empty());
}

TEST_F(LauncherTest, MissingCommandFailsTheTaskNotTheLauncher) {
  Launcher launcher(Options());
  LaunchSpec spec = Shell("nocmd", "");
  spec.argv = {"xpool-no-such-command", "--flag"};
  ASSERT_TRUE(launcher.Start(spec).ok());
  auto st = launcher.Get("nocmd");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state, TaskState::kFailed);
  EXPECT_EQ(st->exit_code, 127);
  EXPECT_NE(st->error.find("exec \"xpool-no-such-command\": command not found"), std::string::npos) << st->error;
  EXPECT_NE(Log(launcher, "nocmd").find("could not start"), std::string::npos);
  // A path that exists but cannot be executed fails in the child, with the kernel's reason.
  std::ofstream(work_ + "/not-executable.sh") << "echo hi\n";
  spec.task_id = "noexec";
  spec.argv = {"./not-executable.sh"};
  ASSERT_TRUE(launcher.Start(spec).ok());
  st = launcher.Get("noexec");
  EXPECT_EQ(st->state, TaskState::kFailed);
  EXPECT_NE(st->error.find("Permission denied"), std::string::npos) << st->error;
  // The launcher carries on.
  ASSERT_TRUE(launcher.Start(Shell("after", "exit 0")).ok());
  EXPECT_EQ(launcher.WaitFor("after", kWait)->state, TaskState::kSucceeded);
}

// A shim that cannot be started (a broken install): the task fails naming the shim and why, the launcher goes on.
TEST_F(LauncherTest, AShimThatCannotStartFailsTheTaskClearly) {
  LauncherOptions o = Options();
  o.shim_command = {dir_ + "/no-such-shim"};
  Launcher launcher(o);
  ASSERT_TRUE(launcher.Start(Shell("t", "echo hi")).ok());
  auto st = launcher.Get("t");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state, TaskState::kFailed);
  EXPECT_EQ(st->error, "cannot start the task shim " + dir_ + "/no-such-shim: No such file or directory");
}

TEST_F(LauncherTest, MissingWorkdirIsAClearError) {
  Launcher launcher(Options());
  LaunchSpec spec = Shell("nowd", "exit 0");
  spec.workdir = dir_ + "/does-not-exist";
  ASSERT_TRUE(launcher.Start(spec).ok());
  auto st = launcher.Get("nowd");
  EXPECT_EQ(st->state, TaskState::kFailed);
  EXPECT_EQ(st->error, "workdir \"" + spec.workdir + "\" does not exist");
}

TEST_F(LauncherTest, BadSpecAndDuplicateAreErrors) {
  Launcher launcher(Options());
  LaunchSpec bad = Shell("a/b", "exit 0");
  EXPECT_EQ(launcher.Start(bad).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(launcher.Start(Shell("dup", "sleep 5")).ok());
  EXPECT_EQ(launcher.Start(Shell("dup", "exit 0")).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(launcher.Stop("nobody", 0).code(), StatusCode::kNotFound);
  EXPECT_EQ(launcher.Forget("dup").code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(launcher.Stop("dup", kWait).ok());
  EXPECT_EQ(launcher.WaitFor("dup", kWait)->state, TaskState::kStopped);
  // An ended task may be started again (a restart), appending to its log.
  LaunchSpec again = Shell("dup", "echo second run");
  again.restart_count = 1;
  ASSERT_TRUE(launcher.Start(again).ok());
  EXPECT_EQ(launcher.WaitFor("dup", kWait)->state, TaskState::kSucceeded);
  const std::string log = Log(launcher, "dup");
  EXPECT_NE(log.find("(restart 0)"), std::string::npos) << log;
  EXPECT_NE(log.find("second run"), std::string::npos) << log;
}

TEST_F(LauncherTest, StopTerminatesTheWholeGroup) {
  Launcher launcher(Options());
  ASSERT_TRUE(launcher.Start(Shell("tree", "sleep 100 & echo $! > c1; sh -c 'sleep 100' & echo $! > c2; wait")).ok());
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(work_ + "/c2").size() > 1; }));
  const pid_t c1 = std::stoi(ReadFile(work_ + "/c1"));
  const pid_t c2 = std::stoi(ReadFile(work_ + "/c2"));
  EXPECT_TRUE(IsRunning(c1));
  ASSERT_TRUE(launcher.Stop("tree", kWait).ok());
  auto st = launcher.WaitFor("tree", kWait);
  EXPECT_EQ(st->state, TaskState::kStopped);
  EXPECT_TRUE(WaitUntil([&] { return !IsRunning(c1) && !IsRunning(c2); })) << "children survived";
}

TEST_F(LauncherTest, StopEscalatesToSigkillAfterGrace) {
  // The grace runs on the shim's (real) clock.
  Launcher launcher(Options());
  ASSERT_TRUE(launcher.Start(Shell("stubborn", "trap '' TERM; echo ready > ready; while :; do sleep 0.05; done")).ok());
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(work_ + "/ready") == "ready\n"; }));
  const auto stop_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(launcher.Stop("stubborn", 600'000).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto early = launcher.Poll();  // ignores SIGTERM; grace not over (unless this machine stalled 600 ms)
  if (std::chrono::steady_clock::now() - stop_at < std::chrono::milliseconds(500)) {
    EXPECT_TRUE(early.empty());
  }
  auto st = launcher.WaitFor("stubborn", kWait);
  EXPECT_EQ(st->state, TaskState::kStopped);
  EXPECT_EQ(st->signal, SIGKILL);
  EXPECT_GE(std::chrono::steady_clock::now() - stop_at, std::chrono::milliseconds(600));
}

TEST_F(LauncherTest, LeftoverChildrenDieWithTheLeader) {
  Launcher launcher(Options());
  ASSERT_TRUE(launcher.Start(Shell("leaver", "sleep 100 & echo $! > child; exit 0")).ok());
  auto st = launcher.WaitFor("leaver", kWait);
  EXPECT_EQ(st->state, TaskState::kSucceeded);
  const pid_t child = std::stoi(ReadFile(work_ + "/child"));
  EXPECT_TRUE(WaitUntil([&] { return !IsRunning(child); })) << "orphan survived its task";
}

TEST_F(LauncherTest, SuspendWritesFileAndSignals) {
  Launcher launcher(Options());
  const std::string script =
      "trap 'test -f \"$XPOOL_SUSPEND_FILE\" && echo checkpointed > ckpt && exit 0; exit 9' USR1; "
      "echo ready > ready; while :; do sleep 0.05; done";
  ASSERT_TRUE(launcher.Start(Shell("susp", script)).ok());
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(work_ + "/ready") == "ready\n"; }));
  ASSERT_TRUE(launcher.Suspend("susp", kWait).ok());
  auto st = launcher.WaitFor("susp", kWait);
  EXPECT_EQ(st->state, TaskState::kSuspended);
  EXPECT_EQ(st->exit_code, 0);
  EXPECT_EQ(ReadFile(work_ + "/ckpt"), "checkpointed\n");
  EXPECT_EQ(launcher.Suspend("susp", kWait).code(), StatusCode::kFailedPrecondition);
}

TEST_F(LauncherTest, SuspendSendsTheJobsOwnSignal) {
  Launcher launcher(Options());  // default SIGUSR1, which this task would die of
  const std::string script =
      "trap 'echo \"$XPOOL_SUSPEND_SIGNAL\" > ckpt; exit 0' HUP; trap 'exit 7' USR1; "
      "echo ready > ready; while :; do sleep 0.05; done";
  LaunchSpec spec = Shell("hup", script);
  spec.suspend_signal = "SIGHUP";
  ASSERT_TRUE(launcher.Start(spec).ok());
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(work_ + "/ready") == "ready\n"; }));
  ASSERT_TRUE(launcher.Suspend("hup", kWait).ok());
  auto st = launcher.WaitFor("hup", kWait);
  EXPECT_EQ(st->state, TaskState::kSuspended);
  EXPECT_EQ(st->exit_code, 0);
  EXPECT_EQ(ReadFile(work_ + "/ckpt"), "SIGHUP\n");  // the signal came, and its name was in the environment
  LaunchSpec bad = Shell("bad", "true");
  bad.suspend_signal = "SIGKILL";
  Status refused = launcher.Start(bad);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("checkpoint.signal"), std::string::npos) << refused.message();
}

TEST_F(LauncherTest, SuspendThatIsIgnoredEndsInStopAndKill) {
  LauncherOptions o = Options();
  o.suspend_signal = SIGUSR2;
  Launcher launcher(o);
  ASSERT_TRUE(
      launcher.Start(Shell("deaf", "trap '' USR2 TERM; echo ready > ready; while :; do sleep 0.05; done")).ok());
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(work_ + "/ready") == "ready\n"; }));
  const auto suspend_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(launcher.Suspend("deaf", 300'000).ok());  // → SIGTERM (ignored) after 0.3 s → SIGKILL after 0.3 s
  EXPECT_TRUE(WaitUntil([&] { return std::filesystem::exists(dir_ + "/state/deaf/suspend"); }));
  auto st = launcher.WaitFor("deaf", kWait);
  EXPECT_EQ(st->state, TaskState::kSuspended);
  EXPECT_EQ(st->signal, SIGKILL);
  EXPECT_GE(std::chrono::steady_clock::now() - suspend_at, std::chrono::milliseconds(600));
}

TEST_F(LauncherTest, SuspendWithGraceZeroStopsAtOnce) {
  Launcher launcher(Options());
  ASSERT_TRUE(launcher.Start(Shell("now", "trap '' USR1 TERM; echo ready > ready; while :; do sleep 0.05; done")).ok());
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(work_ + "/ready") == "ready\n"; }));
  ASSERT_TRUE(launcher.Suspend("now", 0).ok());
  std::vector<TaskStatus> ended;
  ASSERT_TRUE(WaitUntil([&] {
    auto e = launcher.Poll();  // the shim: SIGTERM at once, SIGKILL at its next round
    ended.insert(ended.end(), e.begin(), e.end());
    return !ended.empty();
  }));
  EXPECT_EQ(ended[0].state, TaskState::kSuspended);
  EXPECT_EQ(ended[0].signal, SIGKILL);
}

TEST_F(LauncherTest, LogsAreCappedAndRotated) {
  LauncherOptions o = Options();
  o.log_limits = LogLimits{4096, 2};
  Launcher launcher(o);
  ASSERT_TRUE(launcher.Start(Shell("chatty", "i=0; while [ $i -lt 1000 ]; do echo line-$i; i=$((i+1)); done")).ok());
  EXPECT_EQ(launcher.WaitFor("chatty", kWait)->state, TaskState::kSucceeded);
  const std::string path = launcher.LogPath("chatty");
  EXPECT_EQ(LogFiles(path).size(), 3u);
  EXPECT_FALSE(std::filesystem::exists(path + ".3"));
  for (const auto& f : LogFiles(path)) EXPECT_LE(std::filesystem::file_size(f), 4096u);
  const std::string tail = *ReadLogTail(path, 200);
  EXPECT_NE(tail.find("line-999\n"), std::string::npos) << tail;
  EXPECT_NE(tail.find("exited with code 0"), std::string::npos) << tail;
}

TEST_F(LauncherTest, FullLogDiskDoesNotKillTheTask) {
  Launcher launcher(Options());
  std::filesystem::create_directories(dir_ + "/state/full");
  ASSERT_EQ(::symlink("/dev/full", (dir_ + "/state/full/output.log").c_str()), 0);
  // 1 MiB of output: far more than a pipe holds, so the task would block if nobody drained it.
  ASSERT_TRUE(launcher.Start(Shell("full", "head -c 1048576 /dev/zero; echo done > done")).ok());
  auto st = launcher.WaitFor("full", kWait);
  EXPECT_EQ(st->state, TaskState::kSucceeded);
  EXPECT_EQ(ReadFile(work_ + "/done"), "done\n");
  EXPECT_NE(st->log_note.find("the log disk is full"), std::string::npos) << st->log_note;
}

TEST_F(LauncherTest, CgroupLimitsWhereAvailable) {
  // A stand-in cgroup v2 root: the launcher writes the same files it writes under /sys/fs/cgroup.
  const std::string root = dir_ + "/cgroup";
  std::filesystem::create_directories(root);
  std::ofstream(root + "/cgroup.controllers") << "cpuset cpu io memory pids\n";
  LauncherOptions o = Options();
  o.cgroup_root = root;
  Launcher launcher(o);
  EXPECT_TRUE(launcher.cgroup().available()) << launcher.cgroup().reason();
  EXPECT_TRUE(launcher.TakeNotices().empty());
  LaunchSpec spec = Shell("limited", "exit 0");
  spec.cpu_milli = 1500;
  spec.memory_mib = 256;
  ASSERT_TRUE(launcher.Start(spec).ok());
  EXPECT_EQ(launcher.WaitFor("limited", kWait)->state, TaskState::kSucceeded);
  EXPECT_EQ(ReadFile(root + "/xpool/cgroup.subtree_control"), "+cpu +memory");
  EXPECT_EQ(ReadFile(root + "/xpool/limited/cpu.max"), "150000 100000");
  EXPECT_EQ(ReadFile(root + "/xpool/limited/memory.max"), "268435456");
  EXPECT_EQ(ReadFile(root + "/xpool/limited/cgroup.procs"), "0");  // the child joined before exec
}

TEST_F(LauncherTest, NoCgroupV2IsSaidOnce) {
  LauncherOptions o = Options();
  o.cgroup_root = dir_ + "/no-cgroup";
  Launcher launcher(o);
  EXPECT_FALSE(launcher.cgroup().available());
  auto notices = launcher.TakeNotices();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("without CPU/memory limits"), std::string::npos) << notices[0];
  EXPECT_TRUE(launcher.TakeNotices().empty());
  LaunchSpec spec = Shell("shared", "exit 0");
  spec.devices = {{0, 1024, 50}};
  spec.shares_device = true;
  ASSERT_TRUE(launcher.Start(spec).ok());
  ASSERT_TRUE(launcher.Start(Shell("shared2", "exit 0")).ok());
  notices = launcher.TakeNotices();
  ASSERT_EQ(notices.size(), 1u);  // the runtime library is missing: said once
  EXPECT_NE(notices[0].find("not found"), std::string::npos) << notices[0];
  EXPECT_EQ(launcher.WaitFor("shared", kWait)->state, TaskState::kSucceeded);
}

}  // namespace
}  // namespace xpool::agent
