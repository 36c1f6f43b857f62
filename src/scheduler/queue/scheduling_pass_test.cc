#include "scheduler/queue/scheduling_pass.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "scheduler/queue/internal/test_support.h"

namespace xpool {
namespace {

using testing_support::FirstFitPlacer;
using testing_support::GpuRequest;
using testing_support::MakeCluster;
using testing_support::MakeTenant;
using testing_support::StartJob;
using testing_support::Waiting;

constexpr TimeMicros kMinute = 60 * kMicrosPerSecond;
constexpr TimeMicros kNow = 1000 * kMinute;

// Tenants: x (4 GPUs guaranteed), y (no guarantee), z (16 GPUs guaranteed).
std::vector<Tenant> Tenants() { return {MakeTenant(1, "x", 4000), MakeTenant(2, "y"), MakeTenant(3, "z", 16000)}; }

const JobDecision& DecisionFor(const PassResult& r, const std::vector<QueueJob>& jobs, int64_t id) {
  for (const JobDecision& d : r.decisions) {
    if (jobs[d.job].id == JobId(id)) return d;
  }
  static const JobDecision kNone;
  ADD_FAILURE() << "no decision for job " << id;
  return kNone;
}

// One expected decision: the job, its kind and a part of its reason.
struct ExpectedDecision {
  int64_t id;
  DecisionKind kind;
  std::string reason_has;
};

// Every expected decision is in `r` (one per row), each with its kind and reason.
void ExpectDecisions(const PassResult& r, const std::vector<QueueJob>& jobs,
                     const std::vector<ExpectedDecision>& rows) {
  ASSERT_EQ(r.decisions.size(), rows.size());
  for (const ExpectedDecision& row : rows) {
    SCOPED_TRACE(row.id);
    const JobDecision& d = DecisionFor(r, jobs, row.id);
    EXPECT_EQ(DecisionKindName(d.kind), DecisionKindName(row.kind));
    EXPECT_NE(d.reason.find(row.reason_has), std::string::npos) << d.reason;
  }
}

struct Scenario {
  ClusterState state;
  FirstFitPlacer placer;
  std::vector<QueueJob> jobs;
  explicit Scenario(int nodes = 1, int gpus = 8) : state(MakeCluster(nodes, gpus)) {}
  void Running(QueueJob j, TimeMicros ran_for) {
    ASSERT_TRUE(StartJob(state, placer, j, kNow - ran_for));
    jobs.push_back(std::move(j));
  }
  PassResult Pass(const PassOptions& options = {}) {
    return RunSchedulingPass(jobs, Tenants(), state, placer, kNow, options);
  }
};

TEST(SchedulingPassTest, HigherPrioritySuspendsLowerWithReasonsOnBothJobs) {
  Scenario s;
  s.Running(Waiting(10, 2, 10, 0, GpuRequest(8)), 60 * kMinute);
  s.jobs.push_back(Waiting(1, 1, 90, 5, GpuRequest(8)));
  PassResult r = s.Pass();
  const JobDecision& d = DecisionFor(r, s.jobs, 1);
  ASSERT_EQ(d.kind, DecisionKind::kPreempt) << d.reason;
  EXPECT_EQ(d.reason, "suspends job 10 (tenant y, priority 10): lower priority (10 < 90)");
  ASSERT_EQ(r.suspensions.size(), 1u);
  EXPECT_EQ(s.jobs[r.suspensions[0].job].id, JobId(10));
  EXPECT_EQ(s.jobs[r.suspensions[0].for_job].id, JobId(1));
  EXPECT_EQ(r.suspensions[0].reason, "suspended for job 1 (tenant x, priority 90): lower priority (10 < 90)");
  EXPECT_EQ(d.victims, std::vector<int>{0});
  // The state shows the cluster after the decisions: the victim's 8 GPUs are the preemptor's.
  EXPECT_EQ(s.state.totals().device_compute_allocated_milli, 8000);
  EXPECT_TRUE(s.state.CheckInvariants().ok());
  EXPECT_EQ(r.stats.preempting, 1);
  EXPECT_EQ(r.stats.suspended, 1);
}

// A placer that records what the pass booked (learning policies such as gpu-clustering keep per-node state
// from OnBooked, so a placement the pass books without telling them leaves that state wrong).
class RecordingPlacer final : public JobPlacer {
 public:
  JobPlacement Place(ClusterState& state, const TaskRequest& request, int replicas) override {
    return inner.Place(state, request, replicas);
  }
  void OnBooked(const ClusterState& state, const TaskRequest& /*request*/,
                const std::vector<Allocation>& allocations) override {
    for (const Allocation& a : allocations) {
      booked.push_back(a.node);
      // Told after booking: the allocation is already in the state.
      EXPECT_GE(state.usage(a.node).cpu_milli, a.cpu_milli);
    }
  }
  FirstFitPlacer inner;
  std::vector<int> booked;  // node of every allocation told
};

TEST(SchedulingPassTest, EveryBookedPlacementIsToldToThePlacer) {
  ClusterState state = MakeCluster(2, 8);
  RecordingPlacer placer;
  std::vector<QueueJob> jobs;
  QueueJob low = Waiting(10, 2, 10, 0, GpuRequest(8));
  ASSERT_TRUE(StartJob(state, placer.inner, low, kNow - 60 * kMinute));
  jobs.push_back(low);
  jobs.push_back(Waiting(1, 1, 50, 1, GpuRequest(4)));     // placed on the free node
  jobs.push_back(Waiting(2, 1, 50, 2, GpuRequest(2), 2));  // a gang, placed: two allocations
  jobs.push_back(Waiting(3, 1, 90, 3, GpuRequest(8)));     // preempts the low job
  PassResult r = RunSchedulingPass(jobs, Tenants(), state, placer, kNow);
  EXPECT_EQ(r.stats.placed, 2);
  EXPECT_EQ(r.stats.preempting, 1);
  size_t allocations = 0;
  for (const JobDecision& d : r.decisions) allocations += d.allocations.size();
  EXPECT_EQ(allocations, 4u);
  EXPECT_EQ(placer.booked.size(), allocations);  // place and preempt alike
}

TEST(SchedulingPassTest, NoThrash) {
  struct Row {
    std::string name;
    TimeMicros ran_for;
    int suspensions_last_hour;
    TimeMicros min_runtime;
    int cap;
    bool preempted;
  };
  const Row rows[] = {
      {"started 5 minutes ago, min-runtime 10", 5 * kMinute, 0, 10 * kMinute, 3, false},
      {"started 5 minutes ago, min-runtime 2", 5 * kMinute, 0, 2 * kMinute, 3, true},
      {"suspended 3 times this hour, cap 3", 60 * kMinute, 3, 10 * kMinute, 3, false},
      {"suspended 3 times this hour, cap 4", 60 * kMinute, 3, 10 * kMinute, 4, true},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Scenario s;
    QueueJob low = Waiting(10, 2, 10, 0, GpuRequest(8));
    low.suspensions_last_hour = row.suspensions_last_hour;
    s.Running(low, row.ran_for);
    s.jobs.push_back(Waiting(1, 1, 90, 5, GpuRequest(8)));
    PassOptions options;
    options.rules.min_runtime = row.min_runtime;
    options.rules.max_suspensions_per_hour = row.cap;
    PassResult r = s.Pass(options);
    const JobDecision& d = DecisionFor(r, s.jobs, 1);
    EXPECT_EQ(d.kind, row.preempted ? DecisionKind::kPreempt : DecisionKind::kWait) << d.reason;
    EXPECT_EQ(r.suspensions.size(), row.preempted ? 1u : 0u);
  }
}

// A job that waits only because its would-be victims are inside their min-runtime says so and when they become
// eligible; one that waits on a victim at the suspension cap is not told it will get one.
TEST(SchedulingPassTest, WaitOnMinRuntimeSaysWhenVictimsBecomeEligible) {
  Scenario s(1, 8);
  s.Running(Waiting(10, 2, 10, 0, GpuRequest(4)), 1 * kMinute);
  s.Running(Waiting(11, 2, 20, 0, GpuRequest(4)), 150 * kMicrosPerSecond);
  s.jobs.push_back(Waiting(1, 1, 90, 5, GpuRequest(8)));
  PassResult r = s.Pass();
  const JobDecision& d = DecisionFor(r, s.jobs, 1);
  EXPECT_EQ(d.kind, DecisionKind::kWait) << d.reason;
  EXPECT_NE(d.reason.find("; jobs 10, 11 (priority 10..20) are inside their min-runtime (10m): the first may be "
                          "suspended for this job in 8m, all in 9m"),
            std::string::npos)
      << d.reason;

  Scenario one(1, 8);
  one.Running(Waiting(10, 2, 10, 0, GpuRequest(8)), 10 * kMinute - 30 * kMicrosPerSecond);
  one.jobs.push_back(Waiting(1, 1, 90, 5, GpuRequest(8)));
  const PassResult r_one = one.Pass();
  const JobDecision& soon = DecisionFor(r_one, one.jobs, 1);
  EXPECT_NE(soon.reason.find("; job 10 (priority 10) is inside its min-runtime (10m): it may be suspended for this "
                             "job in 30s"),
            std::string::npos)
      << soon.reason;

  Scenario capped(1, 8);
  QueueJob low = Waiting(10, 2, 10, 0, GpuRequest(8));
  low.suspensions_last_hour = 3;
  capped.Running(low, 1 * kMinute);
  capped.jobs.push_back(Waiting(1, 1, 90, 5, GpuRequest(8)));
  const PassResult r_capped = capped.Pass();
  const JobDecision& never = DecisionFor(r_capped, capped.jobs, 1);
  EXPECT_EQ(never.reason.find("min-runtime"), std::string::npos) << never.reason;
}

TEST(SchedulingPassTest, GuaranteeRuleAtEqualPriority) {
  // y (no guarantee) fills the node at priority 50; z (under its guarantee) reclaims at
  // priority 50.
  Scenario s;
  s.Running(Waiting(10, 2, 50, 0, GpuRequest(8)), 60 * kMinute);
  s.jobs.push_back(Waiting(1, 3, 50, 5, GpuRequest(4)));
  PassResult r = s.Pass();
  const JobDecision& d = DecisionFor(r, s.jobs, 1);
  ASSERT_EQ(d.kind, DecisionKind::kPreempt) << d.reason;
  EXPECT_EQ(d.reason,
            "suspends job 10 (tenant y, priority 50): tenant z is within its guarantee and tenant "
            "y runs above its "
            "guarantee");
  // The other way round: y at equal priority may not suspend z's work.
  Scenario t;
  t.Running(Waiting(10, 3, 50, 0, GpuRequest(8)), 60 * kMinute);
  t.jobs.push_back(Waiting(1, 2, 50, 5, GpuRequest(4)));
  PassResult u = t.Pass();
  EXPECT_EQ(DecisionFor(u, t.jobs, 1).kind, DecisionKind::kWait);
  EXPECT_TRUE(u.suspensions.empty());
}

TEST(SchedulingPassTest, EqualPriorityWithoutGuaranteeWaits) {
  Scenario s;
  s.Running(Waiting(10, 2, 50, 0, GpuRequest(8)), 60 * kMinute);
  s.jobs.push_back(Waiting(1, 2, 50, 5, GpuRequest(4)));
  s.jobs.push_back(Waiting(2, 1, 50, 5, GpuRequest(8)));  // x: 8 GPUs would exceed its 4-GPU guarantee
  PassResult r = s.Pass();
  EXPECT_EQ(DecisionFor(r, s.jobs, 1).kind, DecisionKind::kWait);
  EXPECT_EQ(DecisionFor(r, s.jobs, 2).kind, DecisionKind::kWait);
  EXPECT_TRUE(r.suspensions.empty());
}

TEST(SchedulingPassTest, GangIsAllOrNothing) {
  Scenario s(2, 8);
  s.Running(Waiting(10, 2, 90, 0, GpuRequest(4)), 60 * kMinute);  // high: not a victim
  s.jobs.push_back(Waiting(1, 2, 50, 1, GpuRequest(8), 2));       // needs both whole nodes
  s.jobs.push_back(Waiting(2, 2, 50, 2, GpuRequest(8)));          // fits on node 1
  PassResult r = s.Pass();
  const JobDecision& gang = DecisionFor(r, s.jobs, 1);
  EXPECT_EQ(gang.kind, DecisionKind::kWait);
  EXPECT_TRUE(gang.allocations.empty());
  EXPECT_EQ(DecisionFor(r, s.jobs, 2).kind, DecisionKind::kPlace);
  EXPECT_EQ(s.state.totals().device_compute_allocated_milli, 12000);  // the gang holds nothing
}

TEST(SchedulingPassTest, BadInputIsRejectedOthersStillSchedule) {
  Scenario s;
  s.jobs.push_back(Waiting(1, 1, 150, 0, GpuRequest(1)));
  s.jobs.push_back(Waiting(2, 77, 50, 0, GpuRequest(1)));
  TaskRequest nothing;
  s.jobs.push_back(Waiting(3, 1, 50, 0, nothing));
  s.jobs.push_back(Waiting(4, 1, 50, 0, GpuRequest(16)));
  s.jobs.push_back(Waiting(5, 1, 50, 0, GpuRequest(1)));
  PassResult r = s.Pass();
  ExpectDecisions(r, s.jobs,
                  {
                      {1, DecisionKind::kRejected, "priority 150 is out of range 0..100"},
                      {2, DecisionKind::kRejected, "unknown tenant 77"},
                      {3, DecisionKind::kRejected, "asks for nothing"},
                      {4, DecisionKind::kNeverFits, "no node is large enough"},
                      {5, DecisionKind::kPlace, "placed"},
                  });
  EXPECT_EQ(r.stats.rejected, 3);
}

// Requests are validated once per shape: each job still gets its own answer, in ValidateQueueJob's order, and a
// shape first met on a job rejected for something else still serves the valid jobs of that shape.
TEST(SchedulingPassTest, EachJobIsJudgedByItselfThoughShapesAreCheckedOnce) {
  Scenario s;
  TaskRequest nothing;
  s.jobs.push_back(Waiting(1, 1, 50, 0, nothing));
  s.jobs.push_back(Waiting(2, 2, 50, 0, nothing));
  s.jobs.push_back(Waiting(3, 1, 150, 0, nothing));
  s.jobs.push_back(Waiting(4, 1, 150, 0, GpuRequest(1)));
  s.jobs.push_back(Waiting(5, 1, 50, 0, GpuRequest(1)));
  s.jobs.push_back(Waiting(6, 77, 50, 0, GpuRequest(2)));
  s.jobs.push_back(Waiting(7, 2, 50, 0, GpuRequest(2)));
  s.jobs.push_back(Waiting(8, 1, 50, 0, GpuRequest(3), /*replicas=*/0));
  s.jobs.push_back(Waiting(9, 1, 50, 0, GpuRequest(3)));
  PassResult r = s.Pass();
  ExpectDecisions(r, s.jobs,
                  {
                      {1, DecisionKind::kRejected, "job 1: the request asks for nothing"},
                      {2, DecisionKind::kRejected, "job 2: the request asks for nothing"},
                      {3, DecisionKind::kRejected, "job 3: priority 150 is out of range"},
                      {4, DecisionKind::kRejected, "job 4: priority 150 is out of range"},
                      {5, DecisionKind::kPlace, "placed"},
                      {6, DecisionKind::kRejected, "unknown tenant 77"},
                      {7, DecisionKind::kPlace, "placed"},
                      {8, DecisionKind::kRejected, "job 8: replicas must be at least 1"},
                      {9, DecisionKind::kPlace, "placed"},
                  });
  EXPECT_EQ(s.state.totals().device_compute_allocated_milli, 6000);
}

TEST(SchedulingPassTest, RemembersUnfitShapesWithinAPass) {
  Scenario s;
  for (int i = 0; i < 100; ++i) s.jobs.push_back(Waiting(1 + i, 2, 50, i, GpuRequest(1)));
  PassResult r = s.Pass();
  EXPECT_EQ(r.stats.placed, 8);
  EXPECT_EQ(r.stats.waiting, 92);
  EXPECT_EQ(r.stats.placer_calls, 9);  // 8 placements, then one "no room" answer reused 91 times
  EXPECT_EQ(s.placer.calls, 9);
}

TEST(SchedulingPassTest, RoomLeftByAVictimServesTheNextJob) {
  Scenario s;
  s.Running(Waiting(10, 2, 10, 0, GpuRequest(8)), 60 * kMinute);
  s.jobs.push_back(Waiting(1, 1, 90, 1, GpuRequest(4)));
  s.jobs.push_back(Waiting(2, 1, 90, 2, GpuRequest(4)));
  PassResult r = s.Pass();
  EXPECT_EQ(DecisionFor(r, s.jobs, 1).kind, DecisionKind::kPreempt);
  EXPECT_EQ(DecisionFor(r, s.jobs, 2).kind, DecisionKind::kPlace);  // no second suspension needed
  EXPECT_EQ(r.suspensions.size(), 1u);
}

TEST(SchedulingPassTest, VictimSearchBudgetDefersTheRest) {
  Scenario s(2, 8);
  s.Running(Waiting(10, 2, 10, 0, GpuRequest(8)), 60 * kMinute);
  s.Running(Waiting(11, 2, 10, 0, GpuRequest(8)), 60 * kMinute);
  s.jobs.push_back(Waiting(1, 1, 90, 1, GpuRequest(8)));
  s.jobs.push_back(Waiting(2, 1, 80, 2, GpuRequest(8)));
  PassOptions options;
  options.max_victim_searches = 1;
  PassResult r = s.Pass(options);
  EXPECT_EQ(DecisionFor(r, s.jobs, 1).kind,
            DecisionKind::kPreempt);  // the head of the queue goes first
  const JobDecision& later = DecisionFor(r, s.jobs, 2);
  EXPECT_EQ(later.kind, DecisionKind::kWait);
  EXPECT_NE(later.reason.find("preemption deferred to the next pass"), std::string::npos) << later.reason;
  EXPECT_EQ(r.stats.victim_searches, 1);
}

TEST(SchedulingPassTest, LargerPlainRequestsAreKnownNotToFit) {
  Scenario s;
  s.Running(Waiting(10, 2, 90, 0, GpuRequest(7)), 60 * kMinute);  // 1 GPU left
  s.jobs.push_back(Waiting(1, 2, 50, 1, GpuRequest(2)));          // asked: does not fit
  s.jobs.push_back(Waiting(2, 2, 50, 2, GpuRequest(4)));          // larger: answered from the first
  s.jobs.push_back(Waiting(3, 2, 50, 3, GpuRequest(1)));          // smaller: asked, fits
  PassResult r = s.Pass();
  EXPECT_EQ(DecisionFor(r, s.jobs, 1).kind, DecisionKind::kWait);
  EXPECT_EQ(DecisionFor(r, s.jobs, 2).kind, DecisionKind::kWait);
  EXPECT_EQ(DecisionFor(r, s.jobs, 3).kind, DecisionKind::kPlace);
  EXPECT_EQ(r.stats.placer_calls, 2);
}

TEST(SchedulingPassTest, UnfitShapeIsAskedAgainWhereAVictimLeftRoom) {
  // Node 0: y's 6-GPU job and x's 2-GPU job; node 1: z's 8-GPU job. All at priority 10 or above;
  // z's share is the highest, so y's job 1 comes first at priority 10, does not fit and may not
  // preempt (equal priority). z's job 2 reclaims its guarantee by suspending y's 6-GPU job and
  // takes 4 GPUs: y's job 3 (priority 5: considered last), the same shape as job 1, is asked again
  // because node 0 gained room, and fits.
  Scenario s(2, 8);
  s.Running(Waiting(10, 2, 10, 0, GpuRequest(6)), 60 * kMinute);
  s.Running(Waiting(11, 1, 90, 0, GpuRequest(2)), 60 * kMinute);
  s.Running(Waiting(12, 3, 90, 0, GpuRequest(8)), 60 * kMinute);
  s.jobs.push_back(Waiting(1, 2, 10, 1, GpuRequest(2)));
  s.jobs.push_back(Waiting(2, 3, 10, 2, GpuRequest(4)));
  s.jobs.push_back(Waiting(3, 2, 5, 3, GpuRequest(2)));
  PassResult r = s.Pass();
  EXPECT_EQ(DecisionFor(r, s.jobs, 1).kind, DecisionKind::kWait);
  EXPECT_EQ(DecisionFor(r, s.jobs, 2).kind, DecisionKind::kPreempt);
  EXPECT_EQ(DecisionFor(r, s.jobs, 3).kind, DecisionKind::kPlace);
  EXPECT_EQ(r.stats.placer_calls,
            2);  // job 2: answered by job 1's failure (a larger plain request)
  EXPECT_TRUE(s.state.CheckInvariants().ok());
}

// Property over seeded random passes: the cluster is never over-allocated, a job is suspended at
// most once and only for a job of higher priority (or equal, by the guarantee rule), every
// suspension has a preemptor that was decided kPreempt, and no tenant is taken past a limit by new
// work.
TEST(SchedulingPassPropertyTest, RandomPassesKeepTheRules) {
  std::mt19937_64 rng(7);
  int suspensions = 0;
  for (int round = 0; round < 60; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    Scenario s(1 + static_cast<int>(rng() % 4), 8);
    std::vector<Tenant> tenants = Tenants();
    tenants[1].limit.gpu_compute_milli = 12000;
    const int n = 20 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      QueueJob j = Waiting(1 + i, 1 + static_cast<int64_t>(rng() % 3), static_cast<int>(rng() % 101),
                           static_cast<TimeMicros>(rng() % 1000),
                           GpuRequest(std::vector<int>{1, 1, 2, 4, 8}[rng() % 5], 250 * (1 + rng() % 4)),
                           1 + static_cast<int>(rng() % 2));
      if (rng() % 2 == 0 && StartJob(s.state, s.placer, j, kNow - static_cast<TimeMicros>(rng() % 60) * kMinute)) {
        j.suspensions_last_hour = static_cast<int>(rng() % 4);
      }
      s.jobs.push_back(std::move(j));
    }
    TenantLedger before(tenants);
    for (const QueueJob& j : s.jobs) {
      if (j.state == QueueJobState::kRunning) before.Add(before.IndexOf(j.tenant), j.priority, HeldBy(j));
    }
    PassResult r = RunSchedulingPass(s.jobs, tenants, s.state, s.placer, kNow);
    ASSERT_TRUE(s.state.CheckInvariants().ok());
    std::set<int> suspended;
    std::map<int, DecisionKind> kind;
    for (const JobDecision& d : r.decisions) kind[d.job] = d.kind;
    for (const SuspendDecision& sd : r.suspensions) {
      ++suspensions;
      EXPECT_TRUE(suspended.insert(sd.job).second) << "suspended twice";
      const QueueJob& victim = s.jobs[sd.job];
      const QueueJob& preemptor = s.jobs[sd.for_job];
      EXPECT_EQ(victim.state, QueueJobState::kRunning);
      EXPECT_EQ(kind[sd.for_job], DecisionKind::kPreempt);
      EXPECT_LE(victim.priority, preemptor.priority);
      if (victim.priority == preemptor.priority) {
        EXPECT_NE(victim.tenant, preemptor.tenant);
        EXPECT_TRUE(before.AboveGuarantee(before.IndexOf(victim.tenant)));
      }
      EXPECT_GE(kNow - victim.last_start, PreemptionRules().min_runtime);
    }
    // Tenant y's limit is never passed by new work: once it places anything its final use is within
    // the limit (running work may have started above it; suspensions only lower it).
    int64_t y_final = before.usage(1).gpu_compute_milli;
    bool y_placed = false;
    for (const JobDecision& d : r.decisions) {
      if (s.jobs[d.job].tenant != TenantId(2) || d.allocations.empty()) continue;
      y_final += AmountsOf(d.allocations).gpu_compute_milli;
      y_placed = true;
    }
    for (const SuspendDecision& sd : r.suspensions) {
      if (s.jobs[sd.job].tenant == TenantId(2)) y_final -= HeldBy(s.jobs[sd.job]).gpu_compute_milli;
    }
    if (y_placed) {
      EXPECT_LE(y_final, 12000);
    }
  }
  EXPECT_GT(suspensions, 5);  // exercised
}

}  // namespace
}  // namespace xpool
