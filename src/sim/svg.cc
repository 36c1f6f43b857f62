#include "sim/svg.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace xpool::sim {
namespace {

constexpr int kWidth = 640, kHeight = 400, kLeft = 60, kRight = 160, kTop = 30, kBottom = 50;
const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"};

std::string Fmt(const char* format, double a, double b) {
  char buf[128];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

}  // namespace

const char* ChartColor(int i) { return kColors[i % static_cast<int>(sizeof kColors / sizeof kColors[0])]; }

std::string LineChartSvg(const LineChart& chart) {
  const double max_x = chart.max_x > 0 ? chart.max_x : 1;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto x_of = [&](double x) { return kLeft + plot_w * x / max_x; };
  auto y_of = [&](double y) { return kTop + plot_h * (1.0 - y / 100.0); };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(kWidth) + "\" height=\"" +
                    std::to_string(kHeight) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + std::to_string(kLeft) + "\" y=\"18\" font-size=\"13\">" + Escape(chart.title) + "</text>\n";
  for (int y = 0; y <= 100; y += 20) {
    svg += "<line x1=\"" + std::to_string(kLeft) + "\" x2=\"" + std::to_string(kWidth - kRight) + "\"" +
           Fmt(" y1=\"%.1f\" y2=\"%.1f\"", y_of(y), y_of(y)) + " stroke=\"#ddd\"/>\n";
    svg += Fmt("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", kLeft - 6, y_of(y) + 4) + std::to_string(y) +
           "%</text>\n";
  }
  const double step = chart.x_tick > 0 ? chart.x_tick : max_x;
  for (int i = 0; i * step <= max_x + 1e-9; ++i) {
    const double x = i * step;
    char label[32];
    std::snprintf(label, sizeof label, "%g", x);
    svg += Fmt("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x_of(x), kHeight - kBottom + 16) + label +
           "</text>\n";
  }
  svg += Fmt("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", kLeft + plot_w / 2, kHeight - 12) +
         Escape(chart.x_label) + "</text>\n";
  int legend = 0;
  for (const ChartSeries& s : chart.series) {
    std::string line = "<polyline fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"1.5\"";
    if (s.dashed) line += " stroke-dasharray=\"5,4\"";
    line += " points=\"";
    for (const auto& [x, y] : s.points) line += Fmt("%.1f,%.1f ", x_of(x), y_of(y));
    svg += line + "\"/>\n";
    const double y = kTop + 14.0 * legend++;
    svg += Fmt("<line x1=\"%.1f\" x2=\"%.1f\"", kWidth - kRight + 10, kWidth - kRight + 30) +
           Fmt(" y1=\"%.1f\" y2=\"%.1f\"", y, y) + " stroke=\"" + s.color + "\" stroke-width=\"2\"" +
           (s.dashed ? " stroke-dasharray=\"5,4\"" : "") + "/>\n";
    svg += Fmt("<text x=\"%.1f\" y=\"%.1f\">", kWidth - kRight + 35, y + 4) + Escape(s.label) + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

std::string AllocationSvg(const std::vector<FillRun>& runs, const std::vector<PublishedRow>& published) {
  const std::string workload = runs.empty() ? "" : runs.front().workload;
  std::vector<std::string> policies;
  int points = 0;
  for (const FillRun& r : runs) {
    if (r.workload != workload) continue;
    bool seen = false;
    for (const std::string& p : policies) seen |= (p == r.policy);
    if (!seen) policies.push_back(r.policy);
    points = std::max(points, static_cast<int>(r.curve.allocation_pct.size()));
  }
  LineChart chart;
  chart.title = "GPU allocation vs arrived workload — " + workload;
  chart.x_label = "arrived workload (% of GPU capacity)";
  chart.max_x = points > 1 ? points - 1 : 1;
  chart.x_tick = 10;
  auto series = [](const std::vector<double>& ys, std::string label, const char* color, bool dashed) {
    ChartSeries s{std::move(label), color, dashed, {}};
    for (size_t i = 0; i < ys.size(); ++i) s.points.push_back({static_cast<double>(i), ys[i]});
    return s;
  };
  for (size_t p = 0; p < policies.size(); ++p) {
    std::vector<double> mean(points, 0.0);
    int n = 0;
    for (const FillRun& r : runs) {
      if (r.workload != workload || r.policy != policies[p]) continue;
      ++n;
      for (int i = 0; i < points && i < static_cast<int>(r.curve.allocation_pct.size()); ++i) {
        mean[i] += r.curve.allocation_pct[i];
      }
    }
    for (double& v : mean) v /= n ? n : 1;
    chart.series.push_back(series(mean, policies[p], ChartColor(static_cast<int>(p)), false));
  }
  std::vector<double> paper;
  int n = 0;
  for (const PublishedRow& r : published) {
    if (r.workload != workload || r.label != "06-FGD") continue;
    if (paper.empty()) paper.assign(r.values.size(), 0.0);
    for (size_t i = 0; i < paper.size() && i < r.values.size(); ++i) paper[i] += r.values[i];
    ++n;
  }
  if (n > 0) {
    for (double& v : paper) v /= n;
    chart.series.push_back(series(paper, "FGD (published)", "#000000", true));
  }
  return LineChartSvg(chart);
}

}  // namespace xpool::sim
