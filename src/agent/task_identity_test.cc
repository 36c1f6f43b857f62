// Task identity and fencing: the uid range, the tenant → uid mapping and the allow-listed environment (pure), and
// through the real launcher and shim: a task run as its tenant's uid (root only; skipped otherwise), a task whose
// agent's lease runs out stopping itself (fenced), and one whose lease is renewed running on.
#include "agent/task_identity.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/launcher.h"
#include "agent/task_shim.h"
#include "common/testing/test_util.h"

namespace xpool::agent {
namespace {

TEST(UidRangeTest, ParsesAndRefusesNamingTheFlag) {
  auto r = ParseUidRange("200000-299999");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->first, 200000u);
  EXPECT_EQ(r->last, 299999u);
  EXPECT_EQ(r->size(), 100000u);
  struct Row {
    const char* text;
    const char* error;
  };
  for (const Row& row : {Row{"", "must be FIRST-LAST"}, Row{"5", "must be FIRST-LAST"}, Row{"a-5", "is not a number"},
                         Row{"5-", "is not a number"}, Row{"0-10", "is not in 1.."}, Row{"9-3", "FIRST must not be"},
                         Row{"1-4294967295", "is not in 1.."}, Row{"-5-6", "is not a number"}}) {
    SCOPED_TRACE(row.text);
    auto bad = ParseUidRange(row.text);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(bad.status().message().find("--task-uid-range"), std::string::npos) << bad.status().message();
    EXPECT_NE(bad.status().message().find(row.error), std::string::npos) << bad.status().message();
  }
}

TEST(UidRangeTest, ARangeHoldingAnAccountIsRefused) {
  // Every system has root's group or some account below 65534 (daemon, nogroup, ...).
  Status s = CheckUidRangeFree(UidRange{0 + 1, 65534});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("holds the"), std::string::npos) << s.message();
  EXPECT_TRUE(CheckUidRangeFree(UidRange{1900000000, 1900000100}).ok());
}

TEST(TaskIdentityTest, TenantMapsToItsUidInTheRange) {
  const UidRange range{200000, 200009};
  auto id = IdentityForTenant(range, 3);
  ASSERT_TRUE(id.ok());
  EXPECT_TRUE(id->isolated);
  EXPECT_EQ(id->uid, 200003u);
  EXPECT_EQ(id->gid, 200003u);
  EXPECT_EQ(id->user, "xpool-3");
  EXPECT_EQ(IdentityForTenant(range, 9)->uid, 200009u);
  auto past = IdentityForTenant(range, 10);
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("tenant 10 has no uid in --task-uid-range 200000-200009"), std::string::npos)
      << past.status().message();
  auto none = IdentityForTenant(range, 0);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("names no tenant"), std::string::npos);
}

TEST(TaskIdentityTest, BaseEnvIsAnAllowListPlusPassedNames) {
  std::vector<std::string> strings = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C",      "TZ=UTC",
                                      "TERM=xterm",         "HOME=/root",   "XPOOL_TOKEN=t", "SERVER_SECRET=s",
                                      "AWS_SECRET=a",       "CUDA_HOME=/c", "NOEQUALS",      "=weird"};
  std::vector<char*> env;
  for (auto& s : strings) env.push_back(s.data());
  env.push_back(nullptr);
  TaskIdentity isolated{true, 200003, 200003, "xpool-3"};
  auto got = BaseTaskEnv(env.data(), {"CUDA_HOME"}, "/tasks/job1-r0/work", isolated);
  const std::map<std::string, std::string> want = {{"PATH", "/usr/bin:/bin"},
                                                   {"LANG", "C.UTF-8"},
                                                   {"LC_ALL", "C"},
                                                   {"TZ", "UTC"},
                                                   {"TERM", "xterm"},
                                                   {"CUDA_HOME", "/c"},
                                                   {"USER", "xpool-3"},
                                                   {"LOGNAME", "xpool-3"},
                                                   {"HOME", "/tasks/job1-r0/work"},
                                                   {"SHELL", "/bin/sh"}};
  EXPECT_EQ(got, want);
  // No PATH at all: the standard one.
  char* empty[] = {nullptr};
  EXPECT_EQ(BaseTaskEnv(empty, {}, "/h", TaskIdentity{})["PATH"],
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
}

class TaskDirsTest : public testing::Test {
 protected:
  void SetUp() override { dir_ = FreshDir("task_identity_" + CurrentTestName()); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  LauncherOptions Options() {
    LauncherOptions o;
    o.state_dir = dir_ + "/state";
    o.cgroup_root = "";
    o.vgpu_library = "/nonexistent/libxpool-vgpu.so";
    o.shim_command = {XPOOL_TEST_SHIM_PATH};
    o.stop_tasks_on_exit = true;
    return o;
  }
  LaunchSpec Shell(const std::string& id, const std::string& script) {
    LaunchSpec spec;
    spec.task_id = id;
    spec.argv = {"/bin/sh", "-c", script};
    spec.job_id = 7;
    spec.tenant_id = 5;
    return spec;  // no workdir: its own work dir
  }
  std::string dir_;
};

TEST_F(TaskDirsTest, PathAndTaskRootReachability) {
  const std::string closed = dir_ + "/closed";
  std::filesystem::create_directories(closed + "/inner");
  ::chmod(dir_.c_str(), 0755);
  ::chmod(closed.c_str(), 0700);
  ::chmod((closed + "/inner").c_str(), 0755);
  Status s = CheckReachableByTasks(closed + "/inner/tasks");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find(closed + " is mode 0700"), std::string::npos) << s.message();
  ::chmod(closed.c_str(), 0711);
  EXPECT_TRUE(CheckReachableByTasks(closed + "/inner/tasks").ok());
  ::chmod(closed.c_str(), 0700);
  EXPECT_EQ(PathReachableByTasks(closed + "/inner:relative:/usr/bin:/nonexistent:/bin"), "/usr/bin:/bin");
}

