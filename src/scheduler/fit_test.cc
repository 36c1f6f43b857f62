#include "scheduler/fit.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "model/node_builder.h"

namespace xpool {
namespace {

TaskRequest Gpu(int count, int64_t compute_milli, int64_t memory_mib = 0) {
  TaskRequest r;
  r.cpu_milli = 1000;
  r.memory_mib = 1024;
  r.device_count = count;
  r.device_compute_milli = compute_milli;
  r.device_memory_mib = memory_mib;
  return r;
}

// One row: a node, something already allocated on it, a request, and what Fit must say.
struct FitCase {
  std::string name;
  Node node;
  std::vector<Allocation> existing;  // node index 0
  std::function<void(ClusterState&)> mutate;
  TaskRequest request;
  FitReason want_reason;          // kFits = must fit
  std::vector<int> want_devices;  // when it fits
  bool want_fits_when_empty = true;
};

Allocation OnDevices(std::vector<DeviceGrant> grants, int64_t cpu = 0, int64_t memory = 0) {
  Allocation a;
  a.node = 0;
  a.cpu_milli = cpu;
  a.memory_mib = memory;
  a.devices = std::move(grants);
  return a;
}

Node FourA100() { return MakeNode("n").WithCpu(16000).WithMemory(65536).WithGpus(4, "A100-SXM4", 40960).Build(); }

std::vector<FitCase> Cases() {
  std::vector<FitCase> cases;
  auto add = [&](FitCase c) { cases.push_back(std::move(c)); };
  add({"plain sharer fits every device", FourA100(), {}, nullptr, Gpu(1, 300, 1000), FitReason::kFits, {0, 1, 2, 3}});
  add({"cpu-only request",
       FourA100(),
       {},
       nullptr,
       [] {
         TaskRequest r;
         r.cpu_milli = 500;
         return r;
       }(),
       FitReason::kFits,
       {}});
  add({"node not ready",
       FourA100(),
       {},
       [](ClusterState& s) { ASSERT_TRUE(s.SetNodeReady(0, false).ok()); },
       Gpu(1, 300),
       FitReason::kNodeNotReady,
       {}});
  add({"node cordoned",
       FourA100(),
       {},
       [](ClusterState& s) { ASSERT_TRUE(s.SetNodeCordoned(0, true).ok()); },
       Gpu(1, 300),
       FitReason::kNodeCordoned,
       {}});
  add({"not enough cpu now", FourA100(), {OnDevices({}, 15500)}, nullptr, Gpu(1, 300), FitReason::kNotEnoughCpu, {}});
  add({"cpu beyond capacity",
       FourA100(),
       {},
       nullptr,
       [] {
         auto r = Gpu(1, 300);
         r.cpu_milli = 17000;
         return r;
       }(),
       FitReason::kNotEnoughCpu,
       {},
       false});
  add({"not enough memory",
       FourA100(),
       {OnDevices({}, 0, 65000)},
       nullptr,
       Gpu(1, 300),
       FitReason::kNotEnoughMemory,
       {}});
  add({"too many devices for the node",
       FourA100(),
       {},
       nullptr,
       Gpu(5, 1000),
       FitReason::kTooFewDevicesOnNode,
       {},
       false});
  add({"vendor mismatch",
       FourA100(),
       {},
       nullptr,
       [] {
         auto r = Gpu(1, 300);
         r.vendor = Vendor::kAscend;
         return r;
       }(),
       FitReason::kVendorMismatch,
       {},
       false});
  add({"vendor match",
       FourA100(),
       {},
       nullptr,
       [] {
         auto r = Gpu(1, 300);
         r.vendor = Vendor::kNvidia;
         return r;
       }(),
       FitReason::kFits,
       {0, 1, 2, 3}});
  add({"type include substring, case-insensitive",
       FourA100(),
       {},
       nullptr,
       [] {
         auto r = Gpu(1, 300);
         r.type_include = {"a100"};
         return r;
       }(),
       FitReason::kFits,
       {0, 1, 2, 3}});
  add({"type include misses",
       FourA100(),
       {},
       nullptr,
       [] {
         auto r = Gpu(1, 300);
         r.type_include = {"T4", "V100"};
         return r;
       }(),
       FitReason::kTypeNotIncluded,
       {},
       false});
  add({"type exclude hits",
       FourA100(),
       {},
       nullptr,
       [] {
         auto r = Gpu(1, 300);
         r.type_exclude = {"SXM"};
         return r;
       }(),
       FitReason::kTypeExcluded,
       {},
       false});
  add({"type exclude misses",
       FourA100(),
       {},
       nullptr,
       [] {
         auto r = Gpu(1, 300);
         r.type_exclude = {"T4"};
         return r;
       }(),
       FitReason::kFits,
       {0, 1, 2, 3}});
  add({"uuid include picks one device",
       FourA100(),
       {},
       nullptr,
       [] {
         auto r = Gpu(1, 300);
         r.uuid_include = {"n-gpu2"};
         return r;
       }(),
       FitReason::kFits,
       {2}});
  add({"uuid include unknown",
       FourA100(),
       {},
       nullptr,
       [] {
         auto r = Gpu(1, 300);
         r.uuid_include = {"other"};
         return r;
       }(),
       FitReason::kUuidNotIncluded,
       {},
       false});
  add({"uuid exclude removes devices",
       FourA100(),
       {},
       nullptr,
       [] {
         auto r = Gpu(1, 300);
         r.uuid_exclude = {"n-gpu0", "n-gpu3"};
         return r;
       }(),
       FitReason::kFits,
       {1, 2}});
  add({"uuid exclude all",
       FourA100(),
       {},
       nullptr,
       [] {
         auto r = Gpu(1, 300);
         r.uuid_exclude = {"n-gpu0", "n-gpu1", "n-gpu2", "n-gpu3"};
         return r;
       }(),
       FitReason::kUuidExcluded,
       {},
       false});
  add({"unhealthy device skipped",
       FourA100(),
       {},
       [](ClusterState& s) { ASSERT_TRUE(s.SetDeviceHealthy(0, 1, false).ok()); },
       Gpu(1, 300),
       FitReason::kFits,
       {0, 2, 3}});
  {
    Node n = FourA100();
    for (Device& d : n.devices) d.cordoned = true;
    add({"cordoned devices", n, {}, nullptr, Gpu(1, 300), FitReason::kDeviceCordoned, {}});
  }
  add({"device memory MiB too large",
       FourA100(),
       {},
       nullptr,
       Gpu(1, 300, 50000),
       FitReason::kDeviceMemoryTooSmall,
       {},
       false});
  add({"device memory MiB fits exactly", FourA100(), {}, nullptr, Gpu(1, 300, 40960), FitReason::kFits, {0, 1, 2, 3}});
  add({"not enough device memory now",
       FourA100(),
       {OnDevices({{0, 30000, 0}}), OnDevices({{1, 30000, 0}}), OnDevices({{2, 30000, 0}}), OnDevices({{3, 30000, 0}})},
       nullptr,
       Gpu(1, 0, 20000),
       FitReason::kNotEnoughDeviceMemory,
       {}});
  add({"memory percent fits one device",
       FourA100(),
       {OnDevices({{0, 30000, 0}}), OnDevices({{1, 30000, 0}}), OnDevices({{2, 10000, 0}})},
       nullptr,
       [] {
         auto r = Gpu(1, 0);
         r.device_memory_percent = 50;
         return r;
       }(),
       FitReason::kFits,
       {2, 3}});
  add({"compute milli exhausted",
       FourA100(),
       {OnDevices({{0, 0, 800}}), OnDevices({{1, 0, 800}}), OnDevices({{2, 0, 800}}), OnDevices({{3, 0, 800}})},
       nullptr,
       Gpu(1, 300),
       FitReason::kNotEnoughDeviceCompute,
       {}});
  add({"compute milli fits leftover",
       FourA100(),
       {OnDevices({{0, 0, 700}}), OnDevices({{1, 0, 701}})},
       nullptr,
       Gpu(1, 300),
       FitReason::kFits,
       {0, 2, 3}});
  add({"max sharers reached",
       MakeNode("n").WithGpus(1, "T4", 15360).WithMaxSharers(2).Build(),
       {OnDevices({{0, 0, 0}}), OnDevices({{0, 0, 0}})},
       nullptr,
       Gpu(1, 0),
       FitReason::kTooManySharers,
       {}});
  add({"exclusive request needs an idle device",
       FourA100(),
       {OnDevices({{0, 0, 100}}), OnDevices({{1, 0, 100}}), OnDevices({{2, 0, 100}})},
       nullptr,
       Gpu(1, 1000),
       FitReason::kFits,
       {3}});
  add({"exclusive request, all busy",
       MakeNode("n").WithGpus(1, "T4", 15360).Build(),
       {OnDevices({{0, 0, 0}})},
       nullptr,
       Gpu(1, 1000),
       FitReason::kDeviceBusy,
       {}});
  add({"device held exclusively",
       MakeNode("n").WithGpus(1, "T4", 15360).Build(),
       {OnDevices({{0, 15360, 1000}})},
       nullptr,
       Gpu(1, 0),
       FitReason::kDeviceHeldExclusively,
       {}});
  {
    Node n = MakeNode("n").WithGpus(2, "T4", 15360).Build();
    n.devices[0].mode = DeviceMode::kExclusive;
    add({"exclusive-mode device busy for a sharer",
         n,
         {OnDevices({{1, 0, 100}})},
         nullptr,
         Gpu(1, 100),
         FitReason::kFits,
         {0, 1}});
    add({"exclusive-mode device takes whole",
         n,
         {OnDevices({{0, 15360, 1000}})},
         nullptr,
         Gpu(1, 100),
         FitReason::kFits,
         {1}});
  }
  {
    // An MPS server serves one user at a time: a device in MPS mode takes only its present user's tasks.
    Node n = MakeNode("n").WithGpus(2, "A100", 40960).Build();
    for (Device& d : n.devices) d.mode = DeviceMode::kMps;
    Allocation of_user_7 = OnDevices({{0, 1024, 300}});
    of_user_7.mps_user = 7;
    Allocation other_of_user_7 = OnDevices({{1, 1024, 300}});
    other_of_user_7.mps_user = 7;
    TaskRequest user_7 = Gpu(1, 300), user_8 = Gpu(1, 300), user_8_memory = Gpu(1, 300, 2048);
    user_7.mps_user = 7;
    user_8.mps_user = 8;
    user_8_memory.mps_user = 8;
    add({"MPS device joins its own user's tasks", n, {of_user_7}, nullptr, user_7, FitReason::kFits, {0, 1}});
    add({"MPS device held by another user", n, {of_user_7}, nullptr, user_8, FitReason::kFits, {1}});
    add({"every MPS device held by another user",
         n,
         {of_user_7, other_of_user_7},
         nullptr,
         user_8,
         FitReason::kMpsAnotherUser,
         {}});
    add({"MPS devices held by another user, device memory asked",
         n,
         {of_user_7, other_of_user_7},
         nullptr,
         user_8_memory,
         FitReason::kMpsAnotherUser,
         {}});
    Node shared = MakeNode("n").WithGpus(1, "A100", 40960).Build();
    add({"shared device takes every user's tasks", shared, {of_user_7}, nullptr, user_8, FitReason::kFits, {0}});
  }
  {
    Node n = MakeNode("n").WithGpus(2, "A100", 40960).Build();
    n.devices[0].compute_milli = 500;  // a slice (MIG-like) worth half a device
    n.devices[0].mode = DeviceMode::kMig;
    n.devices[1].compute_milli = 500;
    add({"compute above the device's total",
         n,
         {},
         nullptr,
         Gpu(1, 800),
         FitReason::kDeviceComputeTooSmall,
         {},
         false});
    add({"mig slice shared like any device",
         n,
         {OnDevices({{1, 0, 400}})},
         nullptr,
         Gpu(1, 300),
         FitReason::kFits,
         {0}});
  }
  {
    // GPU 0 partitioned (instances named as NVML names MIG devices), GPU 1 whole.
    Node n = MakeNode("n").WithGpus(4, "A100-SXM4-80GB", 81920).Build();
    const char* models[] = {"A100-SXM4-80GB MIG 3g.40gb", "A100-SXM4-80GB MIG 1g.10gb",
                            "A100-SXM4-80GB MIG 1g.10gb+me"};
    for (int i = 0; i < 3; ++i) {
      n.devices[i].model = models[i];
      n.devices[i].mode = DeviceMode::kMig;
      n.devices[i].max_sharers = 1;
      n.devices[i].compute_milli = i == 0 ? 428 : 142;
      n.devices[i].memory_mib = i == 0 ? 40192 : 9856;
    }
    TaskRequest one_g = Gpu(1, 1000);
    one_g.mig_profile = "1g.10gb";
    add({"mig request takes only an instance of its profile", n, {}, nullptr, one_g, FitReason::kFits, {1}});
    add({"mig request: its instance busy",
         n,
         {OnDevices({{1, 9856, 142}})},
         nullptr,
         one_g,
         FitReason::kDeviceHeldExclusively,
         {}});
    TaskRequest seven_g = Gpu(1, 1000);
    seven_g.mig_profile = "7g.80gb";
    add({"mig request without such an instance", n, {}, nullptr, seven_g, FitReason::kMigProfileMismatch, {}, false});
    // A plain request is offered the smallest instances (a 1g.10gb, not its +me twin nor the 3g.40gb) and the
    // whole GPU; asking more memory than a 1g holds, the 3g.40gb.
    add({"a plain request may take the smallest instance whole",
         n,
         {},
         nullptr,
         Gpu(1, 1000),
         FitReason::kFits,
         {1, 3}});
    TaskRequest fifteen_gib = Gpu(1, 200);
    fifteen_gib.device_memory_mib = 15360;
    add({"a plain request: the smallest instance that covers it",
         n,
         {},
         nullptr,
         fifteen_gib,
         FitReason::kFits,
         {0, 3}});
    add({"the 1g.10gb busy: its +me twin is the smallest left",
         n,
         {OnDevices({{1, 9856, 142}})},
         nullptr,
         Gpu(1, 100),
         FitReason::kFits,
         {2, 3}});
  }
  add({"too few fitting devices",
       FourA100(),
       {OnDevices({{0, 0, 1000}}), OnDevices({{1, 0, 1000}}), OnDevices({{2, 0, 1000}})},
       nullptr,
       Gpu(2, 1000),
       FitReason::kTooFewFittingDevices,
       {}});
  {
    Node n = MakeNode("n").WithGpus(4, "A100", 40960).WithNumaNodes(2).Build();
    TaskRequest r = Gpu(2, 1000);
    r.numa_bind = true;
    add({"numa bind fits on one numa node", n, {OnDevices({{0, 0, 1000}})}, nullptr, r, FitReason::kFits, {1, 2, 3}});
    add({"numa bind split",
         n,
         {OnDevices({{0, 0, 1000}}), OnDevices({{2, 0, 1000}})},
         nullptr,
         r,
         FitReason::kNumaSplit,
         {}});
    TaskRequest loose = Gpu(2, 1000);
    add({"no numa bind, split is fine",
         n,
         {OnDevices({{0, 0, 1000}}), OnDevices({{2, 0, 1000}})},
         nullptr,
         loose,
         FitReason::kFits,
         {1, 3}});
  }
  return cases;
}

TEST(FitTest, Table) {
  for (const FitCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    ClusterState state;
    ASSERT_TRUE(state.AddNode(c.node).ok());
    for (const Allocation& a : c.existing) ASSERT_TRUE(state.Apply(a).ok()) << c.name;
    if (c.mutate) c.mutate(state);
    ASSERT_TRUE(ValidateTaskRequest(c.request).ok());
    NodeCandidate candidate;
    NodeVerdict verdict;
    const bool fits = FitNode(state, 0, c.request, false, &candidate, &verdict);
    if (c.want_reason == FitReason::kFits) {
      EXPECT_TRUE(fits) << "reason " << static_cast<int>(verdict.reason);
      EXPECT_EQ(candidate.fitting_devices, c.want_devices);
    } else {
      EXPECT_FALSE(fits);
      EXPECT_EQ(static_cast<int>(verdict.reason), static_cast<int>(c.want_reason));
    }
    NodeCandidate empty_candidate;
    NodeVerdict empty_verdict;
    EXPECT_EQ(FitNode(state, 0, c.request, true, &empty_candidate, &empty_verdict), c.want_fits_when_empty);
  }
}

TEST(FitTest, GrantRules) {
  Device d;
  d.memory_mib = 40960;
  d.compute_milli = 1000;
  TaskRequest r = Gpu(1, 250, 1000);
  DeviceGrant g = GrantFor(d, r);
  EXPECT_EQ(g.memory_mib, 1000);
  EXPECT_EQ(g.compute_milli, 250);
  r.device_memory_mib = 0;
  r.device_memory_percent = 25;
  EXPECT_EQ(GrantFor(d, r).memory_mib, 10240);
  r.device_memory_percent = 0;
  EXPECT_EQ(GrantFor(d, r).memory_mib, 0);  // a pure sharer of memory
  r.device_compute_milli = 1000;
  g = GrantFor(d, r);
  EXPECT_EQ(g.memory_mib, 40960);
  EXPECT_EQ(g.compute_milli, 1000);
  d.mode = DeviceMode::kExclusive;
  r.device_compute_milli = 10;
  EXPECT_EQ(GrantFor(d, r).compute_milli, 1000);
  // Ascend memory is granted in vNPU template steps (granularity from the vendor profile).
  Device npu;
  npu.vendor = Vendor::kAscend;
  npu.memory_mib = 65536;
  TaskRequest a = Gpu(1, 0, 5000);
  const int64_t step = ProfileFor(Vendor::kAscend).memory_granularity_mib;
  ASSERT_GT(step, 1);
  EXPECT_EQ(GrantFor(npu, a).memory_mib % step, 0);
  EXPECT_GE(GrantFor(npu, a).memory_mib, 5000);
  EXPECT_LT(GrantFor(npu, a).memory_mib, 5000 + step);
}

TEST(FitTest, TallyRendersCountsMostFrequentFirst) {
  ClusterState state;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(state.AddNode(MakeNode("t4-" + std::to_string(i)).WithGpus(2, "T4", 15360).Build()).ok());
  }
  ASSERT_TRUE(state.AddNode(MakeNode("small").WithCpu(500).WithGpus(2, "A100", 40960).Build()).ok());
  TaskRequest r = Gpu(1, 100);
  r.type_exclude = {"T4"};
  ReasonTally tally(r);
  for (int n = 0; n < state.node_count(); ++n) {
    NodeCandidate c;
    NodeVerdict v;
    ASSERT_FALSE(FitNode(state, n, r, false, &c, &v));
    tally.Add(state, n, v);
  }
  EXPECT_EQ(tally.Render(), "3 nodes: type T4 excluded; 1 node: not enough CPU");
}

// FitNode's inlined check for plain requests (no vendor, type, uuid or device memory) must accept exactly the
// devices FitDevice accepts: random devices (modes, health, sharer limits, compute below a whole device) and usage.
TEST(FitTest, PlainRequestsFitTheDevicesFitDeviceAccepts) {
  Rng rng(20261201);
  auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int fitted = 0;
  for (int round = 0; round < 300; ++round) {
    const int gpus = pick(1, 8);
    Node n =
        MakeNode("n").WithCpu(64000).WithMemory(262144).WithGpus(gpus, "G2", 16384).WithMaxSharers(pick(1, 4)).Build();
    for (Device& d : n.devices) {
      if (pick(0, 5) == 0) d.mode = DeviceMode::kExclusive;
      if (pick(0, 7) == 0) d.healthy = false;
      if (pick(0, 7) == 0) d.cordoned = true;
      if (pick(0, 5) == 0) d.compute_milli = 100 * pick(5, 9);
      if (pick(0, 3) == 0) d.mode = DeviceMode::kMps;
    }
    ClusterState state;
    ASSERT_TRUE(state.AddNode(std::move(n)).ok());
    for (int i = 0; i < pick(0, 12); ++i) {  // some usage; over-booking attempts are refused
      Allocation a;
      a.node = 0;
      a.devices.push_back({pick(0, gpus - 1), 1024 * pick(0, 4), 50 * pick(0, 20)});
      a.mps_user = static_cast<uint64_t>(pick(1, 2));
      (void)state.Apply(a);
    }
    for (int q = 0; q < 20; ++q) {
      TaskRequest r;
      r.cpu_milli = 1000;
      r.device_count = pick(1, 3);
      r.device_compute_milli = r.device_count > 1 || pick(0, 2) == 0 ? 1000 : 50 * pick(1, 19);
      r.mps_user = static_cast<uint64_t>(pick(0, 2));
      NodeCandidate candidate;
      NodeVerdict verdict;
      std::vector<int> expected;
      for (int d = 0; d < gpus; ++d) {
        if (FitDevice(state.node(0).devices[d], &state.usage(0).devices[d], r) == FitReason::kFits) {
          expected.push_back(d);
        }
      }
      const bool fits = FitNode(state, 0, r, false, &candidate, &verdict);
      EXPECT_EQ(fits, static_cast<int>(expected.size()) >= r.device_count) << round << "/" << q;
      if (fits) {
        EXPECT_EQ(candidate.fitting_devices, expected) << round << "/" << q;
        ++fitted;
      }
      // Without a verdict wanted (the scoring scans), the same answer and the same devices.
      NodeCandidate terse;
      EXPECT_EQ(FitNode(state, 0, r, false, &terse, nullptr), fits) << round << "/" << q;
      if (fits) {
        EXPECT_EQ(terse.fitting_devices, expected) << round << "/" << q;
      }
    }
  }
  EXPECT_GT(fitted, 500);
}

}  // namespace
}  // namespace xpool
