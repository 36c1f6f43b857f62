#pragma once
// UsageHistory: a small, bounded time series of cluster allocation for Studio's Overview chart
// (GET /api/v1/usage/history). One point every `interval` (10 s by default); the oldest points are dropped once
// `capacity` points are kept (8640 = 24 hours at 10 s, about 0.5 MiB).
//
// A sampler thread (Start/Stop) calls a measuring function every interval; tests may call Add() directly.
// Owned by the Server. Thread-safe: Add, Points, RenderJson and the sampler may run concurrently.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "server/control_plane.h"

namespace xpool::server {

// The cluster at one moment: device totals, how much of them tasks hold, and the queue.
struct UsagePoint {
  TimeMicros time_us = 0;
  int64_t nodes = 0;
  int64_t devices = 0;
  int64_t devices_in_use = 0;  // devices with at least one task on them
  int64_t device_memory_capacity_mib = 0;
  int64_t device_memory_allocated_mib = 0;
  int64_t device_compute_capacity_milli = 0;
  int64_t device_compute_allocated_milli = 0;
  int64_t queued_jobs = 0;
};

class UsageHistory {
 public:
  static constexpr size_t kDefaultCapacity = 8640;
  static constexpr TimeMicros kDefaultInterval = 10 * kMicrosPerSecond;

  explicit UsageHistory(size_t capacity = kDefaultCapacity, TimeMicros interval = kDefaultInterval);
  ~UsageHistory();
  UsageHistory(const UsageHistory&) = delete;
  UsageHistory& operator=(const UsageHistory&) = delete;

  // Sums the nodes' devices and their allocation into one point.
  static UsagePoint Measure(const std::vector<NodeView>& nodes, int64_t queued_jobs, TimeMicros now);

  void Add(const UsagePoint& point);
  // Points with time_us > since_us, oldest first.
  std::vector<UsagePoint> Points(TimeMicros since_us = 0) const;
  // {"interval_s", "capacity", "points": [{"t": ISO time, "time_us", ...}]} for the API.
  std::string RenderJson(TimeMicros since_us = 0) const;

  // Samples `measure` now and then every interval until Stop() (or destruction). Start once.
  void Start(std::function<UsagePoint()> measure);
  void Stop();

  size_t capacity() const { return capacity_; }
  TimeMicros interval() const { return interval_; }

 private:
  const size_t capacity_;
  const TimeMicros interval_;
  mutable std::mutex mu_;
  std::vector<UsagePoint> ring_;  // guarded by mu_; ring_[next_] is the oldest once full
  size_t next_ = 0;               // guarded by mu_
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread sampler_;
};

}  // namespace xpool::server