TEST_F(TaskDirsTest, WithoutRangeATaskRunsAsTheAgentInItsOwnWorkDir) {
  Launcher launcher(Options());
  ASSERT_TRUE(launcher.Start(Shell("job7-r0", "id -u; pwd; echo HOME=$HOME")).ok());
  auto st = launcher.WaitFor("job7-r0", 10 * kMicrosPerSecond);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state, TaskState::kSucceeded) << st->error;
  const std::string log = ReadLogTail(launcher.LogPath("job7-r0"), 0).value_or("");
  EXPECT_NE(log.find(std::to_string(::geteuid()) + "\n"), std::string::npos) << log;
  EXPECT_NE(log.find(launcher.HomeDir("job7-r0") + "\nHOME=" + launcher.HomeDir("job7-r0")), std::string::npos) << log;
  struct stat st_log {};
  ASSERT_EQ(::stat(launcher.LogPath("job7-r0").c_str(), &st_log), 0);
  EXPECT_EQ(st_log.st_mode & 0777, 0600u);
}

TEST_F(TaskDirsTest, AsRootATaskRunsAsItsTenantsUidWithoutGroups) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: only an agent running as root changes a task's uid";
  const UidRange range{1900000000, 1900000099};
  ASSERT_TRUE(CheckUidRangeFree(range).ok());
  ::chmod(dir_.c_str(), 0755);
  LauncherOptions o = Options();
  o.task_uids = range;
  ASSERT_TRUE(Launcher::CheckOptions(o).ok()) << Launcher::CheckOptions(o).ToString();
  Launcher launcher(o);
  std::ofstream(dir_ + "/state/secret") << "agent-only\n";
  ::chmod((dir_ + "/state/secret").c_str(), 0600);
  ASSERT_TRUE(launcher
                  .Start(Shell("job7-r0", "echo IDS $(id -u) $(id -g) $(id -G); cat " + dir_ +
                                              "/state/secret || echo DENIED-SECRET; ls " + dir_ +
                                              "/state || echo DENIED-LIST; touch mine && echo WROTE-HOME"))
                  .ok());
  auto st = launcher.WaitFor("job7-r0", 10 * kMicrosPerSecond);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state, TaskState::kSucceeded) << st->error;
  const std::string log = ReadLogTail(launcher.LogPath("job7-r0"), 0).value_or("");
  EXPECT_NE(log.find("IDS 1900000005 1900000005 1900000005\n"), std::string::npos) << log;
  EXPECT_NE(log.find("DENIED-SECRET"), std::string::npos) << log;
  EXPECT_EQ(log.find("agent-only"), std::string::npos) << log;
  EXPECT_NE(log.find("DENIED-LIST"), std::string::npos) << log;
  EXPECT_NE(log.find("WROTE-HOME"), std::string::npos) << log;
  struct stat home {};
  ASSERT_EQ(::stat(launcher.HomeDir("job7-r0").c_str(), &home), 0);
  EXPECT_EQ(home.st_uid, 1900000005u);
  EXPECT_EQ(home.st_mode & 0777, 0700u);
  // A tenant past the range: the task fails with the reason, nothing runs as root.
  LaunchSpec past = Shell("job8-r0", "id -u");
  past.tenant_id = 100;
  ASSERT_TRUE(launcher.Start(past).ok());
  st = launcher.WaitFor("job8-r0", 10 * kMicrosPerSecond);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state, TaskState::kFailed);
  EXPECT_NE(st->error.find("tenant 100 has no uid"), std::string::npos) << st->error;
}

TEST_F(TaskDirsTest, ATaskStopsItselfWhenItsAgentsLeaseRunsOut) {
  Launcher launcher(Options());
  // The lease ends in 0.5 s and is not renewed (the agent froze): the task is stopped and marked fenced.
  ASSERT_TRUE(launcher.RenewLease(BootTimeMicros() + 500'000, kMicrosPerSecond).ok());
  ASSERT_TRUE(launcher.Start(Shell("job7-r0", "exec sleep 60")).ok());
  auto st = launcher.WaitFor("job7-r0", 10 * kMicrosPerSecond);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state, TaskState::kStopped);
  EXPECT_TRUE(st->fenced);
  EXPECT_EQ(st->signal, SIGTERM);
  EXPECT_NE(ReadLogTail(launcher.LogPath("job7-r0"), 0).value_or("").find("fenced: the agent has not reached"),
            std::string::npos);
}

TEST_F(TaskDirsTest, ARenewedLeaseKeepsTheTaskRunning) {
  Launcher launcher(Options());
  ASSERT_TRUE(launcher.RenewLease(BootTimeMicros() + 500'000, kMicrosPerSecond).ok());
  ASSERT_TRUE(launcher.Start(Shell("job7-r0", "exec sleep 60")).ok());
  for (int i = 0; i < 10; ++i) {  // 1.5 s in all, three times the lease, renewed as heartbeats would
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    ASSERT_TRUE(launcher.RenewLease(BootTimeMicros() + 500'000, kMicrosPerSecond).ok());
  }
  (void)launcher.Poll();
  auto st = launcher.Get("job7-r0");
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->running()) << st->error;
  EXPECT_FALSE(st->fenced);
}

}  // namespace
}  // namespace xpool::agent
