// BM_SchedulingPass/<policy>: one scheduling pass of the time-sharing queue (issue 7, item 8) —
// queue order, tenant quotas, placements (gangs all-or-nothing) and preemption decisions — over
// 100,000 waiting jobs of 100 tenants on the 1,213-node openb cluster, through the same
// RunSchedulingPass + SchedulerJobPlacer the server and the simulator call. Target: under 100 ms
// per pass.
//
// The world, fixed-seed:
//   cluster   OpenbCluster() (openb_workload.h), filled to about 90 % of its GPU compute by running
//   jobs shaped
//             like openb's pods, started 0-120 minutes before `now` (so some are protected by
//             min-runtime);
//   tenants   100: t0-t19 guaranteed 1.5 % of the GPUs each, t20-t29 limited to 2 %, t30-t34
//   limited to 8 GPUs
//             at priority 80-100, the rest without quotas;
//   jobs      100,000 waiting, openb-shaped, 2 % gangs of 2-4 replicas, 10 % suspended earlier;
//   priorities low
//             (10) 50 %, normal (50) 40 %, high (90) 10 %, for running and waiting jobs alike.
// Every job is reported to the policy as arrived (OnArrival, per replica), as the server does on submit, so
// `default` scores with the target it learns from them. Each iteration copies the cluster (untimed), then times
// building the placer and one pass.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "model/cluster_state.h"
#include "openb_workload.h"
#include "scheduler/fragmentation.h"
#include "scheduler/policy.h"
#include "scheduler/policy/fgd.h"
#include "scheduler/queue/scheduler_job_placer.h"
#include "scheduler/queue/scheduling_pass.h"

namespace xpool {
namespace {

constexpr int kTenants = 100;
constexpr int kWaiting = 100'000;
constexpr TimeMicros kNow = 1'000'000 * kMicrosPerSecond;

int DrawPriority(Rng& rng) {
  const int p = std::uniform_int_distribution<int>(0, 99)(rng);
  return p < 50 ? kPriorityLow : p < 90 ? kPriorityNormal : kPriorityHigh;
}

std::vector<Tenant> MakeTenants(const ClusterTotals& totals) {
  std::vector<Tenant> tenants;
  for (int i = 0; i < kTenants; ++i) {
    Tenant t;
    t.id = TenantId(i + 1);
    t.name = "t" + std::to_string(i);
    if (i < 20) {
      t.guaranteed = {totals.device_compute_capacity_milli * 15 / 1000, totals.device_memory_capacity_mib * 15 / 1000,
                      totals.cpu_capacity_milli * 15 / 1000, 0};
    } else if (i < 30) {
      t.limit.gpu_compute_milli = totals.device_compute_capacity_milli * 2 / 100;
    } else if (i < 35) {
      t.priority_limits.push_back({80, 100, {8000, kUnlimitedAmount, kUnlimitedAmount, kUnlimitedAmount}});
    }
    tenants.push_back(std::move(t));
  }
  return tenants;
}

struct World {
  ClusterState cluster;
  std::vector<Tenant> tenants;
  std::vector<QueueJob> jobs;
};

// Fills the cluster to about 90 % of its GPU compute with running jobs, then adds the waiting ones.
World MakeWorld(PlacementPolicy& policy) {
  World w;
  w.cluster = bench::OpenbCluster();
  w.tenants = MakeTenants(w.cluster.totals());
  Rng rng(11);
  Rng placer_rng(12);
  SchedulerJobPlacer placer(w.cluster, policy, placer_rng);
  const std::vector<TaskRequest> running = bench::OpenbShapedStream(1 << 15, 5);
  int64_t id = 1;
  int failures = 0;
  for (size_t i = 0; i < running.size() && failures < 200; ++i) {
    const ClusterTotals& t = w.cluster.totals();
    if (t.device_compute_allocated_milli * 10 >= t.device_compute_capacity_milli * 9) break;
    QueueJob j;
    j.id = JobId(id++);
    j.tenant = TenantId(1 + static_cast<int64_t>(rng() % kTenants));
    j.priority = DrawPriority(rng);
    j.request = running[i];
    policy.OnArrival(j.request);  // as the server reports each submitted job (a policy may learn its target)
    JobPlacement p = placer.Place(w.cluster, j.request, 1);
    if (p.kind != OutcomeKind::kPlaced) {
      ++failures;
      continue;
    }
    for (const Allocation& a : p.allocations) (void)w.cluster.Apply(a);
    j.allocations = std::move(p.allocations);
    j.state = QueueJobState::kRunning;
    j.last_start = kNow - static_cast<TimeMicros>(rng() % 7200) * kMicrosPerSecond;
    j.preemptible = rng() % 10 != 0;
    j.suspensions_last_hour = rng() % 20 == 0 ? 3 : 0;
    w.jobs.push_back(std::move(j));
  }
  const std::vector<TaskRequest> waiting = bench::OpenbShapedStream(kWaiting, 6);
  for (int i = 0; i < kWaiting; ++i) {
    QueueJob j;
    j.id = JobId(id++);
    j.tenant = TenantId(1 + static_cast<int64_t>(rng() % kTenants));
    j.priority = DrawPriority(rng);
    j.first_submit = kNow - static_cast<TimeMicros>(rng() % 86400) * kMicrosPerSecond;
    j.request = waiting[i];
    if (rng() % 50 == 0) j.replicas = 2 + static_cast<int>(rng() % 3);
    if (rng() % 10 == 0) j.state = QueueJobState::kSuspended;
    for (int r = 0; r < j.replicas; ++r) policy.OnArrival(j.request);
    w.jobs.push_back(std::move(j));
  }
  return w;
}

// A digest of everything a pass decides (every decision's job, kind, allocations, victims and reason; every
// suspension), shown as the benchmark's label: equal digests before and after a change of the pass's code mean
// the same decisions on this world.
std::string PassDigest(const PassResult& r) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ULL; };
  auto mix_string = [&](std::string_view s) {
    for (char c : s) mix(static_cast<unsigned char>(c));
    mix(s.size());
  };
  auto mix_allocations = [&](const std::vector<Allocation>& allocations) {
    mix(allocations.size());
    for (const Allocation& a : allocations) {
      mix(static_cast<uint64_t>(a.node));
      mix(static_cast<uint64_t>(a.cpu_milli));
      mix(static_cast<uint64_t>(a.memory_mib));
      for (const DeviceGrant& g : a.devices) {
        mix(static_cast<uint64_t>(g.device));
        mix(static_cast<uint64_t>(g.memory_mib));
        mix(static_cast<uint64_t>(g.compute_milli));
      }
    }
  };
  for (const JobDecision& d : r.decisions) {
    mix(static_cast<uint64_t>(d.job));
    mix(static_cast<uint64_t>(d.kind));
    mix_allocations(d.allocations);
    for (int v : d.victims) mix(static_cast<uint64_t>(v));
    mix_string(d.reason);
  }
  for (const SuspendDecision& s : r.suspensions) {
    mix(static_cast<uint64_t>(s.job));
    mix(static_cast<uint64_t>(s.for_job));
    mix_string(s.reason);
    mix_allocations(s.move_to);
  }
  char text[32];
  std::snprintf(text, sizeof text, "digest %016llx", static_cast<unsigned long long>(h));
  return text;
}

