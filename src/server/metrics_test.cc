#include "server/metrics.h"

#include <gtest/gtest.h>

namespace xpool::server {
namespace {

TEST(MetricsTest, CounterRendersHelpTypeAndLabels) {
  MetricsRegistry m;
  m.DeclareCounter("xpool_requests_total", "Requests.");
  m.CounterAdd("xpool_requests_total", {{"route", "/a"}, {"code", "200"}});
  m.CounterAdd("xpool_requests_total", {{"route", "/a"}, {"code", "200"}}, 2);
  EXPECT_EQ(m.Render(),
            "# HELP xpool_requests_total Requests.\n"
            "# TYPE xpool_requests_total counter\n"
            "xpool_requests_total{route=\"/a\",code=\"200\"} 3\n");
}

TEST(MetricsTest, HistogramIsCumulativeWithInfSumAndCount) {
  MetricsRegistry m;
  m.DeclareHistogram("lat_seconds", "Latency.", {0.1, 1});
  m.Observe("lat_seconds", {}, 0.05);
  m.Observe("lat_seconds", {}, 0.5);
  m.Observe("lat_seconds", {}, 5);
  EXPECT_EQ(m.Render(),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{le=\"0.1\"} 1\n"
            "lat_seconds_bucket{le=\"1\"} 2\n"
            "lat_seconds_bucket{le=\"+Inf\"} 3\n"
            "lat_seconds_sum 5.55\n"
            "lat_seconds_count 3\n");
}

TEST(MetricsTest, HistogramBoundaryValueFallsInItsBucket) {
  MetricsRegistry m;
  m.DeclareHistogram("h", "H.", {1});
  m.Observe("h", {{"route", "x"}}, 1);
  std::string out = m.Render();
  EXPECT_NE(out.find("h_bucket{route=\"x\",le=\"1\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("h_sum{route=\"x\"} 1\n"), std::string::npos) << out;
}

TEST(MetricsTest, GaugeSetAndClearAndEscaping) {
  MetricsRegistry m;
  m.DeclareGauge("g", "A \\ gauge\nwith newline.");
  m.GaugeSet("g", {{"tenant", "a\"b\\c\nd"}}, 7);
  std::string out = m.Render();
  EXPECT_NE(out.find("# HELP g A \\\\ gauge\\nwith newline.\n"), std::string::npos) << out;
  EXPECT_NE(out.find("g{tenant=\"a\\\"b\\\\c\\nd\"} 7\n"), std::string::npos) << out;
  m.GaugeClear("g");
  EXPECT_EQ(m.Render(), "# HELP g A \\\\ gauge\\nwith newline.\n# TYPE g gauge\n");
}

TEST(MetricsTest, UndeclaredAndWrongTypeUpdatesAreIgnored) {
  MetricsRegistry m;
  m.DeclareGauge("g", "G.");
  m.CounterAdd("g", {}, 1);
  m.CounterAdd("nope", {}, 1);
  m.Observe("g", {}, 1);
  EXPECT_EQ(m.Render(), "# HELP g G.\n# TYPE g gauge\n");
}

TEST(MetricsTest, FormatValue) {
  EXPECT_EQ(FormatMetricValue(3), "3");
  EXPECT_EQ(FormatMetricValue(0.25), "0.25");
  EXPECT_EQ(FormatMetricValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatMetricValue(-2), "-2");
}

}  // namespace
}  // namespace xpool::server
