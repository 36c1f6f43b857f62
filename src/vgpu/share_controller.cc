#include "vgpu/share_controller.h"

#include <math.h>

#include <algorithm>

namespace xpool::vgpu {

ShareController::ShareController(const Config& config) : config_(config), rate_(config.initial_rate) {
  rate_ = std::clamp(rate_, config_.min_rate, config_.max_rate);
}

double ShareController::Update(double measured_percent, bool throttled) {
  double target = std::max(config_.target_percent, 1.0);
  double measured = std::clamp(measured_percent, 0.0, 100.0);
  double error = (target - measured) / target;
  if (error > 0 && !throttled) return rate_;  // demand-limited: raising the rate would only wind up
  double step = exp(config_.gain * error);
  step = std::clamp(step, 1.0 / config_.max_step, config_.max_step);
  rate_ = std::clamp(rate_ * step, config_.min_rate, config_.max_rate);
  return rate_;
}

void LaunchBudget::Refill(double units, int64_t burst) {
  int64_t add = units >= 9e18 ? INT64_MAX / 4 : static_cast<int64_t>(units);
  int64_t current = tokens_.load(std::memory_order_relaxed);
  int64_t next;
  do {
    next = current > burst - add ? std::max(burst, current) : current + add;
  } while (!tokens_.compare_exchange_weak(current, next, std::memory_order_relaxed));
}

bool LaunchBudget::Take(int64_t cost) {
  int64_t before = tokens_.fetch_sub(cost, std::memory_order_relaxed);
  if (before - cost >= 0) return true;
  throttled_.store(true, std::memory_order_relaxed);
  return false;
}

}  // namespace xpool::vgpu
