// Preemption that converges (issue 20): a seeded simulation of the control plane with agents that take a while to
// checkpoint. Thousands of arrivals of low-priority preemptible jobs and multi-GPU (and multi-replica)
// high-priority jobs on four 4-GPU nodes; victims report their checkpoint 1..grace seconds after they are asked;
// one pass per simulated second. Asserts that no job is suspended twice for the same preemptor and that every
// preemptor starts within one checkpoint grace plus one pass of its decision.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "model/node_builder.h"
#include "server/control_plane.h"
#include "server/internal/victim_reason.h"

namespace xpool::server {
namespace {

constexpr int kGraceSeconds = 10;
constexpr int kArrivals = 2000;

struct Arrival {
  TimeMicros at = 0;
  JobSpec spec;
  int duration_s = 0;
};

std::vector<Arrival> Workload(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<Arrival> out;
  TimeMicros at = 0;
  for (int i = 0; i < kArrivals; ++i) {
    at += uniform(1, 9) * kMicrosPerSecond;
    Arrival a;
    a.at = at;
    JobSpec& s = a.spec;
    s.name = "j" + std::to_string(i);
    s.command = {"true"};
    s.resources.cpu_milli = 1000;
    s.resources.memory_mib = 1024;
    s.checkpoint_grace_seconds = kGraceSeconds;
    if (uniform(0, 3) == 0) {  // high: 2 or 4 GPUs a replica, 1 or 2 replicas, never a victim
      s.priority = 90;
      s.resources.gpu = uniform(0, 1) == 0 ? 2 : 4;
      s.replicas = uniform(1, 2);
      a.duration_s = uniform(20, 60);
    } else {
      s.priority = 10;
      s.preemptible = true;
      s.resources.gpu = uniform(1, 2);
      a.duration_s = uniform(10, 60);
    }
    out.push_back(std::move(a));
  }
  return out;
}

TEST(ControlPlanePreemptionTest, EveryPreemptorStartsAfterOneRoundOfCheckpoints) {
  FakeClock clock(1'700'000'000'000'000);
  // On tmpfs when there is one: thousands of commits, each an fsync.
  const std::filesystem::path db = (std::filesystem::exists("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                                        : std::filesystem::temp_directory_path()) /
                                   ("xpool_preemption_test_" + std::to_string(::getpid()) + ".db");
  std::filesystem::remove(db);
  struct Cleanup {
    std::filesystem::path path;
    ~Cleanup() {
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
    }
  } cleanup{db};
  auto store = OpenStateStore(db.string());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto tenant = (*store)->CreateTenant("team", false, TenantQuota{}, clock.NowMicros());
  ASSERT_TRUE(tenant.ok());
  ControlPlaneOptions options;
  options.min_runtime = 0;                  // every running low job is a candidate victim
  options.max_suspensions_per_hour = 1000;  // no cap hides a livelock
  ControlPlane control(**store, clock, nullptr, options);
  ASSERT_TRUE(control.Rebuild().ok());
  for (int n = 0; n < 4; ++n) {
    Node node = MakeNode("n" + std::to_string(n)).WithCpu(64000).WithMemory(262144).WithGpus(4, "A100", 81920).Build();
    ASSERT_TRUE(control.RegisterNode(node).ok());
  }

  const std::vector<Arrival> arrivals = Workload(20);
  const TimeMicros t0 = clock.NowMicros();
  std::map<JobId, int> duration_s;
  std::map<JobId, bool> high;
  std::multimap<TimeMicros, std::pair<JobId, int>> ends;  // (job, restart count) of each run
  std::map<JobId, TimeMicros> checkpoint_at;              // suspending victims: when their agent reports
  std::set<std::pair<JobId, int>> seen_suspensions;       // (victim, restart count)
  std::set<std::pair<JobId, JobId>> victim_of;            // (victim, preemptor)
  std::map<JobId, TimeMicros> preempted_at;               // a preemptor's first decision (waiting for victims)
  int suspensions = 0, preemptors_started = 0;
  size_t next = 0;
  std::mt19937_64 rng(7);
  const TimeMicros horizon = arrivals.back().at + 3600 * kMicrosPerSecond;
  for (TimeMicros now = 0; now < horizon; now += kMicrosPerSecond) {
    clock.Set(t0 + now);
    for (; next < arrivals.size() && arrivals[next].at <= now; ++next) {
      auto job = control.Submit(tenant->id, arrivals[next].spec);
      ASSERT_TRUE(job.ok()) << job.status().ToString();
      duration_s[job->id] = arrivals[next].duration_s;
      high[job->id] = arrivals[next].spec.priority == 90;
    }
    for (auto it = checkpoint_at.begin(); it != checkpoint_at.end();) {
      if (it->second > clock.NowMicros()) {
        ++it;
        continue;
      }
      ASSERT_TRUE(control.SuspendDone(it->first, "checkpointed and exited 0").ok());
      it = checkpoint_at.erase(it);
    }
    while (!ends.empty() && ends.begin()->first <= clock.NowMicros()) {
      auto [id, restarts] = ends.begin()->second;
      ends.erase(ends.begin());
      auto job = (*store)->GetJob(id);
      ASSERT_TRUE(job.ok());
      if (job->state == JobState::kRunning && job->restart_count == restarts) {
        ASSERT_TRUE(control.Finish(id, JobState::kSucceeded, "every replica exited 0").ok());
      }
    }
    control.RunPass(true);

    JobFilter filter;
    filter.states = {JobState::kScheduled, JobState::kSuspending};
    auto moving = (*store)->ListJobs(filter);
    ASSERT_TRUE(moving.ok());
    for (const JobRecord& j : *moving) {
      if (j.state == JobState::kScheduled) {  // the agent starts it
        ASSERT_TRUE(control.TaskStarted(j.id, clock.NowMicros()).ok());
        ends.emplace(clock.NowMicros() + duration_s[j.id] * kMicrosPerSecond, std::make_pair(j.id, j.restart_count));
        auto waited = preempted_at.find(j.id);
        if (waited != preempted_at.end()) {
          EXPECT_LE(clock.NowMicros() - waited->second, (kGraceSeconds + 1) * kMicrosPerSecond)
              << "job " << j.id.ToString() << " waited past one grace and one pass for its victims";
          preempted_at.erase(waited);
          ++preemptors_started;
        }
        continue;
      }
      if (!seen_suspensions.insert({j.id, j.restart_count}).second) continue;
      const JobId preemptor = internal::PreemptorOf(j.state_reason);
      ASSERT_NE(preemptor.value(), 0) << j.state_reason;
      EXPECT_TRUE(victim_of.insert({j.id, preemptor}).second)
          << "job " << j.id.ToString() << " suspended twice for job " << preemptor.ToString();
      ++suspensions;
      if (!preempted_at.contains(preemptor)) preempted_at[preemptor] = clock.NowMicros();
      checkpoint_at[j.id] =
          clock.NowMicros() + std::uniform_int_distribution<int>(1, kGraceSeconds)(rng) * kMicrosPerSecond;
    }
    if (now % (60 * kMicrosPerSecond) == 0) {
      ASSERT_TRUE(control.CheckConsistency().ok());
    }
    if (next == arrivals.size() && control.queue_length() == 0 && checkpoint_at.empty() && ends.empty()) break;
  }
  EXPECT_EQ(next, arrivals.size());
  EXPECT_EQ(control.queue_length(), 0u) << "every job ran";
  EXPECT_TRUE(preempted_at.empty()) << preempted_at.size() << " preemptors never started";
  // The workload exercises what it is about: many preemptions, most with more than one victim.
  EXPECT_GT(preemptors_started, 50);
  EXPECT_GT(suspensions, preemptors_started);
}

}  // namespace
}  // namespace xpool::server
