#include "scheduler/queue/queue_order.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "scheduler/queue/internal/test_support.h"
#include "scheduler/queue/scheduling_pass.h"

namespace xpool {
namespace {

using testing_support::FirstFitPlacer;
using testing_support::GpuRequest;
using testing_support::MakeCluster;
using testing_support::MakeTenant;
using testing_support::StartJob;
using testing_support::Waiting;

std::vector<int64_t> Ids(const std::vector<QueueJob>& jobs, const std::vector<int>& order) {
  std::vector<int64_t> ids;
  for (int i : order) ids.push_back(jobs[i].id.value());
  return ids;
}

// Table of static orders: priority first, then dominant share, then first submit, then id.
TEST(OrderQueueTest, PriorityThenShareThenFirstSubmit) {
  ClusterState state = MakeCluster(1, 8);  // 8000 milli GPU compute
  FirstFitPlacer placer;
  std::vector<Tenant> tenants = {MakeTenant(1, "a"), MakeTenant(2, "b")};
  struct Row {
    std::string name;
    std::vector<QueueJob> jobs;
    std::vector<int64_t> want;
  };
  std::vector<Row> rows;
  rows.push_back({"priority beats submit time",
                  {Waiting(1, 1, 10, 100, GpuRequest(1)), Waiting(2, 1, 90, 500, GpuRequest(1)),
                   Waiting(3, 1, 50, 300, GpuRequest(1))},
                  {2, 3, 1}});
  rows.push_back({"same tenant: first submit, then id",
                  {Waiting(5, 1, 50, 300, GpuRequest(1)), Waiting(4, 1, 50, 200, GpuRequest(1)),
                   Waiting(6, 1, 50, 200, GpuRequest(1))},
                  {4, 6, 5}});
  // Tenant a runs 4 GPUs (share 1/2); b runs nothing: b's later job goes before a's earlier one.
  QueueJob running = Waiting(7, 1, 50, 0, GpuRequest(4));
  ASSERT_TRUE(StartJob(state, placer, running, 0));
  rows.push_back({"lower dominant share first at equal priority",
                  {running, Waiting(8, 1, 50, 100, GpuRequest(1)), Waiting(9, 2, 50, 900, GpuRequest(1)),
                   Waiting(10, 1, 90, 950, GpuRequest(1))},
                  {10, 9, 8}});
  QueueJob suspended = Waiting(11, 1, 50, 50, GpuRequest(1));
  suspended.state = QueueJobState::kSuspended;
  rows.push_back(
      {"a suspended job keeps its first submit time", {Waiting(12, 2, 50, 60, GpuRequest(1)), suspended}, {11, 12}});
  QueueJob bad_priority = Waiting(13, 1, 101, 0, GpuRequest(1));
  rows.push_back({"bad input is left out",
                  {bad_priority, Waiting(14, 77, 50, 0, GpuRequest(1)), Waiting(15, 2, 50, 0, GpuRequest(1))},
                  {15}});
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(Ids(r.jobs, OrderQueue(r.jobs, tenants, state.totals())), r.want);
  }
}

TEST(DominantShareTest, MaxOverResourcesInPartsPerBillion) {
  std::vector<Tenant> tenants = {MakeTenant(1, "a")};
  TenantLedger ledger(tenants);
  ClusterTotals totals;
  totals.device_compute_capacity_milli = 8000;
  totals.device_memory_capacity_mib = 8 * 81920;
  totals.cpu_capacity_milli = 64000;
  EXPECT_EQ(ledger.DominantSharePpb(0, totals), 0);
  ledger.Add(0, 50, {2000, 81920, 48000, 1});  // GPU 1/4, memory 1/8, CPU 3/4 → CPU dominates
  EXPECT_EQ(ledger.DominantSharePpb(0, totals), 750'000'000);
  ledger.Remove(0, 50, {0, 0, 40000, 0});  // CPU now 1/8: GPU compute dominates
  EXPECT_EQ(ledger.DominantSharePpb(0, totals), 250'000'000);
  totals.cpu_capacity_milli = 0;  // a resource the cluster has none of does not count
  EXPECT_EQ(ledger.DominantSharePpb(0, totals), 250'000'000);
}

// In a pass, equal tenants take turns (progressive filling) instead of one backlog going first.
TEST(DrfQueueTest, TenantsTakeTurnsWithinAPass) {
  ClusterState state = MakeCluster(1, 8);
  FirstFitPlacer placer;
  std::vector<Tenant> tenants = {MakeTenant(1, "a"), MakeTenant(2, "b")};
  std::vector<QueueJob> jobs;
  for (int i = 0; i < 6; ++i) jobs.push_back(Waiting(1 + i, 1, 50, i, GpuRequest(1)));          // a: early
  for (int i = 0; i < 6; ++i) jobs.push_back(Waiting(101 + i, 2, 50, 100 + i, GpuRequest(1)));  // b: late
  PassResult r = RunSchedulingPass(jobs, tenants, state, placer, 1000);
  std::vector<int64_t> placed;
  for (const JobDecision& d : r.decisions) {
    if (d.kind == DecisionKind::kPlace) placed.push_back(jobs[d.job].id.value());
  }
  EXPECT_EQ(placed, (std::vector<int64_t>{1, 101, 2, 102, 3, 103, 4, 104}));
  EXPECT_EQ(r.stats.placed, 8);
  EXPECT_EQ(r.stats.waiting, 4);
}

// DrfQueue against a straightforward reference on seeded random queues: at each step, among the
// waiting jobs of the highest priority left, the tenant with the lowest dominant share as it is
// now, then the earliest (first submit, id) head, gives its earliest job. Between steps the tenant
// just served sometimes gains usage (as a placement books it), which changes its share.
TEST(DrfQueueTest, MatchesAReferenceOnRandomQueues) {
  std::mt19937_64 rng(17);
  ClusterTotals totals;
  totals.device_compute_capacity_milli = 64000;
  totals.device_memory_capacity_mib = 64 * 81920;
  totals.cpu_capacity_milli = 512000;
  for (int round = 0; round < 40; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int tenant_count = 1 + static_cast<int>(rng() % 12);
    std::vector<Tenant> tenants;
    for (int t = 0; t < tenant_count; ++t) tenants.push_back(MakeTenant(1 + t, "t" + std::to_string(t)));
    TenantLedger ledger(tenants);
    std::vector<QueueJob> jobs;
    std::vector<int> tenant_of;
    std::vector<int> waiting;
    const int n = 1 + static_cast<int>(rng() % 300);
    const int priorities[] = {0, 10, 50, 50, 90, 100};
    for (int i = 0; i < n; ++i) {
      const int t = static_cast<int>(rng() % tenant_count);
      // Ids unique but not in submit order; submits often tie.
      jobs.push_back(
          Waiting(1000 - i, 1 + t, priorities[rng() % 6], static_cast<TimeMicros>(rng() % 20), GpuRequest(1)));
      tenant_of.push_back(t);
      if (rng() % 5 != 0) waiting.push_back(i);
    }
    for (int t = 0; t < tenant_count; ++t) {
      ledger.Add(t, 50,
                 {static_cast<int64_t>(rng() % 8) * 1000, static_cast<int64_t>(rng() % 8) * 81920,
                  static_cast<int64_t>(rng() % 64) * 1000, 1});
    }
    DrfQueue queue(jobs, waiting, tenant_of, ledger, totals);
    std::vector<bool> done(jobs.size(), true);
    for (int i : waiting) done[i] = false;
    for (size_t step = 0; step < waiting.size(); ++step) {
      int best = -1;
      auto key = [&](int i) {
        return std::make_tuple(-jobs[i].priority, ledger.DominantSharePpb(tenant_of[i], totals), jobs[i].first_submit,
                               jobs[i].id.value());
      };
      for (size_t i = 0; i < jobs.size(); ++i) {
        if (!done[i] && (best < 0 || key(static_cast<int>(i)) < key(best))) best = static_cast<int>(i);
      }
      const int got = queue.Next();
      ASSERT_EQ(got, best) << "step " << step;
      done[best] = true;
      if (rng() % 2 == 0) ledger.Add(tenant_of[best], jobs[best].priority, {1000, 81920, 8000, 1});
    }
    EXPECT_EQ(queue.Next(), -1);
  }
}

}  // namespace
}  // namespace xpool
