#pragma once
// Reports of the fill experiment: the CSV layout of the FGD paper's published results
// (analysis_allo_discrete.csv: `workload,sc_policy,tune,seed,total_gpus,0,1,…,130`; the frag files have no
// total_gpus column), the reader of those published files, and the validation table. Value types and
// functions; thread-compatible.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "sim/fill.h"

namespace xpool::sim {

struct FillRun {
  std::string workload;  // file stem, e.g. "openb_pod_list_default"
  std::string policy;    // our policy name
  uint64_t seed = 0;
  int tune_percent = 130;
  FillCurve curve;
};

enum class Metric : uint8_t { kAllocation, kFrag, kFragRatio };

// The whole CSV text for `runs` (rows in the given order).
std::string FillCsv(const std::vector<FillRun>& runs, Metric metric);
Status WriteTextFile(const std::string& path, const std::string& text);

// "openb_pod_list_default" from ".../openb_pod_list_default.csv".
std::string WorkloadName(const std::string& path);

// Published policy labels ("06-FGD") to our names ("fgd"); empty when unknown.
std::string PolicyForPublishedLabel(std::string_view label);
std::string PublishedLabelForPolicy(std::string_view policy);

// One row of a published results CSV.
struct PublishedRow {
  std::string workload;
  std::string label;  // sc_policy as published
  uint64_t seed = 0;
  std::vector<double> values;  // index = arrived %
};
Result<std::vector<PublishedRow>> ParsePublished(std::string_view text, std::string_view file);
Result<std::vector<PublishedRow>> LoadPublished(const std::string& path);

// Mean over rows of the value at `percent` for (workload, label); NaN when none.
double PublishedMean(const std::vector<PublishedRow>& rows, std::string_view workload, std::string_view label,
                     int percent);
// Mean over runs of allocation at `percent` for (workload, policy); NaN when none.
double RunMean(const std::vector<FillRun>& runs, std::string_view workload, std::string_view policy, int percent,
               Metric metric = Metric::kAllocation);

// One group of workloads (a variant family of one base list) compared to a baseline policy: over the group's
// workloads, the difference of the policy's mean (over seeds) at `percent` to the baseline's mean.
struct GroupDiff {
  std::string group;
  std::string policy;
  std::string baseline;
  int workloads = 0;
  double mean_diff = 0;
  double worst_diff = 0;       // the lowest
  std::string worst_workload;  // where it is
};
// `groups[i]` names the group of `workloads[i]`; groups come back in first-seen order, each with one row per
// policy other than `baseline` (in `policies` order). Workloads without runs of both policies are left out.
std::vector<GroupDiff> DiffByGroup(const std::vector<FillRun>& runs, const std::vector<std::string>& workloads,
                                   const std::vector<std::string>& groups, const std::vector<std::string>& policies,
                                   const std::string& baseline, int percent);

}  // namespace xpool::sim