// "fgd" is FGD with the waiting stream's target workload (cacheable), as BM_Place measures it; the registry's "fgd"
// learns its target from arrivals, which a pass over a fixed queue does not report.
Result<std::unique_ptr<PlacementPolicy>> PassPolicy(const std::string& name) {
  if (name == "fgd") {
    return std::unique_ptr<PlacementPolicy>(
        std::make_unique<FgdPolicy>(TargetWorkload::FromRequests(bench::OpenbShapedStream(kWaiting, 6))));
  }
  return MakePolicy(name);
}

void BM_SchedulingPass(benchmark::State& bs, std::string policy_name) {
  auto policy = PassPolicy(policy_name);
  if (!policy.ok()) {
    bs.SkipWithError(policy.status().message().c_str());
    return;
  }
  const World world = MakeWorld(**policy);
  PassStats stats;
  std::string digest;
  for (auto _ : bs) {
    bs.PauseTiming();
    ClusterState scratch = world.cluster;
    Rng rng(13);
    bs.ResumeTiming();
    SchedulerJobPlacer placer(scratch, **policy, rng);
    PassResult r = RunSchedulingPass(world.jobs, world.tenants, scratch, placer, kNow);
    stats = r.stats;
    benchmark::DoNotOptimize(r.decisions.data());
    bs.PauseTiming();
    digest = PassDigest(r);
    bs.ResumeTiming();
  }
  bs.counters["jobs"] = static_cast<double>(world.jobs.size());
  bs.counters["placed"] = stats.placed;
  bs.counters["preempting"] = stats.preempting;
  bs.counters["suspended"] = stats.suspended;
  bs.counters["waiting"] = stats.waiting;
  bs.counters["never_fits"] = stats.never_fits;
  bs.counters["placer_calls"] = static_cast<double>(stats.placer_calls);
  bs.counters["victim_searches"] = stats.victim_searches;
  bs.SetLabel(digest);
}

const bool kRegistered = [] {
  for (const char* policy : {"best-fit", "fgd", "default"}) {
    benchmark::RegisterBenchmark((std::string("BM_SchedulingPass/") + policy).c_str(), BM_SchedulingPass,
                                 std::string(policy))
        ->Unit(benchmark::kMillisecond)
        ->Iterations(5);
  }
  return true;
}();

}  // namespace
}  // namespace xpool
