#include "agent/node_agent.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "agent/change_watcher.h"
#include "agent/task_shim.h"
#include "common/testing/test_util.h"
#include "model/node_builder.h"
#include "protocol/log_relay.h"

namespace xpool::agent {
namespace {

// A server double: hands out whatever `wanted` holds and records what the agent reported.
class FakeControlPlane : public ControlPlaneClient {
 public:
  Status Register(const Node& node) override {
    registered = node.name;
    return Status::Ok();
  }
  using ControlPlaneClient::Heartbeat;
  Result<HeartbeatReply> Heartbeat(const Node&, const std::vector<TaskReport>& tasks,
                                   const std::vector<protocol::DeviceUsageSample>& device_usage) override {
    ++heartbeats;
    if (!reachable) return UnavailableError("server unreachable");
    last_usage.clear();
    for (const protocol::DeviceUsageSample& u : device_usage) last_usage[u.index] = u;
    last_reports = tasks;
    for (const TaskReport& r : tasks) {
      logs->Append(r.status.task_id, r.log_offset, r.log_data);
      logs->MarkEnd(r.status.task_id, r.log_end);
    }
    if (ack_ended) {
      // As the real server: a task reported ended is no longer listed in the reply to that heartbeat.
      for (const TaskReport& r : tasks) {
        if (r.status.running()) continue;
        std::erase_if(wanted, [&](const TaskAssignment& a) { return a.spec.task_id == r.status.task_id; });
      }
    }
    HeartbeatReply reply;
    reply.tasks = wanted;
    reply.generation = generation.load();
    return reply;
  }
  // Push (ChangeWatcher): announces a generation other than `seen` once `generation` moves, unless wake-ups are
  // lost (`lose_wakeups`: it answers `seen` at every timeout) or duplicated (`duplicate_wakeups`: it answers a
  // new generation at once, every time).
  Result<int64_t> WaitForChange(const Node&, int64_t seen, TimeMicros timeout) override {
    ++waits;
    if (duplicate_wakeups) return seen + 1;
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(timeout);
    while (std::chrono::steady_clock::now() < until) {
      if (!lose_wakeups && generation.load() != seen) return generation.load();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return seen;
  }
  const TaskReport* Report(const std::string& id) const {
    for (const auto& r : last_reports) {
      if (r.status.task_id == id) return &r;
    }
    return nullptr;
  }

  std::string registered;
  std::atomic<int> heartbeats{0};
  std::atomic<int64_t> generation{1};
  std::atomic<int> waits{0};
  bool lose_wakeups = false;
  bool duplicate_wakeups = false;
  bool reachable = true;
  bool ack_ended = false;
  std::vector<TaskAssignment> wanted;
  std::vector<TaskReport> last_reports;
  std::map<int, protocol::DeviceUsageSample> last_usage;  // by device index, as the last heartbeat sent it
  std::optional<protocol::LogRelay> logs{std::in_place};  // emplace() = a restarted server's empty copy
};

class NodeAgentTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir("node_agent_" + CurrentTestName());
    launcher_ = std::make_unique<Launcher>(Options());
    agent_ = std::make_unique<NodeAgent>(MakeNode("n1").WithGpus(2, "A100", 81920).Simulated().Build(), &server_,
                                         launcher_.get());
  }
  LauncherOptions Options() {
    LauncherOptions o;
    o.state_dir = dir_ + "/state";
    o.cgroup_root = "";
    o.shim_command = {XPOOL_TEST_SHIM_PATH};
    o.stop_tasks_on_exit = true;
    o.log_limits = log_limits_;
    return o;
  }
  // An agent whose tasks survive it (as `xpool agent` ending on SIGTERM), on the same state dir: it adopts what
  // an earlier one left there.
  void StartAgent(bool stop_tasks_on_exit) {
    agent_.reset();
    launcher_.reset();
    LauncherOptions o = Options();
    o.stop_tasks_on_exit = stop_tasks_on_exit;
    launcher_ = std::make_unique<Launcher>(o);
    agent_ = std::make_unique<NodeAgent>(MakeNode("n1").WithGpus(2, "A100", 81920).Simulated().Build(), &server_,
                                         launcher_.get());
  }
  void TearDown() override {
    agent_.reset();
    launcher_.reset();
    std::filesystem::remove_all(dir_);
  }
  TaskAssignment Run(const std::string& id, const std::string& script, int restart = 0) {
    TaskAssignment a;
    a.spec.task_id = id;
    a.spec.job_id = 12;
    a.spec.replica = 0;
    a.spec.restart_count = restart;
    a.spec.argv = {"/bin/sh", "-c", script};
    a.spec.workdir = dir_;
    a.grace_micros = 5 * kMicrosPerSecond;
    return a;
  }
  // Ticks until the task's report has `state` (or 5 s pass).
  bool TickUntil(const std::string& id, TaskState state) {
    for (int i = 0; i < 500; ++i) {
      EXPECT_TRUE(agent_->Tick().ok());
      const TaskReport* r = server_.Report(id);
      if (r && r->status.state == state) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // A task that prints "line 0001" ... "line <first>" (10 bytes each), waits for the file `go` (10 s at most),
  // prints on to "line <last>" and keeps running.
  TaskAssignment TwoBursts(const std::string& id, int first, int last, const std::string& go) {
    const std::string n = "n() { i=$1; while [ $i -le $2 ]; do printf 'line %04d\\n' $i; i=$((i+1)); done; }; ";
    return Run(id, n + "n 1 " + std::to_string(first) + "; j=0; while [ ! -f " + go + " ] && [ $j -lt 500 ]; do " +
                       "sleep 0.02; j=$((j+1)); done; n " + std::to_string(first + 1) + " " + std::to_string(last) +
                       "; exec sleep 20");
  }

  // Ticks until the launcher has let go of the task (stopped and forgotten) or 5 s pass.
  bool WaitForEnd(const std::string& id) {
    for (int i = 0; i < 500; ++i) {
      EXPECT_TRUE(agent_->Tick().ok());
      if (!launcher_->Get(id).ok()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // The server's copy of a task's output (all of it, from offset 0); "" when it has none.
  std::string Shipped(const std::string& id) {
    auto log = server_.logs->Read(id, 0, 1 << 20);
    EXPECT_TRUE(!log.ok() || log->first_offset == 0) << log->first_offset;
    return log.ok() ? log->data : "";
  }
  // Ticks until the server's copy of the task's output holds `text` (or 5 s pass).
  bool TickUntilShipped(const std::string& id, const std::string& text) {
    for (int i = 0; i < 500; ++i) {
      EXPECT_TRUE(agent_->Tick().ok());
      if (Shipped(id).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  std::string dir_;
  LogLimits log_limits_;
  FakeControlPlane server_;
  std::unique_ptr<Launcher> launcher_;
  std::unique_ptr<NodeAgent> agent_;
};

TEST_F(NodeAgentTest, RunsReportsAndForgetsAfterAck) {
  ASSERT_TRUE(agent_->Register().ok());
  EXPECT_EQ(server_.registered, "n1");
  server_.wanted = {Run("job12-r0", "exit 3")};
  ASSERT_TRUE(TickUntil("job12-r0", TaskState::kFailed));
  const TaskReport* r = server_.Report("job12-r0");
  EXPECT_EQ(r->status.exit_code, 3);
  EXPECT_EQ(r->job_id, 12);
  // Ended and read to the end: the report says how long the whole log is (the shim's start and exit lines).
  auto on_node = ReadLogTail(dir_ + "/state/job12-r0/output.log", 0);
  ASSERT_TRUE(on_node.ok());
  EXPECT_EQ(r->log_end, static_cast<int64_t>(on_node->size()));
  EXPECT_NE(on_node->find("exit"), std::string::npos) << *on_node;
  // Still listed by the server: reported again, not restarted.
  ASSERT_TRUE(agent_->Tick().ok());
  ASSERT_TRUE(agent_->Tick().ok());
  EXPECT_EQ(server_.Report("job12-r0")->status.state, TaskState::kFailed);
  // The server drops it (ack): the agent forgets it.
  server_.wanted.clear();
  ASSERT_TRUE(agent_->Tick().ok());
  ASSERT_TRUE(agent_->Tick().ok());
  EXPECT_EQ(server_.Report("job12-r0"), nullptr);
  EXPECT_FALSE(launcher_->Get("job12-r0").ok());
}

TEST_F(NodeAgentTest, HeartbeatsCarryMeasuredUseOfDevicesAndRunningTasks) {
  ASSERT_TRUE(agent_->Tick().ok());  // no probe: nothing measured
  EXPECT_TRUE(server_.last_usage.empty());
  SimulatedUsageProbe probe;
  agent_->SetUsageProbe(&probe);
  TaskAssignment a = Run("job12-r0", "exec sleep 20");
  protocol::TaskDevice grant;
  grant.index = 1;
  grant.memory_mib = 10000;
  grant.core_percent = 50;
  a.spec.devices = {grant};
  server_.wanted = {a};
  ASSERT_TRUE(TickUntil("job12-r0", TaskState::kRunning));
  ASSERT_TRUE(agent_->Tick().ok());
  EXPECT_EQ(server_.Report("job12-r0")->used_memory_mib, 5000);
  EXPECT_EQ(server_.last_usage[0].used_memory_mib, 0);
  EXPECT_EQ(server_.last_usage[1].used_memory_mib, 5000);
  EXPECT_EQ(server_.last_usage[1].sm_permille, 300);
}

TEST_F(NodeAgentTest, RestartWithHigherCountRunsAgain) {
  server_.wanted = {Run("job12-r0", "echo first")};
  ASSERT_TRUE(TickUntil("job12-r0", TaskState::kSucceeded));
  server_.wanted = {Run("job12-r0", "echo second; exit 4", 1)};
  ASSERT_TRUE(TickUntil("job12-r0", TaskState::kFailed));
  EXPECT_EQ(server_.Report("job12-r0")->restart_count, 1);
  EXPECT_EQ(server_.Report("job12-r0")->status.exit_code, 4);
}

TEST_F(NodeAgentTest, StopAndUnwantedTasksAreStopped) {
  server_.wanted = {Run("a", "sleep 30"), Run("b", "sleep 30")};
  ASSERT_TRUE(TickUntil("a", TaskState::kRunning));
  EXPECT_EQ(server_.Report("a")->log_end, -1);  // running: its log may still grow
  server_.wanted[0].action = TaskAssignment::Action::kStop;
  server_.wanted.pop_back();  // b is no longer wanted
  ASSERT_TRUE(TickUntil("a", TaskState::kStopped));
  EXPECT_TRUE(WaitForEnd("b"));
}

TEST_F(NodeAgentTest, SuspendAction) {
  server_.wanted = {Run("s", "trap 'exit 0' USR1; while :; do sleep 0.05; done")};
  ASSERT_TRUE(TickUntil("s", TaskState::kRunning));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the trap be installed
  server_.wanted[0].action = TaskAssignment::Action::kSuspend;
  ASSERT_TRUE(TickUntil("s", TaskState::kSuspended));
  EXPECT_EQ(server_.Report("s")->status.exit_code, 0);
}

TEST_F(NodeAgentTest, BadSpecIsReportedAsFailed) {
  TaskAssignment bad = Run("bad/id", "exit 0");
  server_.wanted = {bad, Run("nocmd", "")};
  server_.wanted[1].spec.argv = {"xpool-no-such-command"};
  ASSERT_TRUE(agent_->Tick().ok());
  ASSERT_TRUE(agent_->Tick().ok());
  const TaskReport* r = server_.Report("bad/id");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->status.state, TaskState::kFailed);
  EXPECT_NE(r->status.error.find("task id"), std::string::npos);
  r = server_.Report("nocmd");
  ASSERT_NE(r, nullptr);
  EXPECT_NE(r->status.error.find("command not found"), std::string::npos);
}

TEST_F(NodeAgentTest, UnreachableServerLeavesTasksRunning) {
  server_.wanted = {Run("long", "sleep 30")};
  ASSERT_TRUE(TickUntil("long", TaskState::kRunning));
  server_.reachable = false;
  Status s = agent_->Tick();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(launcher_->Get("long")->running());
  server_.reachable = true;
  ASSERT_TRUE(agent_->Tick().ok());
  EXPECT_EQ(server_.Report("long")->status.state, TaskState::kRunning);
}

TEST_F(NodeAgentTest, ShipsLogsOnceEvenWhenHeartbeatsFail) {
  server_.wanted = {Run("talk", "echo line1; sleep 0.3; echo line2; sleep 0.3; echo line3")};
  ASSERT_TRUE(TickUntil("talk", TaskState::kRunning));
  // Heartbeats fail for a while: the output waits and is sent once they work again.
  for (int i = 0; i < 40; ++i) {
    server_.reachable = (i / 10) % 2 == 1;
    (void)agent_->Tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  server_.reachable = true;
  ASSERT_TRUE(TickUntil("talk", TaskState::kSucceeded));
  ASSERT_TRUE(agent_->Tick().ok());
  auto log = server_.logs->Read("talk", 0, 1 << 20);
  ASSERT_TRUE(log.ok());
  const size_t a = log->data.find("line1\nline2\nline3\n");
  EXPECT_NE(a, std::string::npos) << log->data;
  EXPECT_EQ(log->data.find("line1", a + 1), std::string::npos) << "sent twice: " << log->data;
  EXPECT_EQ(log->first_offset, 0);
}

// A task writing more than one heartbeat carries (a chunk per task) leaves a backlog: the agent has news half a
// second after its heartbeat instead of waiting a whole interval. A quiet running task is no news.
TEST_F(NodeAgentTest, ALogBacklogBringsTheNextHeartbeatForward) {
  server_.wanted = {Run("quiet", "echo hello; exec sleep 30")};
  ASSERT_TRUE(TickUntilShipped("quiet", "hello\n"));
  ASSERT_TRUE(agent_->Tick().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  EXPECT_FALSE(agent_->HasNews()) << "a running task with nothing to send";

  // Over two chunks of output (lines of 3 to 7 bytes), all written before the agent reads any of it.
  const std::string printed = dir_ + "/printed";
  const int lines = static_cast<int>(3 * protocol::kMaxLogChunkBytes / 8);
  const std::string last = "x" + std::to_string(lines) + "\n";
  server_.wanted.push_back(Run("chatty", "i=1; while [ $i -le " + std::to_string(lines) +
                                             " ]; do echo x$i; i=$((i+1)); done; touch " + printed +
                                             "; exec sleep 30"));
  ASSERT_TRUE(agent_->Tick().ok());  // starts it
  for (int i = 0; i < 3000 && !std::filesystem::exists(printed); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(std::filesystem::exists(printed));
  std::string shipped;
  bool backlog_seen = false;
  for (int i = 0; i < 50 && shipped.find(last) == std::string::npos; ++i) {
    ASSERT_TRUE(agent_->Tick().ok());
    shipped = Shipped("chatty");
    if (shipped.find(last) == std::string::npos) {
      // Part of the output went, the rest waits: news within a second, without any task starting or ending.
      bool news = false;
      for (int wait = 0; wait < 100 && !news; ++wait) {
        news = agent_->HasNews();
        if (!news) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      EXPECT_TRUE(news) << shipped.size() << " bytes shipped";
      backlog_seen = backlog_seen || news;
    }
  }
  EXPECT_TRUE(backlog_seen);
  EXPECT_NE(shipped.find(last), std::string::npos);
}

TEST_F(NodeAgentTest, ResendsLogTailsAfterTheServerWasAway) {
  server_.wanted = {Run("tail", "echo before-restart; sleep 30")};
  ASSERT_TRUE(TickUntil("tail", TaskState::kRunning));
  std::string shipped;
  for (int i = 0; i < 300 && shipped.find("before-restart\n") == std::string::npos; ++i) {
    ASSERT_TRUE(agent_->Tick().ok());
    auto log = server_.logs->Read("tail", 0, 1 << 20);
    if (log.ok()) shipped = log->data;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_NE(shipped.find("before-restart\n"), std::string::npos) << shipped;
  // The server restarts: its copy of the output is gone. The agent sees a failed heartbeat, then re-sends the
  // tail it had shipped; the task is untouched.
  server_.logs.emplace();
  server_.reachable = false;
  EXPECT_FALSE(agent_->Tick().ok());
  server_.reachable = true;
  ASSERT_TRUE(agent_->Tick().ok());
  auto log = server_.logs->Read("tail", 0, 1 << 20);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(log->data, shipped);
  EXPECT_EQ(log->first_offset, 0);
  // Once acknowledged, the tail is not sent again.
  ASSERT_TRUE(agent_->Tick().ok());
  EXPECT_TRUE(server_.Report("tail")->log_data.empty());
  // A re-registration (the server forgot the node) re-sends it too.
  ASSERT_TRUE(agent_->Register().ok());
  ASSERT_TRUE(agent_->Tick().ok());
  EXPECT_EQ(server_.Report("tail")->log_data, shipped);
  EXPECT_TRUE(launcher_->Get("tail")->running());
}

TEST_F(NodeAgentTest, LogDiskFullIsSaidOnceAndTheTaskRuns) {
  std::filesystem::create_directories(dir_ + "/state/full");
  ASSERT_EQ(::symlink("/dev/full", (dir_ + "/state/full/output.log").c_str()), 0);
  server_.wanted = {Run("full", "head -c 200000 /dev/zero; echo done > done; sleep 30")};
  ASSERT_TRUE(TickUntil("full", TaskState::kRunning));
  std::vector<std::string> notices;
  for (int i = 0; i < 300 && notices.empty(); ++i) {
    ASSERT_TRUE(agent_->Tick().ok());
    notices = agent_->TakeNotices();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("the log disk is full"), std::string::npos) << notices[0];
  EXPECT_NE(notices[0].find("keeps running"), std::string::npos) << notices[0];
  ASSERT_TRUE(agent_->Tick().ok());
  EXPECT_TRUE(agent_->TakeNotices().empty());  // said once
  EXPECT_TRUE(launcher_->Get("full")->running());
}

TEST_F(NodeAgentTest, RestartedAgentAdoptsRunningAndEndedTasks) {
  StartAgent(/*stop_tasks_on_exit=*/false);
  // job13 waits for a file, then exits 3.
  const std::string go = dir_ + "/go";
  server_.wanted = {
      Run("job12-r0", "exec sleep 30"),
      Run("job13-r0", "i=0; while [ ! -f " + go + " ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i+1)); done; exit 3")};
  server_.wanted[1].spec.job_id = 13;
  ASSERT_TRUE(TickUntil("job12-r0", TaskState::kRunning));
  ASSERT_TRUE(TickUntil("job13-r0", TaskState::kRunning));
  const pid_t pid = server_.Report("job12-r0")->status.pid;
  ASSERT_GT(pid, 0);
  // The agent ends; job13 exits 3 while no agent runs (its shim records it); a new agent starts.
  agent_.reset();
  launcher_.reset();
  std::ofstream(go) << "go\n";
  bool recorded = false;
  for (int i = 0; i < 500 && !recorded; ++i) {
    auto st = ReadShimStatus(dir_ + "/state/job13-r0");
    recorded = st.ok() && st->state == TaskState::kFailed;
    if (!recorded) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(recorded);
  EXPECT_EQ(::kill(pid, 0), 0) << "the running task died with its agent";
  StartAgent(/*stop_tasks_on_exit=*/true);
  ASSERT_TRUE(agent_->Tick().ok());
  const TaskReport* long_run = server_.Report("job12-r0");
  ASSERT_NE(long_run, nullptr);
  EXPECT_EQ(long_run->status.state, TaskState::kRunning);
  EXPECT_EQ(long_run->status.pid, pid);  // the same process, not a new run
  EXPECT_EQ(long_run->job_id, 12);
  ASSERT_NE(server_.Report("job13-r0"), nullptr);
  EXPECT_EQ(server_.Report("job13-r0")->status.state, TaskState::kFailed);
  EXPECT_EQ(server_.Report("job13-r0")->status.exit_code, 3);
  EXPECT_EQ(server_.Report("job13-r0")->job_id, 13);
  const auto notices = agent_->TakeNotices();
  ASSERT_FALSE(notices.empty());
  EXPECT_NE(notices[0].find("adopted"), std::string::npos) << notices[0];

  // The server restarted job 12 meanwhile (it requeued it): the stale run is stopped, then run 1 starts.
  server_.wanted = {Run("job12-r0", "echo second run; exec sleep 30", 1)};
  bool rerun = false;
  for (int i = 0; i < 500 && !rerun; ++i) {
    ASSERT_TRUE(agent_->Tick().ok());
    const TaskReport* r = server_.Report("job12-r0");
    rerun = r && r->restart_count == 1 && r->status.running();
    if (!rerun) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(rerun);
  EXPECT_NE(server_.Report("job12-r0")->status.pid, pid);
  EXPECT_NE(::kill(pid, 0), 0) << "the stale run still runs beside the new one";
}

// The task's log rotates while no agent runs: the adopting agent ships it with the stream's offsets, so the
// server's copy is the whole output, once (it used to count from the live file's start, missing or repeating).
TEST_F(NodeAgentTest, AdoptedTaskLogRotatedWhileNoAgentRanIsShippedWholeAndOnce) {
  log_limits_ = LogLimits{4096, 3};
  StartAgent(/*stop_tasks_on_exit=*/false);
  const std::string go = dir_ + "/go";
  // 100 lines of 10 bytes, then (once `go` exists) 1200 more: three rotations, every file still kept.
  server_.wanted = {TwoBursts("job12-r0", 100, 1300, go)};
  ASSERT_TRUE(TickUntil("job12-r0", TaskState::kRunning));
  ASSERT_TRUE(TickUntilShipped("job12-r0", "line 0100\n")) << Shipped("job12-r0");
  agent_.reset();
  launcher_.reset();
  std::ofstream(go) << "go\n";
  const std::string path = dir_ + "/state/job12-r0/output.log";
  bool written = false;
  for (int i = 0; i < 500 && !written; ++i) {
    auto files = ReadLogTail(path, 0);
    written = files.ok() && files->find("line 1300\n") != std::string::npos;
    if (!written) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(written);
  ASSERT_TRUE(std::filesystem::exists(path + ".3")) << "the log did not rotate three times";
  StartAgent(/*stop_tasks_on_exit=*/true);
  ASSERT_TRUE(TickUntilShipped("job12-r0", "line 1300\n")) << Shipped("job12-r0");
  auto on_node = ReadLogTail(path, 0);
  ASSERT_TRUE(on_node.ok());
  EXPECT_EQ(Shipped("job12-r0"), *on_node);
  EXPECT_NE(on_node->find("line 0001\n"), std::string::npos);
  EXPECT_EQ(server_.Report("job12-r0")->status.state, TaskState::kRunning);
}

// A task ends with more output than one heartbeat carries, and the server stops listing it at once (its end is
// acknowledged): the rest still reaches the server. After a server restart its tail is sent again, as a running
// task's is, though the agent has forgotten the task.
TEST_F(NodeAgentTest, EndedTaskOutputIsShippedToTheEndAndResentAfterAServerRestart) {
  server_.ack_ended = true;
  server_.wanted = {Run("job12-r0", "head -c 200000 /dev/zero | tr '\\0' x; echo; echo the-end")};
  ASSERT_TRUE(agent_->Tick().ok());  // starts it; it ends before the next heartbeat, which reports it ended
  bool ended = false;
  for (int i = 0; i < 500 && !ended; ++i) {
    (void)launcher_->Poll();
    auto st = launcher_->Get("job12-r0");
    ended = st.ok() && st->state == TaskState::kSucceeded;
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(ended);
  ASSERT_TRUE(TickUntilShipped("job12-r0", "the-end\n")) << Shipped("job12-r0").size() << " bytes shipped";
  EXPECT_FALSE(launcher_->Get("job12-r0").ok()) << "the ended task was not forgotten";
  auto on_node = ReadLogTail(dir_ + "/state/job12-r0/output.log", 0);
  ASSERT_TRUE(on_node.ok());
  EXPECT_EQ(Shipped("job12-r0"), *on_node);
  // The server knows the log's end, and that its copy reaches it: what `done` of the logs route needs.
  auto whole = server_.logs->Read("job12-r0", 0, 1 << 20);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->end_offset, static_cast<int64_t>(on_node->size()));
  EXPECT_EQ(whole->next_offset, whole->end_offset);
  ASSERT_TRUE(agent_->Tick().ok());
  EXPECT_EQ(server_.Report("job12-r0"), nullptr) << "reported again with nothing to send";

  server_.logs.emplace();  // the server restarts: its copy is gone
  server_.reachable = false;
  EXPECT_FALSE(agent_->Tick().ok());
  server_.reachable = true;
  ASSERT_TRUE(agent_->Tick().ok());
  ASSERT_NE(server_.Report("job12-r0"), nullptr);
  EXPECT_EQ(server_.Report("job12-r0")->status.state, TaskState::kSucceeded);
  auto tail = server_.logs->Read("job12-r0", 0, 1 << 20);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  const int64_t tail_bytes = protocol::kMaxLogChunkBytes;
  EXPECT_EQ(tail->first_offset, static_cast<int64_t>(on_node->size()) - tail_bytes);
  EXPECT_EQ(tail->data, on_node->substr(on_node->size() - tail_bytes));
  ASSERT_TRUE(agent_->Tick().ok());
  EXPECT_EQ(server_.Report("job12-r0"), nullptr) << "sent again once acknowledged";
}

// The task writes more than `keep` rotations hold between two heartbeats: the server's copy skips what was
// deleted and is, from its first offset, exactly what the node keeps (not a mix of files at wrong offsets).
TEST_F(NodeAgentTest, OutputRotatedAwayUnreadLeavesAGapNotAMix) {
  log_limits_ = LogLimits{1024, 1};
  StartAgent(/*stop_tasks_on_exit=*/true);
  const std::string go = dir_ + "/go";
  server_.wanted = {TwoBursts("job12-r0", 50, 1050, go)};
  ASSERT_TRUE(TickUntil("job12-r0", TaskState::kRunning));
  ASSERT_TRUE(TickUntilShipped("job12-r0", "line 0050\n")) << Shipped("job12-r0");
  std::ofstream(go) << "go\n";  // 10 KB now, while the agent does not read: 1 KiB files, one kept
  const std::string path = dir_ + "/state/job12-r0/output.log";
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(path).find("line 1050\n") != std::string::npos; }));
  bool shipped = false;
  for (int i = 0; i < 500 && !shipped; ++i) {
    ASSERT_TRUE(agent_->Tick().ok());
    auto log = server_.logs->Read("job12-r0", -1, 1 << 20);
    shipped = log.ok() && log->data.find("line 1050\n") != std::string::npos;
    if (!shipped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(shipped);
  auto log = server_.logs->Read("job12-r0", -1, 1 << 20);
  auto on_node = ReadLogTail(path, 0);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE(on_node.ok());
  EXPECT_EQ(log->data, *on_node);
  EXPECT_GT(log->first_offset, 8000);  // 10.5 KB written, at most 2 KiB kept: the copy starts after the gap
  EXPECT_EQ(log->first_offset + static_cast<int64_t>(log->data.size()), log->next_offset);
}

// Push (docs/agent.md): the server's announced change wakes the agent's loop at once — far inside its heartbeat
// interval — and it starts the task; a task's exit is reported without waiting for the interval either.
TEST_F(NodeAgentTest, AnAnnouncedChangeAndATaskExitWakeTheLoopAtOnce) {
  ASSERT_TRUE(agent_->Tick().ok());
  ChangeWatcher watcher(&server_, agent_->node(), /*long_poll=*/200'000);
  watcher.Seen(agent_->generation());
  const TimeMicros interval = 30 * kMicrosPerSecond;
  std::thread server_side([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    server_.wanted = {Run("job12-r0", "sleep 0.3")};
    server_.generation = 2;  // after the list: the fake answers from `wanted`
  });
  auto start = std::chrono::steady_clock::now();
  watcher.WaitForWork(*agent_, interval, [] { return false; });
  server_side.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_TRUE(agent_->Tick().ok());  // gets the task and starts it
  watcher.Seen(agent_->generation());
  EXPECT_EQ(agent_->generation(), 2);
  // A start not yet reported is news: no wait at all.
  start = std::chrono::steady_clock::now();
  watcher.WaitForWork(*agent_, interval, [] { return false; });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  ASSERT_TRUE(agent_->Tick().ok());
  EXPECT_EQ(server_.Report("job12-r0")->status.state, TaskState::kRunning);
  // Its exit wakes the loop (checked every 20 ms), not the 30 s interval.
  watcher.WaitForWork(*agent_, interval, [] { return false; });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_TRUE(agent_->Tick().ok());
  EXPECT_EQ(server_.Report("job12-r0")->status.state, TaskState::kSucceeded);
}

// A lost wake-up costs one interval, never the task: the level-triggered heartbeat still delivers it. Duplicated
// wake-ups cost heartbeats, never a second run.
TEST_F(NodeAgentTest, LostOrDuplicatedWakeupsNeverLoseOrDoubleATask) {
  ASSERT_TRUE(agent_->Tick().ok());
  {
    server_.lose_wakeups = true;
    ChangeWatcher watcher(&server_, agent_->node(), /*long_poll=*/50'000);
    watcher.Seen(agent_->generation());
    server_.wanted = {Run("job12-r0", "sleep 300")};
    server_.generation = 2;
    const auto start = std::chrono::steady_clock::now();
    watcher.WaitForWork(*agent_, 300'000, [] { return false; });  // nothing announced: the whole interval
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(290));
    ASSERT_TRUE(agent_->Tick().ok());  // the heartbeat the interval brings delivers the task all the same
    ASSERT_TRUE(launcher_->Get("job12-r0").ok());
  }
  server_.lose_wakeups = false;
  server_.duplicate_wakeups = true;
  ChangeWatcher watcher(&server_, agent_->node(), /*long_poll=*/50'000);
  const auto first = launcher_->Get("job12-r0")->started_at;
  for (int i = 0; i < 20; ++i) {
    watcher.Seen(agent_->generation());
    watcher.WaitForWork(*agent_, 5 * kMicrosPerSecond, [] { return false; });
    ASSERT_TRUE(agent_->Tick().ok());
  }
  EXPECT_GT(server_.waits.load(), 0);
  auto st = launcher_->Get("job12-r0");
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->running());
  EXPECT_EQ(st->started_at, first) << "a duplicated wake-up started the task again";
  EXPECT_EQ(launcher_->List().size(), 1u);
}

}  // namespace
}  // namespace xpool::agent
