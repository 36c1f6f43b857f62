#pragma once
// MetricsRegistry: counters, gauges and histograms with labels, rendered in the Prometheus text exposition
// format (version 0.0.4): one "# HELP" and one "# TYPE" line per family, then its samples; histograms as
// cumulative `_bucket{le="..."}` lines ending with le="+Inf", then `_sum` and `_count`.
//
// Families are declared once (Declare*) and then updated by name. Owned by the server; thread-safe (one mutex:
// updates are a map lookup and an add, far cheaper than the request they measure).
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xpool::server {

using Labels = std::vector<std::pair<std::string, std::string>>;

class MetricsRegistry {
 public:
  // Seconds: 0.5 ms .. 10 s, for request and scheduling latencies.
  static std::vector<double> LatencyBuckets();

  void DeclareCounter(std::string name, std::string help);
  void DeclareGauge(std::string name, std::string help);
  // `buckets` ascending upper bounds, without +Inf.
  void DeclareHistogram(std::string name, std::string help, std::vector<double> buckets);

  // Updates to undeclared families are ignored (a programmer error caught by the metrics test).
  void CounterAdd(std::string_view name, const Labels& labels, double delta = 1);
  void GaugeSet(std::string_view name, const Labels& labels, double value);
  // Drops every sample of a gauge family (before re-setting gauges computed at scrape time).
  void GaugeClear(std::string_view name);
  void Observe(std::string_view name, const Labels& labels, double value);

  // The whole exposition, families in declaration order.
  std::string Render() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Series {
    Labels labels;
    double value = 0;               // counter / gauge
    std::vector<uint64_t> buckets;  // histogram: per-bucket (non-cumulative) counts, last = +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  struct Family {
    std::string name;
    std::string help;
    Type type;
    std::vector<double> bounds;
    std::map<std::string, Series> series;  // keyed by the rendered label set
  };
  Family* Find(std::string_view name);
  Series& SeriesFor(Family& family, const Labels& labels);

  mutable std::mutex mu_;
  std::vector<Family> families_;  // guarded by mu_
};

// Formats a sample value the way Prometheus parses it: integers without a fraction, "+Inf", "NaN".
std::string FormatMetricValue(double value);
// The same, appended to `out` (no string of its own: for series rendered by the thousand).
void AppendMetricValue(std::string* out, double value);
// `name{a="x",b="y"}` with label values escaped (backslash, double quote, newline); no braces when empty.
std::string FormatSeriesName(std::string_view name, const Labels& labels);

}  // namespace xpool::server
