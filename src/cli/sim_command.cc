// `xpool sim fill | validate`: the FGD paper's experiment on the Alibaba openb trace (src/sim).
#include "cli/sim_command.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cli/sim_replay_command.h"
#include "common/flags.h"
#include "common/units.h"
#include "sim/fill.h"
#include "sim/report.h"
#include "sim/svg.h"
#include "sim/trace.h"
#include "sim/variants.h"

namespace xpool::cli {
namespace {

using sim::FillRun;

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t pos = s.find(',', start);
    if (pos == std::string::npos) pos = s.size();
    if (pos > start) out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
  return out;
}

// "42-51", "42,45", "7".
Result<std::vector<uint64_t>> ParseSeeds(const std::string& text) {
  std::vector<uint64_t> seeds;
  for (const std::string& part : SplitList(text)) {
    size_t dash = part.find('-');
    if (dash == std::string::npos) {
      Result<int64_t> v = ParseNonNegativeInt(part);
      if (!v.ok()) return InvalidArgumentError("--seeds: \"" + part + "\" is not a seed");
      seeds.push_back(static_cast<uint64_t>(*v));
      continue;
    }
    Result<int64_t> a = ParseNonNegativeInt(part.substr(0, dash));
    Result<int64_t> b = ParseNonNegativeInt(part.substr(dash + 1));
    if (!a.ok() || !b.ok() || *b < *a || *b - *a > 100000) {
      return InvalidArgumentError("--seeds: \"" + part + "\" is not a range like 42-51");
    }
    for (int64_t s = *a; s <= *b; ++s) seeds.push_back(static_cast<uint64_t>(s));
  }
  if (seeds.empty()) return InvalidArgumentError("--seeds: no seed given");
  return seeds;
}

// Progress on stderr for long runs, only when stderr is a terminal.
class Progress {
 public:
  explicit Progress(int total) : total_(total), start_(std::chrono::steady_clock::now()), tty_(isatty(2) != 0) {}
  void Tick() {
    const int done = ++done_;
    if (!tty_) return;
    const double elapsed = Elapsed();
    if (elapsed < 2.0 && done < total_) return;
    std::lock_guard<std::mutex> lock(mu_);
    const int width = 30;
    const int filled = total_ ? done * width / total_ : width;
    std::fprintf(stderr, "\r[%s%s] %d/%d runs, %.1f s", std::string(filled, '#').c_str(),
                 std::string(width - filled, ' ').c_str(), done, total_, elapsed);
    shown_ = true;
    if (done == total_) std::fprintf(stderr, "\n");
  }
  double Elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  int total_;
  std::atomic<int> done_{0};
  std::chrono::steady_clock::time_point start_;
  bool tty_;
  bool shown_ = false;
  std::mutex mu_;
};

struct Matrix {
  ClusterState cluster;
  std::vector<std::string> workloads;            // names
  std::vector<std::vector<sim::TracePod>> pods;  // per workload
  std::vector<std::string> groups;               // per workload with --vary: "base/family" (or "base/variant")
  std::vector<std::string> policies;
  std::vector<uint64_t> seeds;
  int tune_percent = 130;
  sim::NodeOrder node_order = sim::NodeOrder::kShuffled;
  sim::Composition composition = sim::Composition::kSample;
};

// --node-order: "shuffled" (seeded per run, the default) or "trace" (the node list's order).
Status ParseNodeOrder(const std::string& text, sim::NodeOrder* out) {
  if (text == "shuffled") {
    *out = sim::NodeOrder::kShuffled;
  } else if (text == "trace") {
    *out = sim::NodeOrder::kTrace;
  } else {
    return InvalidArgumentError("--node-order must be shuffled or trace, not \"" + text + "\"");
  }
  return Status::Ok();
}

// --compose: "sample" or "trace-then-sample" (sim/fill.h, Composition).
Status ParseCompose(const std::string& text, sim::Composition* out) {
  if (sim::ParseComposition(text, out)) return Status::Ok();
  return InvalidArgumentError("--compose must be sample or trace-then-sample, not \"" + text + "\"");
}

// Runs every (workload, policy, seed) in that order; rows come back in the same order.
Result<std::vector<FillRun>> RunMatrix(const Matrix& m, int jobs, double* seconds) {
  const int per_workload = static_cast<int>(m.policies.size() * m.seeds.size());
  const int total = static_cast<int>(m.workloads.size()) * per_workload;
  std::vector<FillRun> runs(total);
  Progress progress(total);
  Status s = sim::RunParallel(total, jobs, [&](int i) -> Status {
    const int w = i / per_workload;
    const int p = (i % per_workload) / static_cast<int>(m.seeds.size());
    const int k = i % static_cast<int>(m.seeds.size());
    FillRun& run = runs[i];
    run.workload = m.workloads[w];
    run.policy = m.policies[p];
    run.seed = m.seeds[k];
    run.tune_percent = m.tune_percent;
    sim::FillOptions options;
    options.policy = run.policy;
    options.seed = run.seed;
    options.tune_percent = m.tune_percent;
    options.node_order = m.node_order;
    options.composition = m.composition;
    Result<sim::FillCurve> curve = sim::RunFill(m.cluster, m.pods[w], options);
    if (!curve.ok()) return curve.status().WithContext(run.workload + " / " + run.policy);
    run.curve = std::move(*curve);
    progress.Tick();
    return Status::Ok();
  });
  *seconds = progress.Elapsed();
  if (!s.ok()) return s;
  return runs;
}

int64_t Placements(const std::vector<FillRun>& runs) {
  int64_t n = 0;
  for (const FillRun& r : runs) n += r.curve.pods_arrived;
  return n;
}

Status WriteOutputs(const std::vector<FillRun>& runs, const std::string& csv, const std::string& frag_csv,
                    const std::string& frag_ratio_csv) {
  if (!csv.empty()) RETURN_IF_ERROR(sim::WriteTextFile(csv, sim::FillCsv(runs, sim::Metric::kAllocation)));
  if (!frag_csv.empty()) RETURN_IF_ERROR(sim::WriteTextFile(frag_csv, sim::FillCsv(runs, sim::Metric::kFrag)));
  if (!frag_ratio_csv.empty()) {
    RETURN_IF_ERROR(sim::WriteTextFile(frag_ratio_csv, sim::FillCsv(runs, sim::Metric::kFragRatio)));
  }
  return Status::Ok();
}

int Fail(const Status& s) {
  std::fprintf(stderr, "xpool sim: %s\n", s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

// --vary: each item is a family (expanded to `count` variants drawn with `family_seed`) or one variant's name;
// every base workload gets each variant, named "base/variant" and grouped as "base/item".
Status AddVariants(const std::vector<sim::TraceNode>& nodes, const std::vector<std::string>& items, int count,
                   uint64_t family_seed, Matrix* m) {
  std::vector<std::string> bases = std::move(m->workloads);
  std::vector<std::vector<sim::TracePod>> base_pods = std::move(m->pods);
  m->workloads.clear();
  m->pods.clear();
  for (size_t b = 0; b < bases.size(); ++b) {
    for (const std::string& item : items) {
      std::vector<sim::Variant> variants;
      if (sim::IsFamilyName(item)) {
        ASSIGN_OR_RETURN(variants, sim::FamilyVariants(item, nodes, count, family_seed));
      } else {
        ASSIGN_OR_RETURN(sim::Variant v, sim::ParseVariant(item));
        variants.push_back(v);
      }
      for (const sim::Variant& v : variants) {
        ASSIGN_OR_RETURN(std::vector<sim::TracePod> pods, sim::ApplyVariant(base_pods[b], nodes, v));
        m->workloads.push_back(bases[b] + "/" + sim::VariantName(v));
        m->pods.push_back(std::move(pods));
        m->groups.push_back(bases[b] + "/" + item);
      }
    }
  }
  return Status::Ok();
}

// With --vary and two or more policies: per group, each policy's mean and worst difference to the first policy.
void PrintGroupDiffs(const std::vector<FillRun>& runs, const Matrix& m) {
  if (m.groups.empty() || m.policies.size() < 2) return;
  std::printf("\n%-36s %-10s %-10s %8s %9s %9s  %s\n", "family", "policy", "baseline", "variants", "mean@100",
              "worst@100", "worst variant");
  for (const sim::GroupDiff& d : sim::DiffByGroup(runs, m.workloads, m.groups, m.policies, m.policies[0], 100)) {
    std::printf("%-36s %-10s %-10s %8d %+9.2f %+9.2f  %s\n", d.group.c_str(), d.policy.c_str(), d.baseline.c_str(),
                d.workloads, d.mean_diff, d.worst_diff, d.worst_workload.c_str());
  }
}

int RunFillCommand(const Args& args) {
  FlagSet flags("xpool sim fill",
                "The FGD paper's fill experiment: sample pods until 1.3x the cluster's GPU capacity has arrived, "
                "place them one at a time, record GPU allocation vs arrived workload.");
  std::string cluster_path, workload_list, policy_list = "fgd", seeds_text = "42", csv, frag_csv, frag_ratio_csv, svg,
                                           published;
  int64_t jobs = 1, tune = 130;
  flags.String("cluster", &cluster_path, "node list CSV (sn,cpu_milli,memory_mib,gpu,model)");
  flags.String("workload", &workload_list, "pod list CSV(s), comma-separated");
  flags.String("policy", &policy_list,
               "policy name(s), comma-separated (e.g. fgd,best-fit,default); mig or mig:MODEL runs every GPU in "
               "dynamic-MIG mode instead of shared slices (docs/mig.md)");
  flags.String("seeds", &seeds_text, "seeds: 42-51, or a comma list");
  flags.Int("jobs", &jobs, "runs in parallel");
  flags.Int("tune", &tune, "arrived workload to reach, % of GPU capacity");
  flags.String("csv", &csv, "write allocation % per arrived % (analysis_allo_discrete.csv layout)");
  flags.String("frag-csv", &frag_csv, "write fragmented GPU % of capacity per arrived %");
  flags.String("frag-ratio-csv", &frag_ratio_csv, "write fragmentation rate % per arrived %");
  flags.String("svg", &svg, "write a chart of allocation % vs arrived % (one line per policy)");
  flags.String("published", &published, "published analysis_allo_discrete.csv: dashed FGD curve in the SVG");
  std::string node_order = "shuffled", compose = "sample";
  flags.String("node-order", &node_order, "order ties are broken in: shuffled (seeded per run) or trace");
  flags.String("compose", &compose,
               "how a run's pods are drawn: sample (all with replacement) or trace-then-sample (every listed pod "
               "once, then draws: the published FGD simulator's)");
  std::string vary;
  int64_t variant_count = 30, family_seed = 1;
  flags.String("vary", &vary,
               "run variants of each workload instead: families (spec-uniform, spec-fleet, spec-one, spec-small, "
               "spec-lists, spec-mixed, multi) or variant names (spec:share=25:pop=fleet:lists=0:seed=7, "
               "multi:share=20:gpus=8:seed=3, mig:share=100:model=A100-80GB:seed=1), "
               "comma-separated; prints each policy's mean and worst difference to the first per family");
  flags.Int("variants", &variant_count, "variants drawn per family (--vary)");
  flags.Int("family-seed", &family_seed, "seed the family's variants are drawn with (--vary)");
  int code = 0;
  if (!ParseFlagsOrExit(flags, args, &code)) return code;
  if (cluster_path.empty() || workload_list.empty()) {
    std::fprintf(stderr, "xpool sim fill: --cluster and --workload are required\n%s", flags.Usage().c_str());
    return 2;
  }
  if (jobs < 1 || jobs > 256) return Fail(InvalidArgumentError("--jobs must be 1..256"));
  if (tune < 1 || tune > 1000) return Fail(InvalidArgumentError("--tune must be 1..1000"));
  Matrix m;
  m.tune_percent = static_cast<int>(tune);
  if (Status s = ParseNodeOrder(node_order, &m.node_order); !s.ok()) return Fail(s);
  if (Status s = ParseCompose(compose, &m.composition); !s.ok()) return Fail(s);
  Result<std::vector<uint64_t>> seeds = ParseSeeds(seeds_text);
  if (!seeds.ok()) return Fail(seeds.status());
  m.seeds = *seeds;
  m.policies = SplitList(policy_list);
  for (const std::string& p : m.policies) {
    if (Status s = sim::CheckFillPolicyName(p); !s.ok()) return Fail(s.WithContext("--policy"));
  }
  Result<std::vector<sim::TraceNode>> nodes = sim::LoadNodeList(cluster_path);
  if (!nodes.ok()) return Fail(nodes.status());
  Result<ClusterState> cluster = sim::BuildCluster(*nodes);
  if (!cluster.ok()) return Fail(cluster.status());
  m.cluster = std::move(*cluster);
  for (const std::string& w : SplitList(workload_list)) {
    Result<std::vector<sim::TracePod>> pods = sim::LoadPodList(w);
    if (!pods.ok()) return Fail(pods.status());
    m.workloads.push_back(sim::WorkloadName(w));
    m.pods.push_back(std::move(*pods));
  }
  if (!vary.empty()) {
    if (variant_count < 1 || variant_count > 10000) return Fail(InvalidArgumentError("--variants must be 1..10000"));
    Status s =
        AddVariants(*nodes, SplitList(vary), static_cast<int>(variant_count), static_cast<uint64_t>(family_seed), &m);
    if (!s.ok()) return Fail(s.WithContext("--vary"));
  }
  double seconds = 0;
  Result<std::vector<FillRun>> runs = RunMatrix(m, static_cast<int>(jobs), &seconds);
  if (!runs.ok()) return Fail(runs.status());
  if (Status s = WriteOutputs(*runs, csv, frag_csv, frag_ratio_csv); !s.ok()) return Fail(s);
  std::vector<sim::PublishedRow> published_rows;
  if (!published.empty()) {
    Result<std::vector<sim::PublishedRow>> rows = sim::LoadPublished(published);
    if (!rows.ok()) return Fail(rows.status());
    published_rows = std::move(*rows);
  }
  std::printf("%-28s %-16s %6s %9s %9s %9s %9s\n", "workload", "policy", "seeds", "alloc@100", "alloc@130", "frag@100",
              "skipped");
  for (const std::string& w : m.workloads) {
    for (const std::string& p : m.policies) {
      int64_t skipped = 0;
      for (const FillRun& r : *runs) {
        if (r.workload == w && r.policy == p) skipped += r.curve.pods_skipped;
      }
      std::printf("%-28s %-16s %6zu %8.2f%% %8.2f%% %8.2f%% %9.1f\n", w.c_str(), p.c_str(), m.seeds.size(),
                  sim::RunMean(*runs, w, p, 100), sim::RunMean(*runs, w, p, std::min(130, m.tune_percent)),
                  sim::RunMean(*runs, w, p, 100, sim::Metric::kFrag),
                  static_cast<double>(skipped) / static_cast<double>(m.seeds.size()));
    }
  }
  const int64_t placements = Placements(*runs);
  std::printf("%zu runs, %lld placements in %.2f s wall (%.0f placements/s, %lld jobs)\n", runs->size(),
              static_cast<long long>(placements), seconds, placements / std::max(seconds, 1e-9),
              static_cast<long long>(jobs));
  PrintGroupDiffs(*runs, m);
  if (!svg.empty()) {
    if (Status s = sim::WriteTextFile(svg, sim::AllocationSvg(*runs, published_rows)); !s.ok()) return Fail(s);
  }
  return 0;
}

int RunValidateCommand(const Args& args) {
  FlagSet flags("xpool sim validate",
                "Runs every workload of the published FGD results with the 6 paper policies and seeds 42-51 and "
                "compares our mean GPU allocation at arrived 100% with the published one.");
  const char* env = std::getenv("XPOOL_TRACE_DIR");
  std::string trace_dir = env ? env : "../shared/data/traces";
  std::string seeds_text = "42-51", policy_list = "random,dot-product,gpu-clustering,gpu-packing,best-fit,fgd",
              workload_filter, csv, svg, extra;
  int64_t jobs = 2, tolerance_centi = 50;
  flags.String("trace-dir", &trace_dir, "folder holding alibaba-gpu-v2023/ and fgd-expected-results/");
  flags.String("seeds", &seeds_text, "seeds");
  flags.String("policy", &policy_list, "policies to validate (published ones)");
  flags.String("also", &extra, "more policies to run and show next to FGD (e.g. default)");
  flags.String("workloads", &workload_filter, "only these workloads (comma list of names)");
  flags.Int("jobs", &jobs, "runs in parallel");
  flags.Int("tolerance-centi", &tolerance_centi, "allowed |ours - published| in hundredths of a point");
  flags.String("csv", &csv, "write our allocation curves (published layout)");
  flags.String("svg", &svg, "write a chart per run set (allocation vs arrived)");
  std::string node_order = "shuffled", compose = "trace-then-sample";
  flags.String("node-order", &node_order, "order ties are broken in: shuffled (seeded per run) or trace");
  flags.String("compose", &compose,
               "how a run's pods are drawn: trace-then-sample (every listed pod once, then draws: the published "
               "FGD simulator's) or sample (all with replacement, as `fill` by default)");
  int code = 0;
  if (!ParseFlagsOrExit(flags, args, &code)) return code;
  if (jobs < 1 || jobs > 256) return Fail(InvalidArgumentError("--jobs must be 1..256"));
  const std::string results = trace_dir + "/fgd-expected-results/analysis_allo_discrete.csv";
  Result<std::vector<sim::PublishedRow>> published = sim::LoadPublished(results);
  if (!published.ok()) return Fail(published.status());
  Result<std::vector<uint64_t>> seeds = ParseSeeds(seeds_text);
  if (!seeds.ok()) return Fail(seeds.status());
  Matrix m;
  if (Status s = ParseNodeOrder(node_order, &m.node_order); !s.ok()) return Fail(s);
  if (Status s = ParseCompose(compose, &m.composition); !s.ok()) return Fail(s);
  m.seeds = *seeds;
  m.policies = SplitList(policy_list);
  for (const std::string& p : SplitList(extra)) m.policies.push_back(p);
  for (const std::string& p : m.policies) {
    if (Status s = sim::CheckFillPolicyName(p); !s.ok()) return Fail(s.WithContext("--policy"));
  }
  std::set<std::string> filter;
  for (const std::string& w : SplitList(workload_filter)) filter.insert(w);
  for (const sim::PublishedRow& r : *published) {
    bool known = false;
    for (const std::string& w : m.workloads) known |= (w == r.workload);
    if (known || (!filter.empty() && !filter.count(r.workload))) continue;
    m.workloads.push_back(r.workload);
  }
  if (m.workloads.empty()) return Fail(InvalidArgumentError("no workload to validate"));
  Result<std::vector<sim::TraceNode>> nodes =
      sim::LoadNodeList(trace_dir + "/alibaba-gpu-v2023/openb_node_list_gpu_node.csv");
  if (!nodes.ok()) return Fail(nodes.status());
  Result<ClusterState> cluster = sim::BuildCluster(*nodes);
  if (!cluster.ok()) return Fail(cluster.status());
  m.cluster = std::move(*cluster);
  for (const std::string& w : m.workloads) {
    Result<std::vector<sim::TracePod>> pods = sim::LoadPodList(trace_dir + "/alibaba-gpu-v2023/" + w + ".csv");
    if (!pods.ok()) return Fail(pods.status());
    m.pods.push_back(std::move(*pods));
  }
  double seconds = 0;
  Result<std::vector<FillRun>> runs = RunMatrix(m, static_cast<int>(jobs), &seconds);
  if (!runs.ok()) return Fail(runs.status());
  if (!csv.empty()) {
    if (Status s = sim::WriteTextFile(csv, sim::FillCsv(*runs, sim::Metric::kAllocation)); !s.ok()) return Fail(s);
  }
  std::printf("%-28s %-16s %9s %9s %7s\n", "workload", "policy", "ours@100", "paper@100", "diff");
  int failures = 0;
  const double tolerance = static_cast<double>(tolerance_centi) / 100.0;
  for (const std::string& w : m.workloads) {
    for (const std::string& p : m.policies) {
      const double ours = sim::RunMean(*runs, w, p, 100);
      const std::string label = sim::PublishedLabelForPolicy(p);
      const double paper = label.empty() ? std::nan("") : sim::PublishedMean(*published, w, label, 100);
      if (std::isnan(paper)) {
        std::printf("%-28s %-16s %8.2f%% %9s %7s\n", w.c_str(), p.c_str(), ours, "-", "");
        continue;
      }
      const double diff = ours - paper;
      const bool ok = std::fabs(diff) <= tolerance;
      failures += ok ? 0 : 1;
      std::printf("%-28s %-16s %8.2f%% %8.2f%% %+7.2f%s\n", w.c_str(), p.c_str(), ours, paper, diff, ok ? "" : "  OUT");
    }
  }
  const int64_t placements = Placements(*runs);
  std::printf("%zu runs, %lld placements in %.2f s wall (%.0f placements/s, %lld jobs); %d outside ±%.2f\n",
              runs->size(), static_cast<long long>(placements), seconds, placements / std::max(seconds, 1e-9),
              static_cast<long long>(jobs), failures, tolerance);
  if (!svg.empty()) {
    if (Status s = sim::WriteTextFile(svg, sim::AllocationSvg(*runs, *published)); !s.ok()) return Fail(s);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int RunSim(const Args& args) {
  const char* usage =
      "usage: xpool sim <fill|validate|replay> [flags]\n"
      "  fill      the FGD fill experiment on a node list and pod list(s)\n"
      "  validate  reproduce the FGD paper's published means (needs the trace folder)\n"
      "  replay    replay a pod list with its real times (queue, priorities, preemption)\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::printf("%s", usage);
    return args.empty() ? 2 : 0;
  }
  const Args rest(args.begin() + 1, args.end());
  if (args[0] == "fill") return RunFillCommand(rest);
  if (args[0] == "validate") return RunValidateCommand(rest);
  if (args[0] == "replay") return RunReplayCommand(rest);
  std::fprintf(stderr, "xpool sim: unknown subcommand \"%s\"\n%s", args[0].c_str(), usage);
  return 2;
}

}  // namespace xpool::cli
