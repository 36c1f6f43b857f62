#include "server/metrics.h"

#include <charconv>
#include <cmath>

namespace xpool::server {
namespace {

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string EscapeHelp(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

const char* TypeName(int type) {
  switch (type) {
    case 0:
      return "counter";
    case 1:
      return "gauge";
    default:
      return "histogram";
  }
}

}  // namespace

void AppendMetricValue(std::string* out, double value) {
  if (std::isnan(value)) {
    out->append("NaN");
    return;
  }
  if (std::isinf(value)) {
    out->append(value > 0 ? "+Inf" : "-Inf");
    return;
  }
  char buf[64];
  std::to_chars_result r;
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    r = std::to_chars(buf, buf + sizeof(buf), static_cast<long long>(value));
  } else {
    r = std::to_chars(buf, buf + sizeof(buf), value);
  }
  if (r.ec != std::errc()) {
    out->append("NaN");
    return;
  }
  out->append(buf, r.ptr);
}

std::string FormatMetricValue(double value) {
  std::string out;
  AppendMetricValue(&out, value);
  return out;
}

std::string FormatSeriesName(std::string_view name, const Labels& labels) {
  std::string out(name);
  if (labels.empty()) return out;
  out += '{';
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ',';
    out += labels[i].first;
    out += "=\"";
    out += EscapeLabelValue(labels[i].second);
    out += '"';
  }
  out += '}';
  return out;
}

std::vector<double> MetricsRegistry::LatencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

void MetricsRegistry::DeclareCounter(std::string name, std::string help) {
  std::lock_guard lock(mu_);
  families_.push_back(Family{std::move(name), std::move(help), Type::kCounter, {}, {}});
}

void MetricsRegistry::DeclareGauge(std::string name, std::string help) {
  std::lock_guard lock(mu_);
  families_.push_back(Family{std::move(name), std::move(help), Type::kGauge, {}, {}});
}

void MetricsRegistry::DeclareHistogram(std::string name, std::string help, std::vector<double> buckets) {
  std::lock_guard lock(mu_);
  families_.push_back(Family{std::move(name), std::move(help), Type::kHistogram, std::move(buckets), {}});
}

MetricsRegistry::Family* MetricsRegistry::Find(std::string_view name) {
  for (Family& f : families_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

MetricsRegistry::Series& MetricsRegistry::SeriesFor(Family& family, const Labels& labels) {
  std::string key = FormatSeriesName("", labels);
  auto it = family.series.find(key);
  if (it != family.series.end()) return it->second;
  Series s;
  s.labels = labels;
  if (family.type == Type::kHistogram) s.buckets.assign(family.bounds.size() + 1, 0);
  return family.series.emplace(std::move(key), std::move(s)).first->second;
}

void MetricsRegistry::CounterAdd(std::string_view name, const Labels& labels, double delta) {
  std::lock_guard lock(mu_);
  Family* f = Find(name);
  if (f == nullptr || f->type != Type::kCounter || delta < 0) return;
  SeriesFor(*f, labels).value += delta;
}

void MetricsRegistry::GaugeSet(std::string_view name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  Family* f = Find(name);
  if (f == nullptr || f->type != Type::kGauge) return;
  SeriesFor(*f, labels).value = value;
}

void MetricsRegistry::GaugeClear(std::string_view name) {
  std::lock_guard lock(mu_);
  Family* f = Find(name);
  if (f != nullptr && f->type == Type::kGauge) f->series.clear();
}

void MetricsRegistry::Observe(std::string_view name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  Family* f = Find(name);
  if (f == nullptr || f->type != Type::kHistogram) return;
  Series& s = SeriesFor(*f, labels);
  size_t i = 0;
  while (i < f->bounds.size() && value > f->bounds[i]) ++i;
  ++s.buckets[i];
  s.sum += value;
  ++s.count;
}

std::string MetricsRegistry::Render() const {
  std::lock_guard lock(mu_);
  std::string out;
  out.reserve(4096);
  for (const Family& f : families_) {
    out += "# HELP " + f.name + " " + EscapeHelp(f.help) + "\n";
    out += "# TYPE " + f.name + " " + TypeName(static_cast<int>(f.type)) + "\n";
    for (const auto& [key, s] : f.series) {
      if (f.type != Type::kHistogram) {
        out += FormatSeriesName(f.name, s.labels) + " " + FormatMetricValue(s.value) + "\n";
        continue;
      }
      uint64_t cumulative = 0;
      for (size_t i = 0; i <= f.bounds.size(); ++i) {
        cumulative += s.buckets[i];
        Labels with_le = s.labels;
        with_le.emplace_back("le", i < f.bounds.size() ? FormatMetricValue(f.bounds[i]) : "+Inf");
        out += FormatSeriesName(f.name + "_bucket", with_le) + " " + std::to_string(cumulative) + "\n";
      }
      out += FormatSeriesName(f.name + "_sum", s.labels) + " " + FormatMetricValue(s.sum) + "\n";
      out += FormatSeriesName(f.name + "_count", s.labels) + " " + std::to_string(s.count) + "\n";
    }
  }
  return out;
}

}  // namespace xpool::server
