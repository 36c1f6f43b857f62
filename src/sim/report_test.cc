#include "sim/report.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/svg.h"

namespace xpool::sim {
namespace {

FillRun MakeRun(const std::string& policy, uint64_t seed, double at1) {
  FillRun r;
  r.workload = "openb_pod_list_default";
  r.policy = policy;
  r.seed = seed;
  r.tune_percent = 130;
  r.curve.gpu_capacity_milli = 6212000;
  r.curve.allocation_pct = {0.0, at1, 2.5};
  r.curve.frag_pct = {1.0, 2.0, 3.0};
  r.curve.frag_ratio_pct = {1.0, 2.0, 3.125};
  return r;
}

TEST(ReportTest, CsvUsesThePublishedLayout) {
  std::vector<FillRun> runs = {MakeRun("fgd", 42, 1.234), MakeRun("best-fit", 43, 1.0)};
  EXPECT_EQ(FillCsv(runs, Metric::kAllocation),
            "workload,sc_policy,tune,seed,total_gpus,0,1,2\n"
            "openb_pod_list_default,fgd,1.3,42,6212,0.00,1.23,2.50\n"
            "openb_pod_list_default,best-fit,1.3,43,6212,0.00,1.00,2.50\n");
  EXPECT_EQ(FillCsv(runs, Metric::kFragRatio),
            "workload,sc_policy,tune,seed,0,1,2\n"
            "openb_pod_list_default,fgd,1.3,42,1.00,2.00,3.12\n"
            "openb_pod_list_default,best-fit,1.3,43,1.00,2.00,3.12\n");
}

TEST(ReportTest, ParsesPublishedRowsAndAverages) {
  const std::string text =
      "workload,sc_policy,tune,seed,total_gpus,0,1,2\n"
      "w,06-FGD,1.3,42,6212,0.0,10.0,20.0\n"
      "w,06-FGD,1.3,43,6212,0.0,12.0,22.0\n"
      "w,05-BestFit,1.3,42,6212,0.0,1.0,2.0\n";
  Result<std::vector<PublishedRow>> rows = ParsePublished(text, "x.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_DOUBLE_EQ(PublishedMean(*rows, "w", "06-FGD", 1), 11.0);
  EXPECT_DOUBLE_EQ(PublishedMean(*rows, "w", "05-BestFit", 2), 2.0);
  EXPECT_TRUE(std::isnan(PublishedMean(*rows, "w", "01-Random", 1)));
  EXPECT_EQ(PolicyForPublishedLabel("06-FGD"), "fgd");
  EXPECT_EQ(PublishedLabelForPolicy("gpu-packing"), "04-GpuPacking");
  EXPECT_EQ(PublishedLabelForPolicy("default"), "");

  Result<std::vector<PublishedRow>> bad =
      ParsePublished("workload,sc_policy,tune,seed,total_gpus,0,1\nw,06-FGD,1.3,42,6212,0.0,x\n", "y.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("y.csv:2"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(ParsePublished("foo,bar\n", "z.csv").ok());
}

TEST(ReportTest, RunMeanAndWorkloadName) {
  std::vector<FillRun> runs = {MakeRun("fgd", 42, 1.0), MakeRun("fgd", 43, 3.0), MakeRun("best-fit", 42, 9.0)};
  EXPECT_DOUBLE_EQ(RunMean(runs, "openb_pod_list_default", "fgd", 1), 2.0);
  EXPECT_EQ(WorkloadName("/a/b/openb_pod_list_cpu050.csv"), "openb_pod_list_cpu050");
  EXPECT_EQ(WorkloadName("x"), "x");
}

TEST(ReportTest, SvgHasOneLinePerPolicyAndTheDashedPublishedCurve) {
  std::vector<FillRun> runs = {MakeRun("fgd", 42, 1.0), MakeRun("best-fit", 42, 2.0)};
  std::vector<PublishedRow> published = {{"openb_pod_list_default", "06-FGD", 42, {0.0, 1.0, 2.0}}};
  const std::string svg = AllocationSvg(runs, published);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  size_t lines = 0;
  for (size_t pos = 0; (pos = svg.find("<polyline", pos)) != std::string::npos; ++pos) ++lines;
  EXPECT_EQ(lines, 3u);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(svg.find("FGD (published)"), std::string::npos);
}

TEST(ReportTest, DiffByGroupGivesTheMeanAndTheWorstWorkload) {
  std::vector<FillRun> runs;
  auto add = [&](const std::string& workload, const std::string& policy, uint64_t seed, double at1) {
    FillRun r = MakeRun(policy, seed, at1);
    r.workload = workload;
    runs.push_back(r);
  };
  add("w/a", "fgd", 42, 90.0);
  add("w/a", "default", 42, 91.0);
  add("w/a", "fgd", 43, 92.0);
  add("w/a", "default", 43, 94.0);  // a: +1.5
  add("w/b", "fgd", 42, 90.0);
  add("w/b", "default", 42, 89.5);  // b: -0.5
  add("w/c", "fgd", 42, 80.0);
  add("w/c", "default", 42, 85.0);  // c: another group
  add("w/d", "fgd", 42, 80.0);      // d: no default run, left out
  const std::vector<GroupDiff> d =
      DiffByGroup(runs, {"w/a", "w/b", "w/c", "w/d"}, {"g1", "g1", "g2", "g1"}, {"fgd", "default"}, "fgd", 1);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].group, "g1");
  EXPECT_EQ(d[0].policy, "default");
  EXPECT_EQ(d[0].workloads, 2);
  EXPECT_DOUBLE_EQ(d[0].mean_diff, 0.5);
  EXPECT_DOUBLE_EQ(d[0].worst_diff, -0.5);
  EXPECT_EQ(d[0].worst_workload, "w/b");
  EXPECT_EQ(d[1].group, "g2");
  EXPECT_DOUBLE_EQ(d[1].mean_diff, 5.0);
}

}  // namespace
}  // namespace xpool::sim
