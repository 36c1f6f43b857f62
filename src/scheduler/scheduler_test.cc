#include "scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/mig_label.h"
#include "model/mig_profile.h"
#include "model/node_builder.h"
#include "scheduler/fit.h"
#include "scheduler/fragmentation.h"
#include "scheduler/policy/fgd.h"

namespace xpool {
namespace {

// A small random cluster: mixed models, vendors, device counts, NUMA, sharer limits, one exclusive-mode device.
ClusterState RandomCluster(Rng& rng, int nodes) {
  ClusterState s;
  const char* models[] = {"T4", "A100-SXM4", "V100M32", "G2"};
  for (int i = 0; i < nodes; ++i) {
    const int gpus = std::uniform_int_distribution<int>(0, 8)(rng);
    const char* model = models[std::uniform_int_distribution<int>(0, 3)(rng)];
    const Vendor vendor = std::uniform_int_distribution<int>(0, 5)(rng) == 0 ? Vendor::kAscend : Vendor::kNvidia;
    NodeBuilder b = MakeNode("n" + std::to_string(i))
                        .WithCpu(1000 * std::uniform_int_distribution<int>(4, 64)(rng))
                        .WithMemory(1024 * std::uniform_int_distribution<int>(8, 256)(rng));
    b.WithGpus(gpus, model, 1024 * std::uniform_int_distribution<int>(8, 80)(rng), vendor);
    if (gpus >= 2) b.WithNumaNodes(2).WithMaxSharers(std::uniform_int_distribution<int>(1, 6)(rng));
    Node n = b.Build();
    if (gpus > 0 && std::uniform_int_distribution<int>(0, 4)(rng) == 0) n.devices[0].mode = DeviceMode::kExclusive;
    EXPECT_TRUE(s.AddNode(std::move(n)).ok());
  }
  return s;
}

TaskRequest RandomRequest(Rng& rng) {
  auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  TaskRequest r;
  r.cpu_milli = 500 * pick(0, 16);
  r.memory_mib = 1024 * pick(0, 32);
  r.device_count = pick(0, 4) == 0 ? 0 : pick(1, 4);
  if (r.device_count > 0) {
    const int kind = pick(0, 9);
    r.device_compute_milli = kind < 4 ? 1000 : kind < 9 ? 50 * pick(1, 19) : 0;
    if (pick(0, 2) == 0)
      r.device_memory_mib = 512 * pick(1, 40);
    else if (pick(0, 3) == 0)
      r.device_memory_percent = pick(1, 100);
    if (pick(0, 9) == 0) r.type_include = {"a100"};
    if (pick(0, 9) == 0) r.type_exclude = {"T4"};
    if (pick(0, 14) == 0) r.vendor = Vendor::kNvidia;
    if (pick(0, 9) == 0) r.numa_bind = true;
    if (pick(0, 19) == 0) r.uuid_exclude = {"n1-gpu0", "n2-gpu1"};
  }
  if (r.cpu_milli == 0 && r.memory_mib == 0 && r.device_count == 0) r.cpu_milli = 100;
  return r;
}

// Releases one of the running allocations, chosen at random, and forgets it. `running` must not be empty.
void ReleaseRandomRunning(ClusterState& state, std::vector<Allocation>& running, Rng& rng) {
  const size_t i = std::uniform_int_distribution<size_t>(0, running.size() - 1)(rng);
  ASSERT_TRUE(state.Release(running[i]).ok());
  running[i] = running.back();
  running.pop_back();
}

// Flips one condition of a random node: ready, cordoned, or its first device's health (mostly back to normal).
void ChangeRandomNodeCondition(ClusterState& state, Rng& rng) {
  const int node = std::uniform_int_distribution<int>(0, state.node_count() - 1)(rng);
  const int what = std::uniform_int_distribution<int>(0, 2)(rng);
  const bool flag = std::uniform_int_distribution<int>(0, 3)(rng) != 0;
  Status s = Status::Ok();
  if (what == 0) s = state.SetNodeReady(node, flag);
  if (what == 1) s = state.SetNodeCordoned(node, !flag);
  if (what == 2 && !state.node(node).devices.empty()) s = state.SetDeviceHealthy(node, 0, flag);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

// The allocation honours the request it was made for.
void ExpectHonours(const ClusterState& s, const TaskRequest& r, const Allocation& a) {
  ASSERT_EQ(static_cast<int>(a.devices.size()), r.device_count);
  EXPECT_EQ(a.cpu_milli, r.cpu_milli);
  EXPECT_EQ(a.memory_mib, r.memory_mib);
  const Node& n = s.node(a.node);
  for (const DeviceGrant& g : a.devices) {
    const Device& d = n.devices[g.device];
    EXPECT_EQ(FitDevice(d, &s.usage(a.node).devices[g.device], r), FitReason::kFits);
    if (r.numa_bind) {
      EXPECT_EQ(d.numa_node, n.devices[a.devices[0].device].numa_node);
    }
  }
}

bool SameOutcome(const ScheduleOutcome& a, const ScheduleOutcome& b) {
  if (a.kind != b.kind) return false;
  if (a.kind != OutcomeKind::kPlaced) return true;
  if (a.allocation.node != b.allocation.node || a.allocation.devices.size() != b.allocation.devices.size()) {
    return false;
  }
  for (size_t i = 0; i < a.allocation.devices.size(); ++i) {
    const DeviceGrant& x = a.allocation.devices[i];
    const DeviceGrant& y = b.allocation.devices[i];
    if (x.device != y.device || x.memory_mib != y.memory_mib || x.compute_milli != y.compute_milli) return false;
  }
  return true;
}

// `steps` random steps of one policy on `state`: with `schedule_percent` % chance (or when nothing runs) a request
// from `make_request` arrives and the Scheduler and the full-scan Schedule() must agree on it (a placement is
// applied and told to the policy); otherwise a random running allocation leaves. Adds the placements to *placed.
void AgreeWithTheFullScan(ClusterState& state, PlacementPolicy& policy, Scheduler& scheduler, Rng& rng, int steps,
                          int schedule_percent, const std::function<TaskRequest()>& make_request, int* placed) {
  std::vector<Allocation> running;
  for (int step = 0; step < steps; ++step) {
    if (std::uniform_int_distribution<int>(0, 99)(rng) < schedule_percent || running.empty()) {
      const TaskRequest r = make_request();
      policy.OnArrival(r);
      Rng a(step), b(step);
      ScheduleOutcome fast = scheduler.Schedule(r, a);
      ScheduleOutcome full = Schedule(state, r, policy, b);
      ASSERT_TRUE(SameOutcome(fast, full)) << "step " << step << " memory " << r.memory_mib << " fast node "
                                           << fast.allocation.node << " full node " << full.allocation.node;
      if (full.kind == OutcomeKind::kPlaced) {
        ASSERT_TRUE(state.Apply(full.allocation).ok()) << "step " << step;
        policy.OnPlaced(state, r, full.allocation);
        running.push_back(full.allocation);
        ++*placed;
      }
    } else {
      ASSERT_NO_FATAL_FAILURE(ReleaseRandomRunning(state, running, rng));
    }
  }
}

// Property test: random apply / release / schedule / condition steps on a random cluster; after every step the
// invariants hold, every placement honours its request and applies, and the Scheduler (ordered walk or score
// cache) agrees with the full-scan Schedule().
TEST(SchedulerPropertyTest, RandomStepsKeepInvariantsAndMatchTheFullScan) {
  Rng rng(20261130);
  ClusterState state = RandomCluster(rng, 14);
  std::vector<std::unique_ptr<PlacementPolicy>> policies;
  std::vector<std::unique_ptr<Scheduler>> schedulers;
  for (const char* name : {"best-fit", "binpack", "spread", "binpack-spread", "topology", "dot-product", "gpu-packing",
                           "gpu-clustering"}) {
    auto p = MakePolicy(name);
    ASSERT_TRUE(p.ok());
    policies.push_back(std::move(*p));
  }
  // FGD with a fixed target (cacheable); like dot-product and the packing policies it ignores the request's
  // memory, so its score cache is shared by requests differing in memory only and checks free memory itself.
  std::vector<TaskRequest> sample;
  for (int i = 0; i < 200; ++i) sample.push_back(RandomRequest(rng));
  policies.push_back(std::make_unique<FgdPolicy>(TargetWorkload::FromRequests(sample)));
  for (auto& p : policies) {
    schedulers.push_back(std::make_unique<Scheduler>(state, *p, SchedulerOptions{.explain = false}));
  }
  std::vector<Allocation> running;
  int placed = 0;
  constexpr int kSteps = 100'000;
  for (int step = 0; step < kSteps; ++step) {
    const int op = std::uniform_int_distribution<int>(0, 99)(rng);
    if (op < 50) {
      const TaskRequest r = RandomRequest(rng);
      const size_t which = std::uniform_int_distribution<size_t>(0, policies.size() - 1)(rng);
      Rng a(step), b(step);
      ScheduleOutcome fast = schedulers[which]->Schedule(r, a);
      ScheduleOutcome full = Schedule(state, r, *policies[which], b);
      ASSERT_TRUE(SameOutcome(fast, full))
          << "step " << step << " policy " << policies[which]->name() << " fast node " << fast.allocation.node
          << " full node " << full.allocation.node << " kinds " << static_cast<int>(fast.kind) << "/"
          << static_cast<int>(full.kind) << " " << full.reason;
      if (full.kind == OutcomeKind::kPlaced) {
        ExpectHonours(state, r, full.allocation);
        ASSERT_TRUE(state.Apply(full.allocation).ok()) << "step " << step;
        running.push_back(full.allocation);
        ++placed;
      }
    } else if (op < 85 && !running.empty()) {
      ASSERT_NO_FATAL_FAILURE(ReleaseRandomRunning(state, running, rng));
    } else if (op < 90) {
      // A raw allocation that may over-book: Apply must refuse it without changing anything, or book it.
      const int node = std::uniform_int_distribution<int>(0, state.node_count() - 1)(rng);
      Allocation a;
      a.node = node;
      a.cpu_milli = 1000 * std::uniform_int_distribution<int>(0, 8)(rng);
      const int devs = static_cast<int>(state.node(node).devices.size());
      if (devs > 0) {
        a.devices.push_back({std::uniform_int_distribution<int>(0, devs - 1)(rng),
                             1024 * std::uniform_int_distribution<int>(0, 20)(rng),
                             100 * std::uniform_int_distribution<int>(0, 10)(rng)});
      }
      const ClusterTotals before = state.totals();
      if (state.Apply(a).ok()) {
        running.push_back(a);
      } else {
        EXPECT_EQ(state.totals().cpu_allocated_milli, before.cpu_allocated_milli);
        EXPECT_EQ(state.totals().device_compute_allocated_milli, before.device_compute_allocated_milli);
      }
    } else {
      ASSERT_NO_FATAL_FAILURE(ChangeRandomNodeCondition(state, rng));
    }
    ASSERT_TRUE(state.CheckInvariants().ok()) << "step " << step;
  }
  EXPECT_GT(placed, 5000);  // the test exercised placement, not only refusals
  int64_t memory_scans = 0;
  for (const auto& s : schedulers) memory_scans += s->stats().memory_scans;
  EXPECT_GT(memory_scans, 100);  // the shared caches' memory check was exercised
}

TEST(SchedulerTest, ModesFollowThePolicy) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("a").WithGpus(2, "T4", 15360).Build()).ok());
  auto best_fit = MakePolicy("best-fit");
  auto topology = MakePolicy("topology");
  ASSERT_TRUE(best_fit.ok() && topology.ok());
  EXPECT_EQ(Scheduler(s, **best_fit).mode(), SchedulerMode::kOrderedWalk);
  EXPECT_EQ(Scheduler(s, **topology).mode(), SchedulerMode::kScoreCache);
  // The policy's traits decide, not the cluster: made before the cluster has nodes, the ordered walk all the same.
  ClusterState empty;
  Scheduler late(empty, **best_fit);
  ASSERT_TRUE(empty.AddNode(MakeNode("a").WithGpus(2, "T4", 15360).Build()).ok());
  Rng rng(1);
  TaskRequest r;
  r.cpu_milli = 100;
  EXPECT_EQ(late.Schedule(r, rng).kind, OutcomeKind::kPlaced);
  EXPECT_EQ(late.mode(), SchedulerMode::kOrderedWalk);
}

