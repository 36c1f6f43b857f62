// The server's scheduling loop and `xpool sim fill` make the same decisions: a gpu_spec-constrained variant of a
// seeded synthetic workload is replayed pod by pod through RunFill and through a ControlPlane (the server's
// queue and RunSchedulingPass over a SQLite store), with the same policy, node order and arrival order, and every
// pod must land on the same node and devices with the same grants, or be turned away by both.
//
// How a trace pod becomes a job: cpu, memory and gpu_spec (as `gpu_type`) carry over; a whole-GPU pod asks for
// `gpu: N` (whole devices, as HAMi's defaults give); a GPU-sharing pod asks for `gpucores` = its GPU share and
// `gpumem: 1` MiB, because a job spec cannot ask for compute without device memory, while a trace pod asks for
// none. One MiB never binds on these 15–32 GiB devices, so the fits are the same; the grants' memory differs by
// exactly that and is compared accordingly. A pod that fits nowhere is cancelled, as fill skips it.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/testing/test_util.h"
#include "model/job_spec.h"
#include "server/control_plane.h"
#include "sim/fill.h"
#include "sim/trace.h"
#include "sim/variants.h"
#include "store/state_store.h"

namespace xpool {
namespace {

std::vector<sim::TraceNode> SyntheticNodes() {
  std::vector<sim::TraceNode> nodes;
  auto add = [&](int count, int gpus, const std::string& model, int64_t cpu_milli, int64_t memory_mib) {
    for (int i = 0; i < count; ++i) {
      nodes.push_back({.name = (model.empty() ? "cpu" : model) + "-" + std::to_string(i),
                       .cpu_milli = cpu_milli,
                       .memory_mib = memory_mib,
                       .gpu_count = gpus,
                       .model = model});
    }
  };
  add(3, 8, "G3", 96000, 786432);  // the scarce fleet constrained pods aim at
  add(8, 4, "V100M32", 64000, 393216);
  add(12, 2, "T4", 32000, 131072);
  add(8, 1, "P100", 16000, 65536);
  add(3, 0, "", 64000, 262144);
  return nodes;
}

// Pods drawn from fixed distributions with a seeded generator: mostly GPU-sharing pods, some whole and
// multi-GPU pods, some CPU-only ones.
std::vector<sim::TracePod> SyntheticPods(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  const int64_t shares[] = {100, 250, 300, 460, 500, 700};
  const int multi[] = {2, 4, 8};
  std::vector<sim::TracePod> pods;
  for (int i = 0; i < 160; ++i) {
    sim::TracePod p;
    p.name = "pod-" + std::to_string(i);
    p.cpu_milli = 1000 * (1 + pick(8));
    p.memory_mib = 1024 * (1 + pick(16));
    const int kind = pick(10);
    if (kind < 6) {
      p.num_gpu = 1;
      p.gpu_milli = shares[pick(6)];
    } else if (kind < 8) {
      p.num_gpu = 1;
      p.gpu_milli = 1000;
    } else if (kind < 9) {
      p.num_gpu = multi[pick(3)];
      p.gpu_milli = 1000;
      p.cpu_milli *= p.num_gpu;
    }
    pods.push_back(std::move(p));
  }
  return pods;
}

JobSpec JobOf(const sim::TracePod& pod) {
  JobSpec spec;
  spec.name = pod.name;
  spec.command = {"true"};
  spec.resources.cpu_milli = pod.cpu_milli;
  spec.resources.memory_mib = pod.memory_mib;
  spec.resources.gpu = pod.num_gpu;
  spec.resources.gpu_type = pod.gpu_spec;
  if (pod.num_gpu > 0 && pod.gpu_milli < kWholeDeviceMilli) {
    spec.resources.gpucores = static_cast<int>(pod.gpu_milli / 10);
    spec.resources.gpumem_mib = 1;
  }
  return spec;
}

class FillServerAgreementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir("fill_server_agreement");
    Result<std::unique_ptr<StateStore>> store = OpenStateStore((dir_ / "xpool.db").string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    Result<TenantRecord> tenant = store_->CreateTenant("team", false, TenantQuota{}, clock_.NowMicros());
    ASSERT_TRUE(tenant.ok()) << tenant.status().ToString();
    tenant_ = tenant->id;
  }
  void TearDown() override {
    control_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_;
  FakeClock clock_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<server::ControlPlane> control_;
  TenantId tenant_;
};

TEST_F(FillServerAgreementTest, AConstrainedVariantLandsAlikeInTheServerAndInSimFill) {
  const std::vector<sim::TraceNode> nodes = SyntheticNodes();
  Result<sim::Variant> variant = sim::ParseVariant("spec:share=35:pop=small:lists=20:seed=5");
  ASSERT_TRUE(variant.ok()) << variant.status().ToString();
  Result<std::vector<sim::TracePod>> pods = sim::ApplyVariant(SyntheticPods(2026), nodes, *variant);
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  Result<ClusterState> cluster = sim::BuildCluster(nodes);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();

  const sim::FillOptions options{.policy = "default", .seed = 42, .tune_percent = 130, .record_placements = true};
  Result<sim::FillCurve> fill = sim::RunFill(*cluster, *pods, options);
  ASSERT_TRUE(fill.ok()) << fill.status().ToString();

  // The server: the same nodes in the order the fill run used, the same pods in the same order, one pass each.
  server::ControlPlaneOptions cp_options;
  cp_options.policy = options.policy;
  control_ = std::make_unique<server::ControlPlane>(*store_, clock_, nullptr, cp_options);
  ASSERT_TRUE(control_->Rebuild().ok());
  const ClusterState ordered = sim::OrderNodes(*cluster, options.node_order, options.seed);
  for (int n = 0; n < ordered.node_count(); ++n) ASSERT_TRUE(control_->RegisterNode(ordered.node(n)).ok());
  std::map<std::string, const sim::TracePod*> pod_by_name;
  for (const sim::TracePod& p : *pods) pod_by_name[p.name] = &p;

  int constrained = 0, placed = 0, skipped = 0;
  for (const sim::FillPlacement& expected : fill->placements) {
    const sim::TracePod& pod = *pod_by_name.at(expected.pod);
    constrained += pod.gpu_spec.empty() ? 0 : 1;
    Result<JobRecord> job = control_->Submit(tenant_, JobOf(pod));
    ASSERT_TRUE(job.ok()) << expected.pod << ": " << job.status().ToString();
    control_->RunPass(/*full=*/false);
    Result<std::vector<AllocationRecord>> got = store_->JobAllocations(job->id);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    if (expected.node.empty()) {
      ++skipped;
      EXPECT_TRUE(got->empty()) << expected.pod << " fits nowhere in sim fill but the server placed it on "
                                << got->front().node;
      ASSERT_TRUE(control_->Cancel(job->id, "fits nowhere").ok());
      continue;
    }
    ++placed;
    ASSERT_EQ(got->size(), 1u) << expected.pod << " went to " << expected.node << " in sim fill; the server did not "
                               << "place it";
    EXPECT_EQ(got->front().node, expected.node) << expected.pod;
    const Node& node = ordered.node(ordered.FindNode(expected.node));
    std::vector<DeviceGrantRecord> want;
    for (const DeviceGrant& g : expected.devices) {
      const bool sharing = pod.gpu_milli < kWholeDeviceMilli;
      want.push_back({.device_uuid = node.devices[g.device].uuid,
                      .memory_mib = sharing ? g.memory_mib + 1 : node.devices[g.device].memory_mib,
                      .compute_milli = g.compute_milli});
    }
    EXPECT_EQ(got->front().devices, want) << expected.pod << " on " << expected.node;
  }
  // The comparison covered what it is for: constrained pods, a cluster filled past its capacity.
  EXPECT_GT(constrained, 20);
  EXPECT_GT(placed, 100);
  EXPECT_GT(skipped, 5);
  EXPECT_EQ(fill->pods_placed, placed);
}

}  // namespace
}  // namespace xpool
