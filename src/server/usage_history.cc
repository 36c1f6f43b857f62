#include "server/usage_history.h"

#include <algorithm>
#include <chrono>

#include "server/internal/json_codec.h"

namespace xpool::server {

UsageHistory::UsageHistory(size_t capacity, TimeMicros interval)
    : capacity_(std::max<size_t>(capacity, 1)), interval_(std::max<TimeMicros>(interval, 1000)) {}

UsageHistory::~UsageHistory() { Stop(); }

UsagePoint UsageHistory::Measure(const std::vector<NodeView>& nodes, int64_t queued_jobs, TimeMicros now) {
  UsagePoint p;
  p.time_us = now;
  p.nodes = static_cast<int64_t>(nodes.size());
  p.queued_jobs = queued_jobs;
  for (const NodeView& v : nodes) {
    for (size_t i = 0; i < v.node.devices.size(); ++i) {
      const Device& d = v.node.devices[i];
      ++p.devices;
      p.device_memory_capacity_mib += d.memory_mib;
      p.device_compute_capacity_milli += d.compute_milli;
      if (i < v.usage.devices.size()) {
        const DeviceUsage& u = v.usage.devices[i];
        p.device_memory_allocated_mib += u.memory_mib;
        p.device_compute_allocated_milli += u.compute_milli;
        if (u.sharers > 0) ++p.devices_in_use;
      }
    }
  }
  return p;
}

void UsageHistory::Add(const UsagePoint& point) {
  std::lock_guard lock(mu_);
  if (ring_.size() < capacity_) {
    ring_.push_back(point);
    return;
  }
  ring_[next_] = point;
  next_ = (next_ + 1) % capacity_;
}

std::vector<UsagePoint> UsageHistory::Points(TimeMicros since_us) const {
  std::lock_guard lock(mu_);
  std::vector<UsagePoint> out;
  out.reserve(ring_.size());
  for (size_t i = 0; i < ring_.size(); ++i) {
    const UsagePoint& p = ring_[(next_ + i) % ring_.size()];
    if (p.time_us > since_us) out.push_back(p);
  }
  return out;
}

std::string UsageHistory::RenderJson(TimeMicros since_us) const {
  using internal::Json;
  Json points = Json::array();
  for (const UsagePoint& p : Points(since_us)) {
    points.push_back({{"t", internal::FormatTime(p.time_us)},
                      {"time_us", p.time_us},
                      {"nodes", p.nodes},
                      {"devices", p.devices},
                      {"devices_in_use", p.devices_in_use},
                      {"device_memory_capacity_mib", p.device_memory_capacity_mib},
                      {"device_memory_allocated_mib", p.device_memory_allocated_mib},
                      {"device_compute_capacity_milli", p.device_compute_capacity_milli},
                      {"device_compute_allocated_milli", p.device_compute_allocated_milli},
                      {"queued_jobs", p.queued_jobs}});
  }
  Json out = {{"interval_s", static_cast<double>(interval_) / kMicrosPerSecond},
              {"capacity", capacity_},
              {"points", std::move(points)}};
  return out.dump();
}

void UsageHistory::Start(std::function<UsagePoint()> measure) {
  sampler_ = std::thread([this, measure = std::move(measure)] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      UsagePoint p = measure();
      Add(p);
      lock.lock();
      wake_.wait_for(lock, std::chrono::microseconds(interval_), [this] { return stopping_; });
    }
  });
}

void UsageHistory::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (sampler_.joinable()) sampler_.join();
}

}  // namespace xpool::server