TEST(SchedulerTest, NotPlacedKindsAndReasons) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("a").WithGpus(1, "T4", 15360).Build()).ok());
  auto policy = MakePolicy("best-fit");
  ASSERT_TRUE(policy.ok());
  Scheduler quiet(s, **policy, SchedulerOptions{.explain = false});
  Scheduler verbose(s, **policy);
  Rng rng(1);
  TaskRequest r;
  r.cpu_milli = 1000;
  r.device_count = 2;
  r.device_compute_milli = 1000;
  EXPECT_EQ(quiet.Schedule(r, rng).kind, OutcomeKind::kNeverFits);
  EXPECT_EQ(quiet.Schedule(r, rng).reason, "1 node: fewer than 2 devices on the node");
  r.device_count = 1;
  ScheduleOutcome o = quiet.Schedule(r, rng);
  ASSERT_EQ(o.kind, OutcomeKind::kPlaced);
  ASSERT_TRUE(s.Apply(o.allocation).ok());
  EXPECT_EQ(quiet.Schedule(r, rng).kind, OutcomeKind::kWait);
  ScheduleOutcome v = verbose.Schedule(r, rng);
  EXPECT_EQ(v.kind, OutcomeKind::kWait);
  EXPECT_EQ(v.reason, "1 node: every device held exclusively");
  r.device_compute_milli = 2000;
  EXPECT_EQ(verbose.Schedule(r, rng).kind, OutcomeKind::kNeverFits);
  // Nodes added after the Scheduler was made are seen.
  ASSERT_TRUE(s.AddNode(MakeNode("b").WithGpus(2, "T4", 15360).Build()).ok());
  r.device_compute_milli = 1000;
  o = quiet.Schedule(r, rng);
  ASSERT_EQ(o.kind, OutcomeKind::kPlaced);
  EXPECT_EQ(o.allocation.node, 1);
}

