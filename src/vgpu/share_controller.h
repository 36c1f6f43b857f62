// The compute limiter's two halves, both free of I/O and clocks so they are unit-tested against a simulated device:
//
// ShareController: a feedback controller that turns the task's measured SM utilisation into a launch rate (work
// units per second, a work unit being one thread block). HAMi refills a fixed number of tokens per tick, which on
// a large GPU barely throttles (HAMi-core #274); here the rate is adapted multiplicatively until the measured share
// equals the target, whatever the device's size:
//   1. e = (target - measured) / target                      (relative error; +1 when idle)
//   2. if e > 0 and the task did not use its budget (it is demand-limited), hold the rate (no wind-up)
//   3. rate *= exp(gain * e), the step clamped to [1/max_step, max_step] and the rate to [min_rate, max_rate]
// Measured utilisation lags one sampling period; with gain 0.5 the loop is stable for that lag (the
// characteristic roots of d(t+1) = d(t) - gain * d(t-1) lie inside the unit circle).
//
// LaunchBudget: a token bucket of work units refilled at the controller's rate. A launch takes its cost and, if
// that leaves the bucket in debt, waits until refills pay it back.
//
// ShareController is single-threaded (the sampler thread owns it); LaunchBudget is thread-safe (atomics).
#pragma once

#include <stdint.h>

#include <atomic>

namespace xpool::vgpu {

class ShareController {
 public:
  struct Config {
    double target_percent = 50;
    double gain = 0.5;
    double max_step = 2.0;
    double min_rate = 100;   // blocks per second
    double max_rate = 1e12;  // effectively unthrottled
    double initial_rate = 1e5;
  };

  explicit ShareController(const Config& config);

  // One sampling period: measured utilisation of the task (percent of the device) and whether the task was
  // throttled at all during it (false: its demand was below the budget). Returns the new rate.
  double Update(double measured_percent, bool throttled);
  // No measurement available: stop throttling (rate = max_rate); Update() resumes control from there.
  void Open() { rate_ = config_.max_rate; }
  double rate() const { return rate_; }
  const Config& config() const { return config_; }

 private:
  Config config_;
  double rate_;
};

class LaunchBudget {
 public:
  // Adds rate * seconds units, keeping at most `burst` in the bucket.
  void Refill(double units, int64_t burst);
  // Takes `cost` units; returns false when that left the bucket in debt (the caller waits for PaidBack()).
  bool Take(int64_t cost);
  bool PaidBack() const { return tokens_.load(std::memory_order_relaxed) >= 0; }
  // Whether any launch found the bucket in debt since the last call (the controller's "throttled" signal).
  bool ConsumeThrottled() { return throttled_.exchange(false, std::memory_order_relaxed); }
  int64_t tokens() const { return tokens_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> tokens_{0};
  std::atomic<bool> throttled_{false};
};

}  // namespace xpool::vgpu
