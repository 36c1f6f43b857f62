#include "scheduler/queue/tenant_ledger.h"

#include <gtest/gtest.h>

#include <string>
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

TEST(ValidateTenantTest, BadQuotas) {
  struct Row {
    std::string name;
    Tenant tenant;
    std::string want;  // "" = valid
  };
  Tenant negative = MakeTenant(1, "a");
  negative.limit.cpu_milli = -1;
  Tenant upside = MakeTenant(1, "a", 8000, 4000);
  Tenant band = MakeTenant(1, "a");
  band.priority_limits.push_back({90, 80, ResourceAmounts::Unlimited()});
  Tenant band_range = MakeTenant(1, "a");
  band_range.priority_limits.push_back({50, 101, ResourceAmounts::Unlimited()});
  Tenant no_id = MakeTenant(0, "a");
  const Row rows[] = {
      {"valid", MakeTenant(1, "a", 4000, 8000), ""},
      {"negative limit", negative, "must not be negative"},
      {"guarantee above limit", upside, "a guarantee is above its limit"},
      {"band upside down", band, "upside down"},
      {"band out of range", band_range, "not within 0..100"},
      {"no id", no_id, "id must be positive"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    Status s = ValidateTenant(r.tenant);
    if (r.want.empty()) {
      EXPECT_TRUE(s.ok()) << s.ToString();
    } else {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(s.message().find(r.want), std::string::npos) << s.message();
    }
  }
}

TEST(TenantLedgerTest, LimitReasons) {
  Tenant t = MakeTenant(1, "a", 0, 8000);
  t.limit.running_jobs = 3;
  t.priority_limits.push_back({80, 100, {4000, kUnlimitedAmount, kUnlimitedAmount, kUnlimitedAmount}});
  std::vector<Tenant> tenants = {t};
  struct Row {
    std::string name;
    ResourceAmounts used;
    int used_priority;
    ResourceAmounts demand;
    int priority;
    std::string want;
  };
  const Row rows[] = {
      {"within", {4000, 0, 0, 1}, 50, {4000, 0, 1000, 1}, 50, ""},
      {"at the limit", {8000, 0, 0, 2}, 50, {1000, 0, 1000, 1}, 50, "tenant a at its gpu limit (8/8 devices)"},
      {"would pass it",
       {6000, 0, 0, 2},
       50,
       {4000, 0, 1000, 1},
       50,
       "tenant a at its gpu limit (6/8 devices, job needs 4)"},
      {"running jobs", {1000, 0, 0, 3}, 50, {1000, 0, 1000, 1}, 50, "tenant a at its running jobs limit (3/3)"},
      {"priority band",
       {4000, 0, 0, 1},
       90,
       {1000, 0, 1000, 1},
       85,
       "tenant a at its gpu limit for priority 80..100 (4/4 devices)"},
      {"band does not apply below it", {4000, 0, 0, 1}, 90, {1000, 0, 1000, 1}, 50, ""},
      {"no GPU asked: GPU limit does not matter", {8000, 0, 0, 1}, 50, {0, 0, 1000, 1}, 50, ""},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    TenantLedger ledger(tenants);
    ledger.Add(0, r.used_priority, r.used);
    EXPECT_EQ(ledger.LimitReason(0, r.priority, r.demand), r.want);
  }
}

// Tenants without any limit skip the checks: one with only a per-priority limit, or only a running-jobs limit,
// must still be checked.
TEST(TenantLedgerTest, EveryKindOfLimitIsChecked) {
  Tenant band = MakeTenant(1, "band");
  band.priority_limits.push_back({80, 100, {2000, kUnlimitedAmount, kUnlimitedAmount, kUnlimitedAmount}});
  Tenant jobs = MakeTenant(2, "jobs");
  jobs.limit.running_jobs = 1;
  Tenant memory = MakeTenant(3, "memory");
  memory.limit.gpu_memory_mib = 1024;
  Tenant none = MakeTenant(4, "none");
  std::vector<Tenant> tenants = {band, jobs, memory, none};
  TenantLedger ledger(tenants);
  const ResourceAmounts held = {2000, 1024, 1000, 1};
  for (int t = 0; t < 4; ++t) ledger.Add(t, 90, held);
  const ResourceAmounts demand = {1000, 512, 1000, 1};
  EXPECT_EQ(ledger.LimitReason(0, 90, demand), "tenant band at its gpu limit for priority 80..100 (2/2 devices)");
  EXPECT_EQ(ledger.LimitReason(0, 50, demand), "");
  EXPECT_EQ(ledger.LimitReason(1, 50, demand), "tenant jobs at its running jobs limit (1/1)");
  EXPECT_EQ(ledger.LimitReason(2, 50, demand), "tenant memory at its gpu memory limit (1.0/1.0 GiB)");
  EXPECT_EQ(ledger.LimitReason(3, 90, demand), "");
}

TEST(TenantLedgerTest, GuaranteeStatus) {
  std::vector<Tenant> tenants = {MakeTenant(1, "a", 4000)};
  TenantLedger ledger(tenants);
  EXPECT_TRUE(ledger.WithinGuarantee(0, {4000, 4096, 1000, 1}));
  EXPECT_FALSE(ledger.AboveGuarantee(0));
  ledger.Add(0, 50, {3000, 0, 0, 1});
  EXPECT_TRUE(ledger.WithinGuarantee(0, {1000, 0, 0, 1}));
  EXPECT_FALSE(ledger.WithinGuarantee(0, {2000, 0, 0, 1}));
  ledger.Add(0, 50, {2000, 0, 0, 1});
  EXPECT_TRUE(ledger.AboveGuarantee(0));
  // A tenant without a guarantee is above it as soon as it holds anything.
  std::vector<Tenant> none = {MakeTenant(2, "b")};
  TenantLedger b(none);
  EXPECT_FALSE(b.AboveGuarantee(0));
  EXPECT_FALSE(b.WithinGuarantee(0, {1000, 0, 0, 1}));
  b.Add(0, 10, {0, 0, 500, 1});
  EXPECT_TRUE(b.AboveGuarantee(0));
}

TEST(TenantLedgerTest, UnknownAndDuplicateTenants) {
  std::vector<Tenant> tenants = {MakeTenant(1, "a"), MakeTenant(1, "a2"), MakeTenant(3, "c", 9000, 1000)};
  TenantLedger ledger(tenants);
  EXPECT_EQ(ledger.IndexOf(TenantId(9)), -1);
  ASSERT_GE(ledger.IndexOf(TenantId(1)), 0);
  EXPECT_NE(ledger.error(ledger.IndexOf(TenantId(1))).message().find("listed twice"), std::string::npos);
  EXPECT_FALSE(ledger.error(ledger.IndexOf(TenantId(3))).ok());
}

// A quota lowered below current use is accepted: running work keeps running, new work waits with
// the reason.
TEST(QuotaPassTest, LimitBelowCurrentUseIsEnforcedForNewWorkOnly) {
  ClusterState state = MakeCluster(1, 8);
  FirstFitPlacer placer;
  std::vector<QueueJob> jobs = {Waiting(1, 1, 50, 0, GpuRequest(4)), Waiting(2, 1, 50, 10, GpuRequest(1)),
                                Waiting(3, 2, 50, 20, GpuRequest(1))};
  ASSERT_TRUE(StartJob(state, placer, jobs[0], 0));
  std::vector<Tenant> tenants = {MakeTenant(1, "a", 0, 2000), MakeTenant(2, "b")};
  ASSERT_TRUE(ValidateTenant(tenants[0]).ok());
  PassResult r = RunSchedulingPass(jobs, tenants, state, placer, 3600 * kMicrosPerSecond);
  ASSERT_EQ(r.decisions.size(), 2u);
  EXPECT_TRUE(r.suspensions.empty());
  for (const JobDecision& d : r.decisions) {
    SCOPED_TRACE(jobs[d.job].id.value());
    if (jobs[d.job].id == JobId(2)) {
      EXPECT_EQ(d.kind, DecisionKind::kWait);
      EXPECT_EQ(d.reason, "tenant a at its gpu limit (4/2 devices)");
    } else {
      EXPECT_EQ(d.kind, DecisionKind::kPlace);
    }
  }
  EXPECT_EQ(state.totals().device_compute_allocated_milli, 5000);  // the running 4 GPUs stay
}

TEST(QuotaPassTest, LimitIsNeverExceededInOnePass) {
  ClusterState state = MakeCluster(2, 8);
  FirstFitPlacer placer;
  std::vector<QueueJob> jobs;
  for (int i = 0; i < 10; ++i) jobs.push_back(Waiting(1 + i, 1, 50, i, GpuRequest(1, 500)));
  std::vector<Tenant> tenants = {MakeTenant(1, "a", 0, 3000)};
  PassResult r = RunSchedulingPass(jobs, tenants, state, placer, 0);
  EXPECT_EQ(r.stats.placed, 6);  // 6 × 500 milli = the 3000 limit
  EXPECT_EQ(r.stats.waiting, 4);
  EXPECT_EQ(r.decisions.back().reason, "tenant a at its gpu limit (3/3 devices)");
}

}  // namespace
}  // namespace xpool