TEST(SchedulerTest, NeverFitsIsRecheckedWhenANodeChangesItsDescription) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("a").WithGpus(2, "T4", 15360).Build()).ok());
  auto policy = MakePolicy("binpack");
  ASSERT_TRUE(policy.ok());
  Scheduler quiet(s, **policy, SchedulerOptions{.explain = false});
  Rng rng(1);
  TaskRequest r;
  r.cpu_milli = 1000;
  r.device_count = 1;
  r.device_memory_mib = 20000;
  ASSERT_EQ(quiet.Schedule(r, rng).kind, OutcomeKind::kNeverFits);
  ASSERT_TRUE(s.UpdateNode(0, MakeNode("a").WithGpus(2, "A100", 40960).Build()).ok());
  ScheduleOutcome o = quiet.Schedule(r, rng);
  ASSERT_EQ(o.kind, OutcomeKind::kPlaced);
  EXPECT_EQ(o.allocation.devices[0].memory_mib, 20000);
}

// Property test for the score cache's shared verdicts: a cluster of many alike nodes (so nodes share state ids,
// also up to a permutation of their devices), the paper policies that use the score cache (gpu-clustering with
// its per-node classes as NodeTag, fgd with a fixed target), placements and releases; the Scheduler must agree
// with the full scan after every step.
TEST(SchedulerPropertyTest, AlikeNodesShareVerdictsAndMatchTheFullScan) {
  Rng rng(7);
  ClusterState state;
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(
        state
            .AddNode(
                MakeNode("g" + std::to_string(i)).WithCpu(96000).WithMemory(393216).WithGpus(8, "G2", 16384).Build())
            .ok());
  }
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(
        state
            .AddNode(
                MakeNode("t" + std::to_string(i)).WithCpu(104000).WithMemory(524288).WithGpus(2, "T4", 16384).Build())
            .ok());
  }
  for (int i = 0; i < 6; ++i) {  // memory runs out before CPU or GPU here
    ASSERT_TRUE(
        state
            .AddNode(
                MakeNode("m" + std::to_string(i)).WithCpu(96000).WithMemory(65536).WithGpus(8, "G2", 16384).Build())
            .ok());
  }
  std::vector<TaskRequest> sample;
  for (int i = 0; i < 200; ++i) sample.push_back(RandomRequest(rng));
  std::vector<std::unique_ptr<PlacementPolicy>> policies;
  // default learns its target and per-shape memory from OnArrival / OnPlaced and moves its ScoreEpoch.
  for (const char* name : {"dot-product", "gpu-packing", "gpu-clustering", "default"}) {
    auto p = MakePolicy(name);
    ASSERT_TRUE(p.ok());
    policies.push_back(std::move(*p));
  }
  policies.push_back(std::make_unique<FgdPolicy>(TargetWorkload::FromRequests(sample)));
  std::vector<std::unique_ptr<Scheduler>> schedulers;
  for (auto& p : policies) {
    ASSERT_TRUE(p->traits().cacheable) << p->name();
    schedulers.push_back(std::make_unique<Scheduler>(state, *p, SchedulerOptions{.explain = false}));
    ASSERT_EQ(schedulers.back()->mode(), SchedulerMode::kScoreCache) << p->name();
  }
  std::vector<Allocation> running;
  int placed = 0;
  for (int step = 0; step < 20'000; ++step) {
    if (std::uniform_int_distribution<int>(0, 99)(rng) < 60 || running.empty()) {
      TaskRequest r = RandomRequest(rng);
      r.uuid_exclude.clear();
      const size_t which = std::uniform_int_distribution<size_t>(0, policies.size() - 1)(rng);
      policies[which]->OnArrival(r);
      Rng a(step), b(step);
      ScheduleOutcome fast = schedulers[which]->Schedule(r, a);
      ScheduleOutcome full = Schedule(state, r, *policies[which], b);
      ASSERT_TRUE(SameOutcome(fast, full)) << "step " << step << " policy " << policies[which]->name() << " fast node "
                                           << fast.allocation.node << " full node " << full.allocation.node;
      if (full.kind == OutcomeKind::kPlaced) {
        ASSERT_TRUE(state.Apply(full.allocation).ok()) << "step " << step;
        policies[which]->OnPlaced(state, r, full.allocation);
        running.push_back(full.allocation);
        ++placed;
      }
    } else {
      ASSERT_NO_FATAL_FAILURE(ReleaseRandomRunning(state, running, rng));
    }
  }
  EXPECT_GT(placed, 3000);
  EXPECT_GT(policies[3]->ScoreEpoch(), 10u) << policies[3]->name();  // default's learned state moved many times
}

