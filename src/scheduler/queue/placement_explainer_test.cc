#include "scheduler/queue/placement_explainer.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "model/node_builder.h"
#include "scheduler/gang.h"
#include "scheduler/policy/fgd.h"
#include "scheduler/queue/scheduler_job_placer.h"

namespace xpool {
namespace {

int Pick(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

// A random cluster drawn from a few node templates (so that many nodes share device groups), with some nodes
// whose devices differ (two models, NUMA halves, an exclusive-mode device, another vendor).
ClusterState RandomWorld(Rng& rng, int nodes) {
  ClusterState s;
  const char* models[] = {"T4", "A100-SXM4", "V100M32"};
  for (int i = 0; i < nodes; ++i) {
    const int kind = Pick(rng, 0, 9);
    NodeBuilder b =
        MakeNode("n" + std::to_string(i)).WithCpu(8000 * Pick(rng, 2, 12)).WithMemory(8192 * Pick(rng, 2, 40));
    if (kind < 5) {
      b.WithGpus(kind < 3 ? 8 : 4, models[kind % 3], 16384 * (1 + kind % 2));
    } else if (kind == 5) {
      b.WithGpus(2, "T4", 16384).WithGpus(2, "A100-SXM4", 40960);  // not alike
    } else if (kind == 6) {
      b.WithGpus(4, "A100-SXM4", 40960).WithNumaNodes(2).WithMaxSharers(Pick(rng, 1, 4));
    } else if (kind == 7) {
      b.WithGpus(4, "910B", 32768, Vendor::kAscend);
    } else if (kind == 8) {
      b.WithGpus(Pick(rng, 0, 2), "T4", 16384);
    } else {
      b.WithGpus(8, "V100M32", 32768);
    }
    Node n = b.Build();
    if (!n.devices.empty() && Pick(rng, 0, 9) == 0) n.devices[0].mode = DeviceMode::kExclusive;
    EXPECT_TRUE(s.AddNode(std::move(n)).ok());
  }
  return s;
}

TaskRequest RandomRequest(Rng& rng) {
  TaskRequest r;
  r.cpu_milli = 1000 * Pick(rng, 0, 40);
  r.memory_mib = 4096 * Pick(rng, 0, 40);
  r.device_count = Pick(rng, 0, 5) == 0 ? 0 : Pick(rng, 1, 6);
  if (r.device_count > 0) {
    const int kind = Pick(rng, 0, 9);
    r.device_compute_milli = kind < 4 ? 1000 : kind < 9 ? 50 * Pick(rng, 1, 19) : 0;
    if (Pick(rng, 0, 2) == 0)
      r.device_memory_mib = 1024 * Pick(rng, 1, 48);
    else if (Pick(rng, 0, 4) == 0)
      r.device_memory_percent = Pick(rng, 1, 100);
    if (Pick(rng, 0, 9) == 0) r.type_include = {"a100"};
    if (Pick(rng, 0, 9) == 0) r.type_exclude = {"T4"};
    if (Pick(rng, 0, 11) == 0) r.vendor = Pick(rng, 0, 1) == 0 ? Vendor::kNvidia : Vendor::kAscend;
    if (Pick(rng, 0, 7) == 0) r.numa_bind = true;
    if (Pick(rng, 0, 29) == 0) r.uuid_exclude = {"n1-gpu0", "n2-gpu1"};
  }
  if (r.cpu_milli == 0 && r.memory_mib == 0 && r.device_count == 0) r.cpu_milli = 500;
  return r;
}

bool SameAllocation(const Allocation& a, const Allocation& b) {
  if (a.node != b.node || a.cpu_milli != b.cpu_milli || a.memory_mib != b.memory_mib ||
      a.devices.size() != b.devices.size()) {
    return false;
  }
  for (size_t i = 0; i < a.devices.size(); ++i) {
    const DeviceGrant& x = a.devices[i];
    const DeviceGrant& y = b.devices[i];
    if (x.device != y.device || x.memory_mib != y.memory_mib || x.compute_milli != y.compute_milli) return false;
  }
  return true;
}

// One random change: a release, a node condition, or (rarely) a node's description.
void RandomChange(ClusterState& state, std::vector<Allocation>& running, Rng& rng) {
  const int what = Pick(rng, 0, 19);
  const int node = Pick(rng, 0, state.node_count() - 1);
  if (what < 12 && !running.empty()) {
    const size_t i = std::uniform_int_distribution<size_t>(0, running.size() - 1)(rng);
    ASSERT_TRUE(state.Release(running[i]).ok());
    running[i] = running.back();
    running.pop_back();
  } else if (what < 14) {
    ASSERT_TRUE(state.SetNodeReady(node, Pick(rng, 0, 3) != 0).ok());
  } else if (what < 16) {
    ASSERT_TRUE(state.SetNodeCordoned(node, Pick(rng, 0, 3) == 0).ok());
  } else if (what < 19) {
    if (!state.node(node).devices.empty()) {
      const int d = Pick(rng, 0, static_cast<int>(state.node(node).devices.size()) - 1);
      ASSERT_TRUE(state.SetDeviceHealthy(node, d, Pick(rng, 0, 1) == 0).ok());
    }
  } else {
    Node n = state.node(node);  // a new description: more CPU (the node's usage stays valid)
    n.cpu_milli += 8000;
    ASSERT_TRUE(state.UpdateNode(node, std::move(n)).ok());
  }
}

// Property test: on seeded random worlds, through random placements, releases, condition and description
// changes, Explain answers every request exactly as Schedule() does (kind, reason, allocation, rng draws).
TEST(PlacementExplainerPropertyTest, EqualsScheduleOnRandomWorlds) {
  int64_t waits = 0, checks = 0;
  for (int world = 0; world < 6; ++world) {
    Rng rng(100 + world);
    ClusterState state = RandomWorld(rng, 40 + 10 * world);
    std::vector<std::unique_ptr<PlacementPolicy>> policies;
    for (const char* name : {"best-fit", "default", "random", "fgd"}) {  // fgd learns: not cacheable
      auto p = MakePolicy(name);
      ASSERT_TRUE(p.ok()) << name;
      policies.push_back(std::move(*p));
    }
    PlacementExplainer explainer(state);
    std::vector<Allocation> running;
    for (int step = 0; step < 600; ++step) {
      PlacementPolicy& policy = *policies[step % policies.size()];
      const TaskRequest r = RandomRequest(rng);
      policy.OnArrival(r);
      Rng a(step), b(step);
      ScheduleOutcome fast = explainer.Explain(r, policy, a);
      ScheduleOutcome full = Schedule(state, r, policy, b);
      ++checks;
      ASSERT_EQ(fast.kind, full.kind) << "world " << world << " step " << step;
      ASSERT_EQ(fast.reason, full.reason) << "world " << world << " step " << step;
      ASSERT_EQ(a(), b()) << "the same draws, world " << world << " step " << step;
      if (full.kind == OutcomeKind::kPlaced) {
        ASSERT_TRUE(SameAllocation(fast.allocation, full.allocation)) << "world " << world << " step " << step;
        ASSERT_TRUE(state.Apply(full.allocation).ok());
        policy.OnPlaced(state, r, full.allocation);
        running.push_back(full.allocation);
      } else {
        ++waits;
      }
      if (Pick(rng, 0, 2) == 0) {
        ASSERT_NO_FATAL_FAILURE(RandomChange(state, running, rng));
      }
    }
    // The grouping did its work: far fewer device verdicts than nodes × explanations.
    const PlacementExplainer::Stats& st = explainer.stats();
    EXPECT_LT(st.group_fits, (st.explains - st.full_scans) * state.node_count() / 2) << "world " << world;
  }
  EXPECT_GT(waits, 800);  // most requests of a filling cluster end up explained
  EXPECT_EQ(checks, 6 * 600);
}

// The pass's placer: one replica and gangs through the Scheduler, failures explained, answer exactly what
// Schedule() (one replica) and PlanGang with Schedule() (gangs) answer, for deterministic policies.
TEST(SchedulerJobPlacerPropertyTest, PlaceEqualsScheduleAndPlanGang) {
  for (int world = 0; world < 4; ++world) {
    Rng rng(200 + world);
    ClusterState state = RandomWorld(rng, 60);
    std::vector<std::unique_ptr<PlacementPolicy>> policies;
    for (const char* name : {"best-fit", "default"}) {
      auto p = MakePolicy(name);
      ASSERT_TRUE(p.ok()) << name;
      policies.push_back(std::move(*p));
    }
    std::vector<TaskRequest> sample;
    for (int i = 0; i < 100; ++i) sample.push_back(RandomRequest(rng));
    policies.push_back(std::make_unique<FgdPolicy>(TargetWorkload::FromRequests(sample)));
    PlacementPolicy& policy = *policies[world % policies.size()];
    Rng placer_rng(1), reference_rng(1);
    SchedulerJobPlacer placer(state, policy, placer_rng);
    std::vector<Allocation> running;
    int gangs_placed = 0, gangs_waiting = 0;
    for (int step = 0; step < 500; ++step) {
      TaskRequest r = RandomRequest(rng);
      const int replicas = Pick(rng, 0, 3) == 0 ? Pick(rng, 2, 4) : 1;
      policy.OnArrival(r);
      JobPlacement got = placer.Place(state, r, replicas);
      JobPlacement want;
      if (replicas == 1) {
        ScheduleOutcome o = Schedule(state, r, policy, reference_rng);
        want.kind = o.kind;
        want.reason = o.reason;
        if (o.kind == OutcomeKind::kPlaced) want.allocations.push_back(o.allocation);
      } else {
        GangOutcome g = PlanGang(state, std::vector<TaskRequest>(replicas, r), policy, reference_rng);
        want.kind = g.kind;
        want.reason = g.reason;
        want.allocations = g.allocations;
      }
      ASSERT_EQ(got.kind, want.kind) << "world " << world << " step " << step;
      ASSERT_EQ(got.reason, want.reason) << "world " << world << " step " << step;
      ASSERT_EQ(got.allocations.size(), want.allocations.size()) << "world " << world << " step " << step;
      for (size_t i = 0; i < got.allocations.size(); ++i) {
        ASSERT_TRUE(SameAllocation(got.allocations[i], want.allocations[i])) << "world " << world << " step " << step;
      }
      if (got.kind == OutcomeKind::kPlaced) {
        for (const Allocation& a : got.allocations) {
          ASSERT_TRUE(state.Apply(a).ok());
          running.push_back(a);
        }
        placer.OnBooked(state, r, got.allocations);
        if (replicas > 1) ++gangs_placed;
      } else if (replicas > 1) {
        ++gangs_waiting;
      }
      if (Pick(rng, 0, 2) == 0) {
        ASSERT_NO_FATAL_FAILURE(RandomChange(state, running, rng));
      }
    }
    EXPECT_GT(gangs_placed, 5) << "world " << world;
    EXPECT_GT(gangs_waiting, 5) << "world " << world;
  }
}

}  // namespace
}  // namespace xpool
