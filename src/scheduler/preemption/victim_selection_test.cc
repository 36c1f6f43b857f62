#include "scheduler/preemption/victim_selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "scheduler/queue/internal/test_support.h"

namespace xpool {
namespace {

using testing_support::FirstFitPlacer;
using testing_support::GpuRequest;
using testing_support::MakeCluster;
using testing_support::MakeTenant;
using testing_support::Waiting;

constexpr TimeMicros kMinute = 60 * kMicrosPerSecond;
constexpr TimeMicros kNow = 1000 * kMinute;

TEST(JudgeVictimTest, EachRule) {
  const QueueJob preemptor = Waiting(1, 1, 50, 0, GpuRequest(1));
  auto running = [](int priority, TimeMicros ran_for, int64_t tenant = 2) {
    QueueJob j = Waiting(2, tenant, priority, 0, GpuRequest(1));
    j.state = QueueJobState::kRunning;
    j.last_start = kNow - ran_for;
    return j;
  };
  struct Row {
    std::string name;
    QueueJob victim;
    bool preemptor_within;
    bool victim_above;
    VictimVerdict want;
  };
  QueueJob not_preemptible = running(10, 60 * kMinute);
  not_preemptible.preemptible = false;
  QueueJob capped = running(10, 60 * kMinute);
  capped.suspensions_last_hour = 3;
  QueueJob below_cap = running(10, 60 * kMinute);
  below_cap.suspensions_last_hour = 2;
  QueueJob pending = running(10, 60 * kMinute);
  pending.state = QueueJobState::kSuspended;
  QueueJob itself = running(10, 60 * kMinute);
  itself.id = preemptor.id;
  const Row rows[] = {
      {"lower priority", running(10, 60 * kMinute), false, false, VictimVerdict::kByPriority},
      {"one below", running(49, 60 * kMinute), false, false, VictimVerdict::kByPriority},
      {"equal priority", running(50, 60 * kMinute), false, true, VictimVerdict::kNotLowerPriority},
      {"higher priority", running(90, 60 * kMinute), true, true, VictimVerdict::kNotLowerPriority},
      {"equal priority, guarantee rule", running(50, 60 * kMinute), true, true, VictimVerdict::kByGuarantee},
      {"guarantee rule needs the victim above", running(50, 60 * kMinute), true, false,
       VictimVerdict::kNotLowerPriority},
      {"guarantee rule never within a tenant", running(50, 60 * kMinute, 1), true, true,
       VictimVerdict::kNotLowerPriority},
      {"guarantee rule never for higher priority", running(51, 60 * kMinute), true, true,
       VictimVerdict::kNotLowerPriority},
      {"not preemptible", not_preemptible, false, false, VictimVerdict::kNotPreemptible},
      {"started 9 minutes ago", running(10, 9 * kMinute), false, false, VictimVerdict::kTooYoung},
      {"started exactly min-runtime ago", running(10, 10 * kMinute), false, false, VictimVerdict::kByPriority},
      {"at the suspension cap", capped, false, false, VictimVerdict::kSuspendedTooOften},
      {"below the suspension cap", below_cap, false, false, VictimVerdict::kByPriority},
      {"not running", pending, false, false, VictimVerdict::kNotRunning},
      {"itself", itself, false, false, VictimVerdict::kSameJob},
  };
  const PreemptionRules rules;  // 10 minutes, 3 per hour
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(VictimVerdictName(JudgeVictim(preemptor, r.preemptor_within, r.victim, r.victim_above, rules, kNow)),
              VictimVerdictName(r.want));
  }
  PreemptionRules lax;
  lax.min_runtime = 0;
  EXPECT_EQ(JudgeVictim(preemptor, false, running(10, 0), false, lax, kNow), VictimVerdict::kByPriority);
}

// A small world: running jobs placed first-fit in the order given, then one preemptor.
struct World {
  ClusterState state;
  std::vector<Tenant> tenants;
  std::vector<QueueJob> jobs;
  FirstFitPlacer placer;

  World(int nodes, int gpus, std::vector<Tenant> t) : state(MakeCluster(nodes, gpus)), tenants(std::move(t)) {}

