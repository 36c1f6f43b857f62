#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/units.h"
#include "sim/internal/csv_text.h"

namespace xpool::sim {
namespace {

const std::vector<double>& Values(const FillCurve& c, Metric m) {
  switch (m) {
    case Metric::kFrag:
      return c.frag_pct;
    case Metric::kFragRatio:
      return c.frag_ratio_pct;
    case Metric::kAllocation:
      break;
  }
  return c.allocation_pct;
}

const std::pair<std::string_view, std::string_view> kLabels[] = {
    {"01-Random", "random"},          {"02-DotProd", "dot-product"}, {"03-GpuClustering", "gpu-clustering"},
    {"04-GpuPacking", "gpu-packing"}, {"05-BestFit", "best-fit"},    {"06-FGD", "fgd"},
};

}  // namespace

std::string FillCsv(const std::vector<FillRun>& runs, Metric metric) {
  int points = 0;
  for (const FillRun& r : runs) points = std::max(points, static_cast<int>(Values(r.curve, metric).size()));
  std::string out = "workload,sc_policy,tune,seed";
  if (metric == Metric::kAllocation) out += ",total_gpus";
  for (int i = 0; i < points; ++i) out += "," + std::to_string(i);
  out += "\n";
  char buf[64];
  for (const FillRun& r : runs) {
    std::snprintf(buf, sizeof buf, "%d.%d", r.tune_percent / 100, (r.tune_percent % 100) / 10);
    std::string tune = buf;
    if (r.tune_percent % 10 != 0) {
      std::snprintf(buf, sizeof buf, "%.2f", r.tune_percent / 100.0);
      tune = buf;
    }
    out += r.workload + "," + r.policy + "," + tune + "," + std::to_string(r.seed);
    if (metric == Metric::kAllocation) out += "," + std::to_string(r.curve.gpu_capacity_milli / 1000);
    for (double v : Values(r.curve, metric)) {
      std::snprintf(buf, sizeof buf, ",%.2f", v);
      out += buf;
    }
    out += "\n";
  }
  return out;
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return InvalidArgumentError("cannot write " + path);
  out << text;
  out.close();
  if (!out) return InternalError("writing " + path + " failed");
  return Status::Ok();
}

std::string WorkloadName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.size() > 4 && base.compare(base.size() - 4, 4, ".csv") == 0) base.resize(base.size() - 4);
  return base;
}

std::string PolicyForPublishedLabel(std::string_view label) {
  for (const auto& [l, p] : kLabels) {
    if (l == label) return std::string(p);
  }
  return "";
}

std::string PublishedLabelForPolicy(std::string_view policy) {
  for (const auto& [l, p] : kLabels) {
    if (p == policy) return std::string(l);
  }
  return "";
}

Result<std::vector<PublishedRow>> ParsePublished(std::string_view text, std::string_view file) {
  std::vector<PublishedRow> rows;
  int first_value = -1;
  Status s = internal::ForEachLine(text, [&](std::string_view line, int line_no) -> Status {
    std::vector<std::string_view> f = internal::SplitFields(line, ',');
    auto error = [&](const std::string& what) {
      return InvalidArgumentError(std::string(file) + ":" + std::to_string(line_no) + ": " + what);
    };
    if (first_value < 0) {
      if (f.size() < 5 || f[0] != "workload" || f[1] != "sc_policy" || f[2] != "tune" || f[3] != "seed") {
        return error("header must start with workload,sc_policy,tune,seed");
      }
      first_value = f[4] == "total_gpus" ? 5 : 4;
      if (static_cast<int>(f.size()) <= first_value || f[first_value] != "0") {
        return error("header: the arrived-% columns must start at 0");
      }
      return Status::Ok();
    }
    PublishedRow row;
    row.workload = std::string(f[0]);
    row.label = std::string(f[1]);
    Result<int64_t> seed = ParseNonNegativeInt(f[3]);
    if (!seed.ok()) return error("field seed: not an integer");
    row.seed = static_cast<uint64_t>(*seed);
    for (size_t i = first_value; i < f.size(); ++i) {
      std::string v(f[i]);
      char* endp = nullptr;
      const double d = std::strtod(v.c_str(), &endp);
      if (v.empty() || endp != v.c_str() + v.size()) {
        return error("column " + std::to_string(i - first_value) + ": \"" + v + "\" is not a number");
      }
      row.values.push_back(d);
    }
    rows.push_back(std::move(row));
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (first_value < 0) return InvalidArgumentError(std::string(file) + ": empty results file");
  return rows;
}

Result<std::vector<PublishedRow>> LoadPublished(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParsePublished(ss.str(), path);
}

double PublishedMean(const std::vector<PublishedRow>& rows, std::string_view workload, std::string_view label,
                     int percent) {
  double sum = 0;
  int n = 0;
  for (const PublishedRow& r : rows) {
    if (r.workload != workload || r.label != label || percent >= static_cast<int>(r.values.size())) continue;
    sum += r.values[percent];
    ++n;
  }
  return n ? sum / n : std::nan("");
}

double RunMean(const std::vector<FillRun>& runs, std::string_view workload, std::string_view policy, int percent,
               Metric metric) {
  double sum = 0;
  int n = 0;
  for (const FillRun& r : runs) {
    const std::vector<double>& v = Values(r.curve, metric);
    if (r.workload != workload || r.policy != policy || percent >= static_cast<int>(v.size())) continue;
    sum += v[percent];
    ++n;
  }
  return n ? sum / n : std::nan("");
}

std::vector<GroupDiff> DiffByGroup(const std::vector<FillRun>& runs, const std::vector<std::string>& workloads,
                                   const std::vector<std::string>& groups, const std::vector<std::string>& policies,
                                   const std::string& baseline, int percent) {
  std::vector<std::string> order;
  for (const std::string& g : groups) {
    if (std::find(order.begin(), order.end(), g) == order.end()) order.push_back(g);
  }
  std::vector<GroupDiff> out;
  for (const std::string& g : order) {
    for (const std::string& p : policies) {
      if (p == baseline) continue;
      GroupDiff d;
      d.group = g;
      d.policy = p;
      d.baseline = baseline;
      double sum = 0;
      for (size_t i = 0; i < workloads.size() && i < groups.size(); ++i) {
        if (groups[i] != g) continue;
        const double diff = RunMean(runs, workloads[i], p, percent) - RunMean(runs, workloads[i], baseline, percent);
        if (std::isnan(diff)) continue;
        if (d.workloads == 0 || diff < d.worst_diff) {
          d.worst_diff = diff;
          d.worst_workload = workloads[i];
        }
        sum += diff;
        ++d.workloads;
      }
      if (d.workloads == 0) continue;
      d.mean_diff = sum / d.workloads;
      out.push_back(std::move(d));
    }
  }
  return out;
}

}  // namespace xpool::sim
