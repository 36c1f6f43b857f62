#include "sim/fill.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/report.h"

namespace xpool::sim {
namespace {

std::vector<TraceNode> Nodes() {
  std::vector<TraceNode> nodes;
  for (int i = 0; i < 4; ++i) nodes.push_back({"n" + std::to_string(i), 32000, 131072, 4, i < 2 ? "G2" : "T4"});
  return nodes;
}

std::vector<TracePod> Pods() {
  std::vector<TracePod> pods;
  auto add = [&](int64_t cpu, int gpus, int64_t milli) {
    TracePod p;
    p.name = "p" + std::to_string(pods.size());
    p.cpu_milli = cpu;
    p.memory_mib = 1024;
    p.num_gpu = gpus;
    p.gpu_milli = milli;
    pods.push_back(p);
  };
  add(4000, 1, 500);
  add(2000, 1, 250);
  add(8000, 1, 1000);
  add(16000, 2, 1000);
  add(1000, 0, 0);
  return pods;
}

TEST(FillTest, SampleReachesTheTuneAndIsSeeded) {
  const std::vector<TracePod> pods = Pods();
  std::vector<const TracePod*> a = SamplePods(pods, 16000, 130, 42);
  std::vector<const TracePod*> b = SamplePods(pods, 16000, 130, 42);
  std::vector<const TracePod*> c = SamplePods(pods, 16000, 130, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  int64_t total = 0;
  for (const TracePod* p : a) total += PodGpuMilli(*p);
  EXPECT_GE(total, 16000 * 130 / 100);
  EXPECT_LT(total - PodGpuMilli(*a.back()), 16000 * 130 / 100 + 2000);  // stops soon after reaching it
}

// The published simulator's composition: every listed pod once (in a seeded order), then draws appended until
// the next one would pass the goal by its per-GPU share.
TEST(FillTest, TraceThenSampleKeepsEveryListedPodOnceThenDraws) {
  const std::vector<TracePod> pods = Pods();  // 4,500 milli-GPU in all
  const int64_t capacity = 16000, goal = capacity * 130 / 100;
  std::vector<const TracePod*> a = SamplePods(pods, capacity, 130, 42, Composition::kTraceThenSample);
  std::vector<const TracePod*> b = SamplePods(pods, capacity, 130, 42, Composition::kTraceThenSample);
  std::vector<const TracePod*> c = SamplePods(pods, capacity, 130, 43, Composition::kTraceThenSample);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  ASSERT_GT(a.size(), pods.size());
  std::vector<const TracePod*> head(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(pods.size()));
  std::sort(head.begin(), head.end());
  for (size_t i = 0; i < pods.size(); ++i) EXPECT_EQ(head[i], &pods[i]);  // a permutation of the list
  int64_t total = 0;
  for (const TracePod* p : a) total += PodGpuMilli(*p);
  EXPECT_LE(total, goal + 1000);  // a 2-GPU pod is checked by its per-GPU share, so it may pass by one GPU
  EXPECT_GT(total, goal - 1000);  // it stopped because a draw would pass the goal
  // The plain composition's first pods are draws, not the list.
  std::vector<const TracePod*> plain = SamplePods(pods, capacity, 130, 42);
  EXPECT_NE(std::vector<const TracePod*>(plain.begin(), plain.begin() + 5),
            std::vector<const TracePod*>(a.begin(), a.begin() + 5));
}

TEST(FillTest, TraceThenSampleDropsRandomPodsFromAListAskingTooMuch) {
  const std::vector<TracePod> pods = Pods();  // 4,500 milli-GPU; the goal is 2,600
  std::vector<const TracePod*> a = SamplePods(pods, 2000, 130, 42, Composition::kTraceThenSample);
  int64_t total = 0;
  for (const TracePod* p : a) total += PodGpuMilli(*p);
  EXPECT_LE(total, 2600);
  EXPECT_LT(a.size(), pods.size());  // only drops, no draws
  Composition parsed = Composition::kSample;
  EXPECT_TRUE(ParseComposition("trace-then-sample", &parsed));
  EXPECT_EQ(parsed, Composition::kTraceThenSample);
  EXPECT_TRUE(ParseComposition("sample", &parsed));
  EXPECT_EQ(parsed, Composition::kSample);
  EXPECT_FALSE(ParseComposition("trace", &parsed));
}

// The node order ties are broken in: the trace's, or a permutation drawn from the seed (same nodes, the same
// permutation for the same seed, another for another seed).
TEST(FillTest, NodeOrderIsTheTraceOrASeededPermutation) {
  std::vector<TraceNode> many;
  for (int i = 0; i < 40; ++i) many.push_back({"n" + std::to_string(i), 32000, 131072, 4, "G2"});
  Result<ClusterState> cluster = BuildCluster(many);
  ASSERT_TRUE(cluster.ok());
  auto names = [](const ClusterState& s) {
    std::vector<std::string> out;
    for (int i = 0; i < s.node_count(); ++i) out.push_back(s.node(i).name);
    return out;
  };
  EXPECT_EQ(names(OrderNodes(*cluster, NodeOrder::kTrace, 42)), names(*cluster));
  const std::vector<std::string> a = names(OrderNodes(*cluster, NodeOrder::kShuffled, 42));
  const std::vector<std::string> b = names(OrderNodes(*cluster, NodeOrder::kShuffled, 42));
  const std::vector<std::string> c = names(OrderNodes(*cluster, NodeOrder::kShuffled, 43));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, names(*cluster));
  std::vector<std::string> sorted_a = a, sorted_trace = names(*cluster);
  std::sort(sorted_a.begin(), sorted_a.end());
  std::sort(sorted_trace.begin(), sorted_trace.end());
  EXPECT_EQ(sorted_a, sorted_trace);
  EXPECT_EQ(OrderNodes(*cluster, NodeOrder::kShuffled, 42).totals().device_compute_capacity_milli,
            cluster->totals().device_compute_capacity_milli);
}

TEST(FillTest, CurvesAreConsistentForEveryPaperPolicy) {
  Result<ClusterState> cluster = BuildCluster(Nodes());
  ASSERT_TRUE(cluster.ok());
  for (const char* policy :
       {"random", "dot-product", "gpu-clustering", "gpu-packing", "best-fit", "fgd", "default", "gpu-packing@last"}) {
    SCOPED_TRACE(policy);
    FillOptions options;
    options.policy = policy;
    options.seed = 42;
    Result<FillCurve> curve = RunFill(*cluster, Pods(), options);
    ASSERT_TRUE(curve.ok()) << curve.status().ToString();
    options.composition = Composition::kTraceThenSample;
    Result<FillCurve> listed = RunFill(*cluster, Pods(), options);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    EXPECT_GT(listed->allocation_pct[130], 50.0);
    ASSERT_EQ(curve->allocation_pct.size(), 131u);
    ASSERT_EQ(curve->frag_pct.size(), 131u);
    EXPECT_EQ(curve->allocation_pct[0], 0.0);
    EXPECT_EQ(curve->pods_arrived, curve->pods_placed + curve->pods_skipped);
    for (size_t i = 1; i < curve->allocation_pct.size(); ++i) {
      EXPECT_GE(curve->allocation_pct[i], curve->allocation_pct[i - 1]);       // pods never leave
      EXPECT_LE(curve->allocation_pct[i], std::min<double>(100.0, i + 1e-9));  // cannot exceed what arrived
      EXPECT_LE(curve->frag_pct[i], 100.0 - curve->allocation_pct[i] + 1e-9);  // fragment ⊆ idle
    }
    EXPECT_GT(curve->allocation_pct[130], 50.0);
    EXPECT_GT(curve->pods_skipped, 0);  // 130 % cannot all fit
  }
}

TEST(FillTest, UnknownPolicyAndEmptyWorkloadAreErrors) {
  Result<ClusterState> cluster = BuildCluster(Nodes());
  ASSERT_TRUE(cluster.ok());
  FillOptions options;
  options.policy = "no-such-policy";
  EXPECT_EQ(RunFill(*cluster, Pods(), options).status().code(), StatusCode::kInvalidArgument);
  options.policy = "fgd";
  std::vector<TracePod> cpu_only(1);
  cpu_only[0].name = "c";
  cpu_only[0].cpu_milli = 1000;
  EXPECT_EQ(RunFill(*cluster, cpu_only, options).status().code(), StatusCode::kInvalidArgument);
}

TEST(FillTest, RunParallelRunsEveryJobOnceAndReportsErrors) {
  std::vector<int> hits(50, 0);
  EXPECT_TRUE(RunParallel(50, 3, [&](int i) {
                hits[i]++;
                return Status::Ok();
              }).ok());
  for (int h : hits) EXPECT_EQ(h, 1);
  Status s = RunParallel(5, 2, [](int i) { return i == 3 ? InternalError("boom") : Status::Ok(); });
  EXPECT_EQ(s.code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace xpool::sim