// Property test for a learning policy without memory ranges: the registry's fgd learns its target from arrivals
// (ScoreEpoch moves with each rebuild) and bounds its scores; the Scheduler's score cache must agree with the full
// scan after every step.
TEST(SchedulerPropertyTest, LearningFgdMatchesTheFullScan) {
  Rng rng(2027);
  ClusterState state = RandomCluster(rng, 16);
  auto made = MakePolicy("fgd");
  ASSERT_TRUE(made.ok());
  PlacementPolicy& policy = **made;
  Scheduler scheduler(state, policy, SchedulerOptions{.explain = false});
  ASSERT_EQ(scheduler.mode(), SchedulerMode::kScoreCache);
  int placed = 0;
  ASSERT_NO_FATAL_FAILURE(AgreeWithTheFullScan(
      state, policy, scheduler, rng, 8'000, 60, [&rng] { return RandomRequest(rng); }, &placed));
  EXPECT_GT(placed, 1000);
  EXPECT_GT(policy.ScoreEpoch(), 5u);  // the learned target was rebuilt along the way
}

// Property test for a policy whose score reads the request's memory (default, with memory ranges): few request
// shapes at widely varied memories on nodes whose memory runs short, so one cache serves many memories and the
// memory left after placement moves the scores; the Scheduler must agree with the full scan after every step.
TEST(SchedulerPropertyTest, MemoryReadingPolicyMatchesTheFullScanAcrossMemories) {
  Rng rng(43);
  ClusterState state;
  for (int i = 0; i < 16; ++i) {
    ASSERT_TRUE(state
                    .AddNode(MakeNode("n" + std::to_string(i))
                                 .WithCpu(96000)
                                 .WithMemory((64 + 96 * (i % 4)) * 1024)
                                 .WithGpus(8, "G2", 16384)
                                 .Build())
                    .ok());
  }
  auto made = MakePolicy("default");
  ASSERT_TRUE(made.ok());
  PlacementPolicy& policy = **made;
  ASSERT_TRUE(policy.traits().memory_ranges);
  Scheduler scheduler(state, policy, SchedulerOptions{.explain = false});
  auto shape = [&rng](int which) {
    TaskRequest r;
    r.cpu_milli = 1000 * (2 + which);
    r.device_count = which == 3 ? 2 : 1;
    r.device_compute_milli = which == 1 ? 500 : which == 2 ? 250 : 1000;
    r.memory_mib = 1024 * std::uniform_int_distribution<int>(0, 96)(rng);
    return r;
  };
  int placed = 0;
  ASSERT_NO_FATAL_FAILURE(AgreeWithTheFullScan(
      state, policy, scheduler, rng, 6'000, 65, [&] { return shape(std::uniform_int_distribution<int>(0, 3)(rng)); },
      &placed));
  EXPECT_GT(placed, 1000);
  EXPECT_GT(policy.ScoreEpoch(), 5u);  // the learned per-shape memory moved
}

// A cacheable policy with flat scores and a random tie-break: the score cache spreads placements over every
// fitting node.
class FlatRandomPolicy final : public PlacementPolicy {
 public:
  explicit FlatRandomPolicy(bool uniform = false) : uniform_(uniform) {}
  std::string_view name() const override { return "flat-random"; }
  TieBreak tie_break() const override { return TieBreak::kRandom; }
  ScoringTraits traits() const override { return {.cacheable = true, .uniform_score = uniform_}; }
  bool Score(const ClusterState&, const TaskRequest& r, const NodeCandidate& c, Rng&, int64_t* score,
             std::vector<int>* chosen) override {
    *score = 0;
    chosen->assign(c.fitting_devices.begin(), c.fitting_devices.begin() + r.device_count);
    return true;
  }

 private:
  bool uniform_;
};

// A uniform-score policy is ranked from each node's capacity summary where that is exact (no FitNode): on random
// clusters (exclusive-mode devices, sharer limits, NUMA, vendors) and random steps, its placements equal those of
// the same policy ranked by FitNode, draw for draw.
TEST(SchedulerPropertyTest, UniformScoreByCapacityEqualsFitNode) {
  Rng rng(77);
  ClusterState state = RandomCluster(rng, 14);
  FlatRandomPolicy by_capacity(true), by_fit(false);
  Scheduler fast(state, by_capacity, SchedulerOptions{.explain = false});
  Scheduler slow(state, by_fit, SchedulerOptions{.explain = false});
  std::vector<Allocation> running;
  int placed = 0;
  for (int step = 0; step < 15'000; ++step) {
    const int op = std::uniform_int_distribution<int>(0, 99)(rng);
    if (op < 55) {
      const TaskRequest r = RandomRequest(rng);
      Rng a(step), b(step);
      ScheduleOutcome x = fast.Schedule(r, a);
      ScheduleOutcome y = slow.Schedule(r, b);
      ASSERT_TRUE(SameOutcome(x, y)) << "step " << step << " nodes " << x.allocation.node << "/" << y.allocation.node;
      if (y.kind == OutcomeKind::kPlaced) {
        ASSERT_TRUE(state.Apply(y.allocation).ok()) << "step " << step;
        running.push_back(y.allocation);
        ++placed;
      }
    } else if (op < 92 && !running.empty()) {
      ASSERT_NO_FATAL_FAILURE(ReleaseRandomRunning(state, running, rng));
    } else {
      ASSERT_NO_FATAL_FAILURE(ChangeRandomNodeCondition(state, rng));
    }
  }
  EXPECT_GT(placed, 1500);
  EXPECT_LT(fast.stats().fit_calls, slow.stats().fit_calls);  // the capacity summary decided verdicts
}

TEST(SchedulerTest, RandomTieBreakInTheScoreCacheIsUniform) {
  ClusterState s;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(s.AddNode(MakeNode("n" + std::to_string(i)).WithCpu(1000).Build()).ok());
  ASSERT_TRUE(s.SetNodeCordoned(2, true).ok());
  FlatRandomPolicy policy;
  Scheduler scheduler(s, policy);
  ASSERT_EQ(scheduler.mode(), SchedulerMode::kScoreCache);
  Rng rng(5);
  TaskRequest r;
  r.cpu_milli = 100;
  std::vector<int> seen(4, 0);
  for (int i = 0; i < 600; ++i) {
    ScheduleOutcome o = scheduler.Schedule(r, rng);
    ASSERT_EQ(o.kind, OutcomeKind::kPlaced);
    ++seen[o.allocation.node];
  }
  EXPECT_EQ(seen[2], 0);  // cordoned
  for (int n : {0, 1, 3}) EXPECT_GT(seen[n], 150) << n;
}

// A node of A100 80GB MIG instances of these profiles, one device each, with the memory the driver reports.
Node MigInstanceNode(const std::vector<std::string>& profiles) {
  const MigModel& model = *MigModelNamed("A100-80GB");
  Node n = MakeNode("n").WithGpus(static_cast<int>(profiles.size()), "A100-SXM4-80GB", 81920).Build();
  for (size_t i = 0; i < profiles.size(); ++i) {
    const MigProfile& p = model.profiles[static_cast<size_t>(MigProfileIndex(model, profiles[i]))];
    n.devices[i].model = "A100-SXM4-80GB MIG " + profiles[i];
    n.devices[i].mode = DeviceMode::kMig;
    n.devices[i].max_sharers = 1;
    n.devices[i].compute_milli = MigComputeMilli(model, p);
    n.devices[i].memory_mib = p.memory_mib * 96 / 100;
  }
  return n;
}

// HAMi's dynamic-mig rule holds whatever the policy: a request given as memory and cores takes the smallest free
// MIG instance that covers it (fit.cc, KeepSmallestMigInstances), here on a GPU cut into 3g.40gb, 1g.10gb, 2g.20gb.
// Runs `check` once for every policy, each on a cluster of the one node `n`.
void ForEveryPolicyOn(const Node& n, const std::function<void(ClusterState&, PlacementPolicy&)>& check) {
  for (std::string_view name : PolicyNames()) {
    SCOPED_TRACE(name);
    auto policy = MakePolicy(name);
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    ClusterState state;
    ASSERT_TRUE(state.AddNode(n).ok());
    check(state, **policy);
  }
}

TEST(SchedulerTest, EveryPolicyGivesAPlainRequestTheSmallestCoveringMigInstance) {
  ForEveryPolicyOn(MigInstanceNode({"3g.40gb", "1g.10gb", "2g.20gb"}),
                   [](ClusterState& state, PlacementPolicy& policy) {
                     Rng rng(1);
                     TaskRequest r;
                     r.cpu_milli = 100;
                     r.memory_mib = 100;
                     r.device_count = 1;
                     r.device_memory_mib = 8192;
                     r.device_compute_milli = 100;
                     ScheduleOutcome small = Schedule(state, r, policy, rng);
                     ASSERT_EQ(small.kind, OutcomeKind::kPlaced);
                     EXPECT_EQ(small.allocation.devices.at(0).device, 1);  // the 1g.10gb
                     r.device_memory_mib = 15360;
                     r.device_compute_milli = 200;
                     ScheduleOutcome medium = Schedule(state, r, policy, rng);
                     ASSERT_EQ(medium.kind, OutcomeKind::kPlaced);
                     EXPECT_EQ(medium.allocation.devices.at(0).device, 2);  // the 2g.20gb
                   });
}

// On a node whose MIG geometry the server plans, a request by size takes only an instance of the profile the
// server would make for it; a larger free one is left, and the request says it waits for its own.
TEST(SchedulerTest, OnADynamicMigNodeARequestBySizeTakesOnlyTheInstanceMadeForIt) {
  Node n = MigInstanceNode({"3g.40gb", "2g.20gb"});
  TaskRequest r;
  r.cpu_milli = 100;
  r.memory_mib = 100;
  r.device_count = 1;
  r.device_memory_mib = 8192;  // a 1g.10gb's worth
  for (bool dynamic : {false, true}) {
    SCOPED_TRACE(dynamic ? "dynamic" : "static");
    if (dynamic) n.labels[std::string(kMigDynamicLabel)] = "0@0=A100-80GB:3g.40gb@0,2g.20gb@4";
    ClusterState state;
    ASSERT_TRUE(state.AddNode(n).ok());
    NodeCandidate candidate;
    NodeVerdict verdict;
    const bool fits = FitNode(state, 0, r, false, &candidate, &verdict);
    EXPECT_EQ(fits, !dynamic);
    if (dynamic) {
      EXPECT_EQ(verdict.reason, FitReason::kMigInstanceToBeMade);
      EXPECT_EQ(DescribeReason(verdict.reason, "", r), "waiting for a MIG instance of its size to be made");
    } else {
      EXPECT_EQ(candidate.fitting_devices, std::vector<int>{1});  // the smallest there is
    }
    TaskRequest medium = r;
    medium.device_memory_mib = 15360;  // a 1g.20gb or a 2g.20gb; 20 % of the cores: a 2g.20gb
    medium.device_compute_milli = 200;
    ASSERT_TRUE(FitNode(state, 0, medium, false, &candidate, nullptr));
    EXPECT_EQ(candidate.fitting_devices, std::vector<int>{1});
    TaskRequest picky = r;  // a selector: no instance is made for it, it takes the smallest there is
    picky.type_include = {"MIG"};
    ASSERT_TRUE(FitNode(state, 0, picky, false, &candidate, nullptr));
    EXPECT_EQ(candidate.fitting_devices, std::vector<int>{1});
  }
}

// The wait for an instance of its own size holds only while the server could make one on the node: a GPU offered
// by its instances only is not repartitioned while any device of the node is in use, so there a request by size
// takes the smallest free instance that covers it, whatever the policy (the scheduler's cached path too).
TEST(SchedulerTest, ARequestBySizeTakesWhatFitsWhereItsOwnInstanceCannotBeMade) {
  Node n = MigInstanceNode({"3g.40gb", "2g.20gb"});
  n.labels[std::string(kMigDynamicLabel)] = "0=A100-80GB:3g.40gb@0,2g.20gb@4";
  TaskRequest r;
  r.cpu_milli = 100;
  r.memory_mib = 100;
  r.device_count = 1;
  r.device_memory_mib = 8192;  // a 1g.10gb's worth
  ForEveryPolicyOn(n, [&](ClusterState& state, PlacementPolicy& policy) {
    Scheduler scheduler(state, policy);
    Rng rng(1);
    ScheduleOutcome idle = scheduler.Schedule(r, rng);  // the idle GPU is repartitioned for it
    EXPECT_EQ(idle.kind, OutcomeKind::kWait);
    EXPECT_EQ(idle.reason, "1 node: waiting for a MIG instance of its size to be made");
    ASSERT_TRUE(state.Apply(Allocation{0, 100, 100, {DeviceGrant{1, 1000, 100}}}).ok());  // the 2g.20gb in use
    ScheduleOutcome busy = scheduler.Schedule(r, rng);
    ASSERT_EQ(busy.kind, OutcomeKind::kPlaced) << busy.reason;
    EXPECT_EQ(busy.allocation.devices.at(0).device, 0);  // the 3g.40gb
    NodeCandidate candidate;
    ASSERT_TRUE(FitNode(state, 0, r, false, &candidate, nullptr));
    EXPECT_EQ(candidate.fitting_devices, std::vector<int>{0});
  });
}

}  // namespace
}  // namespace xpool