  void Run(int64_t id, int64_t tenant, int priority, int gpus, TimeMicros ran_for, int replicas = 1) {
    QueueJob j = Waiting(id, tenant, priority, 0, GpuRequest(gpus), replicas);
    ASSERT_TRUE(testing_support::StartJob(state, placer, j, kNow - ran_for)) << "job " << id;
    jobs.push_back(std::move(j));
  }
  // Victim ids chosen for `preemptor` (empty when none), checking that the state is left as found.
  std::vector<int64_t> Victims(const QueueJob& preemptor, std::string* reason = nullptr) {
    TenantLedger ledger(tenants);
    std::vector<int> running;
    std::vector<int> tenant_of;
    for (int i = 0; i < static_cast<int>(jobs.size()); ++i) {
      tenant_of.push_back(ledger.IndexOf(jobs[i].tenant));
      ledger.Add(tenant_of.back(), jobs[i].priority, HeldBy(jobs[i]));
      running.push_back(i);
    }
    const int pt = ledger.IndexOf(preemptor.tenant);
    const bool within = ledger.WithinGuarantee(pt, DemandOf(preemptor, 81920));
    const PreemptionRules rules;
    std::vector<int> ranked = RankVictims(jobs, SortRunningForPreemption(jobs, running, kNow), tenant_of, {}, preemptor,
                                          within, ledger, rules, kNow);
    const ClusterTotals before = state.totals();
    Result<VictimChoice> choice = ChooseVictims(state, jobs, ranked, preemptor, placer);
    EXPECT_TRUE(choice.ok()) << choice.status().ToString();
    EXPECT_EQ(state.totals().device_compute_allocated_milli, before.device_compute_allocated_milli);
    EXPECT_EQ(state.totals().cpu_allocated_milli, before.cpu_allocated_milli);
    std::vector<int64_t> ids;
    if (!choice.ok()) return ids;
    if (reason != nullptr) *reason = choice->reason;
    for (int v : choice->victims) ids.push_back(jobs[v].id.value());
    std::sort(ids.begin(), ids.end());
    return ids;
  }
};

std::vector<Tenant> ThreeTenants() { return {MakeTenant(1, "x", 4000), MakeTenant(2, "y"), MakeTenant(3, "z", 16000)}; }

TEST(ChooseVictimsTest, LowerPriorityFirst) {
  World w(1, 8, ThreeTenants());
  w.Run(10, 2, 30, 4, 60 * kMinute);
  w.Run(11, 2, 10, 4, 60 * kMinute);
  EXPECT_EQ(w.Victims(Waiting(1, 2, 50, 0, GpuRequest(4))), (std::vector<int64_t>{11}));
}

TEST(ChooseVictimsTest, TenantsAboveGuaranteeFirstAtEqualPriority) {
  World w(1, 8, ThreeTenants());
  w.Run(10, 1, 10, 4, 60 * kMinute);  // x: 4000 of its 4000 guarantee: not above
  w.Run(11, 2, 10, 4, 90 * kMinute);  // y: no guarantee: above, though more work would be lost
  EXPECT_EQ(w.Victims(Waiting(1, 3, 50, 0, GpuRequest(4))), (std::vector<int64_t>{11}));
}

TEST(ChooseVictimsTest, LeastWorkLostFirst) {
  World w(1, 8, ThreeTenants());
  w.Run(10, 2, 10, 4, 60 * kMinute);
  w.Run(11, 2, 10, 4, 20 * kMinute);
  EXPECT_EQ(w.Victims(Waiting(1, 2, 50, 0, GpuRequest(4))), (std::vector<int64_t>{11}));
}

TEST(ChooseVictimsTest, StopsAtTheFewestThatMakeRoom) {
  World w(2, 8, ThreeTenants());
  w.Run(10, 2, 10, 4, 30 * kMinute);
  w.Run(11, 2, 10, 4, 40 * kMinute);
  for (int i = 0; i < 8; ++i) w.Run(20 + i, 2, 10, 1, 120 * kMinute);
  EXPECT_EQ(w.Victims(Waiting(1, 2, 50, 0, GpuRequest(4))), (std::vector<int64_t>{10}));
}

TEST(ChooseVictimsTest, OneNodeForOneReplica) {
  // Node 0: 10 (1 GPU, low, least work lost) + 11 (7 GPUs, high). Node 1: 12 (4 GPUs, low) + 13 (4,
  // high).
  World w(2, 8, ThreeTenants());
  w.Run(10, 2, 10, 1, 15 * kMinute);
  w.Run(11, 2, 60, 7, 60 * kMinute);
  w.Run(12, 2, 10, 4, 20 * kMinute);
  w.Run(13, 2, 60, 4, 60 * kMinute);
  // Freeing 10 alone does not make 4 GPUs on one node; 10 and 12 do, and then 10 is not needed.
  EXPECT_EQ(w.Victims(Waiting(1, 2, 50, 0, GpuRequest(4))), (std::vector<int64_t>{12}));
}

TEST(ChooseVictimsTest, GangAcrossNodes) {
  World w(3, 8, ThreeTenants());
  w.Run(10, 2, 10, 8, 30 * kMinute);
  w.Run(11, 2, 10, 8, 40 * kMinute);
  w.Run(12, 2, 10, 8, 50 * kMinute);
  EXPECT_EQ(w.Victims(Waiting(1, 2, 50, 0, GpuRequest(8), 2)), (std::vector<int64_t>{10, 11}));
  // A running gang is a victim as a whole: both its replicas leave.
  World g(2, 8, ThreeTenants());
  g.Run(20, 2, 10, 4, 30 * kMinute, 2);  // 2 × 4 GPUs on node 0
  g.Run(21, 2, 60, 4, 30 * kMinute);
  g.Run(22, 2, 60, 4, 30 * kMinute);
  EXPECT_EQ(g.Victims(Waiting(1, 2, 50, 0, GpuRequest(8))), (std::vector<int64_t>{20}));
}

TEST(ChooseVictimsTest, NeverEqualOrHigherPriorityWithoutTheGuarantee) {
  World w(1, 8, ThreeTenants());
  w.Run(10, 2, 50, 4, 60 * kMinute);
  w.Run(11, 2, 90, 4, 60 * kMinute);
  std::string reason;
  EXPECT_TRUE(w.Victims(Waiting(1, 2, 50, 0, GpuRequest(4)), &reason).empty());
  EXPECT_EQ(reason, "no running job may be suspended for it");
  // Tenant z (16 GPUs guaranteed, using none) reclaims from y (no guarantee) at equal priority, not
  // at lower.
  EXPECT_EQ(w.Victims(Waiting(2, 3, 50, 0, GpuRequest(4))), (std::vector<int64_t>{10}));
  EXPECT_TRUE(w.Victims(Waiting(3, 3, 40, 0, GpuRequest(4))).empty());
}

TEST(ChooseVictimsTest, NotEnoughEvenWithEveryCandidate) {
  World w(1, 8, ThreeTenants());
  w.Run(10, 2, 10, 4, 60 * kMinute);
  w.Run(11, 2, 90, 4, 60 * kMinute);
  std::string reason;
  EXPECT_TRUE(w.Victims(Waiting(1, 2, 50, 0, GpuRequest(8)), &reason).empty());
  EXPECT_EQ(reason, "suspending every job that may be suspended for it (1) would not make room");
}

// Property: over random clusters and workloads, a chosen victim is never of equal or higher
// priority (except by the guarantee rule, and then of equal priority from another tenant above its
// guarantee), never too young or over the cap, and once the victims are released the preemptor's
// allocations apply.
// Rule 2 written out plainly (the ranking before it was computed on demand): what RankVictims and
// VictimRanking must both give.
std::vector<int> ReferenceRanking(const std::vector<QueueJob>& jobs, const std::vector<int>& by_order,
                                  const std::vector<int>& tenant_of, const QueueJob& preemptor, bool within,
                                  const TenantLedger& ledger, const PreemptionRules& rules) {
  std::vector<ResourceAmounts> remaining;
  for (int t = 0; t < ledger.size(); ++t) remaining.push_back(ledger.usage(t));
  std::vector<int> ranked;
  for (size_t group = 0; group < by_order.size();) {
    const int priority = jobs[by_order[group]].priority;
    if (priority > preemptor.priority) break;
    size_t end = group;
    while (end < by_order.size() && jobs[by_order[end]].priority == priority) ++end;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t k = group; k < end; ++k) {
        const int v = by_order[k];
        const int t = tenant_of[v];
        if (t < 0 || ledger.AboveGuarantee(t) != (pass == 0)) continue;
        const ResourceAmounts& u = remaining[t];
        const ResourceAmounts& g = ledger.tenant(t).guaranteed;
        const bool still_above = u.gpu_compute_milli > g.gpu_compute_milli || u.gpu_memory_mib > g.gpu_memory_mib ||
                                 u.cpu_milli > g.cpu_milli;
        if (!IsVictim(JudgeVictim(preemptor, within, jobs[v], still_above, rules, kNow))) continue;
        remaining[t].Subtract(HeldBy(jobs[v]));
        ranked.push_back(v);
      }
    }
    group = end;
  }
  return ranked;
}

