#pragma once
// Small SVG line charts: a generic one (y in percent, 0..100) and the fill experiment's chart — GPU allocation %
// (y) vs arrived workload % (x), one line per policy (mean over its runs of each workload shown), and the
// published FGD curve dashed when the workload is in the published results. Pure functions; thread-safe.
#include <string>
#include <utility>
#include <vector>

#include "sim/report.h"

namespace xpool::sim {

struct ChartSeries {
  std::string label;
  std::string color;  // "#1f77b4"; ChartColor(i) gives the palette
  bool dashed = false;
  std::vector<std::pair<double, double>> points;  // (x, y in %)
};

struct LineChart {
  std::string title;
  std::string x_label;
  double max_x = 1;   // x axis from 0 to max_x
  double x_tick = 0;  // label every x_tick (0: only the ends)
  std::vector<ChartSeries> series;
};

// The i-th colour of the palette (wraps).
const char* ChartColor(int i);
std::string LineChartSvg(const LineChart& chart);

std::string AllocationSvg(const std::vector<FillRun>& runs, const std::vector<PublishedRow>& published);

}  // namespace xpool::sim