TEST(ChooseVictimsPropertyTest, VictimsAreAllowedAndMakeRoom) {
  std::mt19937_64 rng(20261130);
  int searches_with_victims = 0;
  for (int round = 0; round < 150; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int nodes = 1 + static_cast<int>(rng() % 4);
    World w(nodes, 8, {MakeTenant(1, "x", 8000), MakeTenant(2, "y"), MakeTenant(3, "z", 4000)});
    const int running = static_cast<int>(rng() % (nodes * 8 + 1));
    for (int i = 0; i < running; ++i) {
      const int gpus = std::vector<int>{1, 1, 2, 4, 8}[rng() % 5];
      const int64_t compute = (rng() % 3 == 0) ? 1000 : 250 * (1 + static_cast<int64_t>(rng() % 3));
      QueueJob j = Waiting(100 + i, 1 + static_cast<int64_t>(rng() % 3), static_cast<int>(rng() % 101), 0,
                           GpuRequest(gpus, compute), 1 + static_cast<int>(rng() % 2));
      j.preemptible = rng() % 8 != 0;
      j.suspensions_last_hour = static_cast<int>(rng() % 5);
      if (testing_support::StartJob(w.state, w.placer, j, kNow - static_cast<TimeMicros>(rng() % 120) * kMinute)) {
        w.jobs.push_back(std::move(j));
      }
    }
    const QueueJob preemptor = Waiting(1, 1 + static_cast<int64_t>(rng() % 3), static_cast<int>(rng() % 101), 0,
                                       GpuRequest(std::vector<int>{1, 2, 4, 8}[rng() % 4], 500 + 500 * (rng() % 2)),
                                       1 + static_cast<int>(rng() % 2));
    if (w.placer.Place(w.state, preemptor.request, preemptor.replicas).kind == OutcomeKind::kPlaced) continue;

    TenantLedger ledger(w.tenants);
    std::vector<int> all;
    std::vector<int> tenant_of;
    for (int i = 0; i < static_cast<int>(w.jobs.size()); ++i) {
      tenant_of.push_back(ledger.IndexOf(w.jobs[i].tenant));
      ledger.Add(tenant_of.back(), w.jobs[i].priority, HeldBy(w.jobs[i]));
      all.push_back(i);
    }
    const bool within = ledger.WithinGuarantee(ledger.IndexOf(preemptor.tenant), DemandOf(preemptor, 81920));
    const PreemptionRules rules;
    std::vector<int> ranked = RankVictims(w.jobs, SortRunningForPreemption(w.jobs, all, kNow), tenant_of, {}, preemptor,
                                          within, ledger, rules, kNow);
    Result<VictimChoice> choice = ChooseVictims(w.state, w.jobs, ranked, preemptor, w.placer);
    ASSERT_TRUE(choice.ok()) << choice.status().ToString();
    ASSERT_TRUE(w.state.CheckInvariants().ok());
    {  // ranked on demand (VictimRanking holds references: named arguments only)
      const std::vector<int> by_order = SortRunningForPreemption(w.jobs, all, kNow);
      const std::vector<bool> none;
      VictimRanking steps(w.jobs, by_order, tenant_of, none, preemptor, within, ledger, rules, kNow);
      for (size_t k = 0; k <= ranked.size() + 1; ++k) {
        ASSERT_EQ(steps.RankUntil(k), std::min(k, ranked.size()));
      }
      EXPECT_EQ(steps.ranked(), ranked);
      EXPECT_EQ(ranked, ReferenceRanking(w.jobs, by_order, tenant_of, preemptor, within, ledger, rules));
      VictimRanking lazy(w.jobs, by_order, tenant_of, none, preemptor, within, ledger, rules, kNow);
      Result<VictimChoice> same = ChooseVictims(w.state, w.jobs, lazy, preemptor, w.placer);
      ASSERT_TRUE(same.ok()) << same.status().ToString();
      ASSERT_TRUE(w.state.CheckInvariants().ok());
      EXPECT_EQ(same->found, choice->found);
      EXPECT_EQ(same->victims, choice->victims);
      ASSERT_EQ(same->allocations.size(), choice->allocations.size());
      for (size_t a = 0; a < same->allocations.size(); ++a) {
        EXPECT_EQ(same->allocations[a].node, choice->allocations[a].node);
        EXPECT_EQ(same->allocations[a].devices.size(), choice->allocations[a].devices.size());
      }
      EXPECT_EQ(same->reason, choice->reason);
      EXPECT_LE(lazy.ranked().size(), ranked.size());
    }
    if (!choice->found) continue;
    ++searches_with_victims;
    ASSERT_FALSE(choice->victims.empty());
    ClusterState after = w.state;
    for (int v : choice->victims) {
      const QueueJob& victim = w.jobs[v];
      EXPECT_LE(victim.priority, preemptor.priority);
      if (victim.priority == preemptor.priority) {
        EXPECT_TRUE(within);
        EXPECT_NE(victim.tenant, preemptor.tenant);
        EXPECT_TRUE(ledger.AboveGuarantee(tenant_of[v]));
      }
      EXPECT_TRUE(victim.preemptible);
      EXPECT_GE(kNow - victim.last_start, rules.min_runtime);
      EXPECT_LT(victim.suspensions_last_hour, rules.max_suspensions_per_hour);
      for (const Allocation& a : victim.allocations) ASSERT_TRUE(after.Release(a).ok());
    }
    ASSERT_EQ(static_cast<int>(choice->allocations.size()), preemptor.replicas);
    for (const Allocation& a : choice->allocations) ASSERT_TRUE(after.Apply(a).ok());
    EXPECT_TRUE(after.CheckInvariants().ok());
  }
  EXPECT_GT(searches_with_victims, 20);  // the property was exercised, not vacuous
}

}  // namespace
}  // namespace xpool
