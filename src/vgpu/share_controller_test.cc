#include "vgpu/share_controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace xpool::vgpu {
namespace {

// A GPU time-sliced between tasks: each period a task submits min(rate, demand) blocks per second; when the sum
// exceeds the device's capacity every task is served in proportion. NVML reports a task's utilisation one period
// late and with noise (seeded).
class SimulatedDevice {
 public:
  struct Task {
    double target;
    double demand;  // blocks per second the application would launch unthrottled
    ShareController controller;
    double last_util = 0;
    std::vector<double> shares;
  };

  SimulatedDevice(double capacity, uint32_t seed) : capacity_(capacity), rng_(seed) {}

  void AddTask(double target, double demand) {
    ShareController::Config config;
    config.target_percent = target;
    tasks_.push_back(Task{target, demand, ShareController(config), 0.0, {}});
  }

  void Run(int periods) {
    std::normal_distribution<double> noise(0.0, 2.0);
    for (int p = 0; p < periods; ++p) {
      double submitted_total = 0;
      std::vector<double> submitted;
      for (Task& t : tasks_) {
        submitted.push_back(std::min(t.controller.rate(), t.demand));
        submitted_total += submitted.back();
      }
      double scale = submitted_total > capacity_ ? capacity_ / submitted_total : 1.0;
      for (size_t i = 0; i < tasks_.size(); ++i) {
        Task& t = tasks_[i];
        double share = 100.0 * submitted[i] * scale / capacity_;
        t.shares.push_back(share);
        bool throttled = t.demand > t.controller.rate();
        t.controller.Update(std::clamp(t.last_util + noise(rng_), 0.0, 100.0), throttled);  // one period late
        t.last_util = share;
      }
    }
  }

  double MeanShare(size_t task, int last_periods) const {
    const std::vector<double>& s = tasks_[task].shares;
    double sum = 0;
    for (size_t i = s.size() - static_cast<size_t>(last_periods); i < s.size(); ++i) sum += s[i];
    return sum / last_periods;
  }
  double MaxShare(size_t task, int from) const {
    const std::vector<double>& s = tasks_[task].shares;
    return *std::max_element(s.begin() + from, s.end());
  }
  Task& task(size_t i) { return tasks_[i]; }

 private:
  double capacity_;
  std::mt19937 rng_;
  std::vector<Task> tasks_;
};

constexpr double kUnbounded = 1e15;

TEST(ShareControllerTest, SplitsConvergeToTheirLimitsOnSmallAndLargeDevices) {
  struct Row {
    double capacity;
    double a, b;
  };
  const Row rows[] = {{2e4, 30, 70}, {1e7, 30, 70}, {5e9, 30, 70}, {1e7, 50, 50}, {1e7, 20, 40}};
  for (const Row& row : rows) {
    SCOPED_TRACE(testing::Message() << "capacity " << row.capacity << " split " << row.a << "/" << row.b);
    SimulatedDevice device(row.capacity, 42);
    device.AddTask(row.a, kUnbounded);
    device.AddTask(row.b, kUnbounded);
    device.Run(600);  // one minute of 100 ms periods
    EXPECT_NEAR(device.MeanShare(0, 200), row.a, 5.0);
    EXPECT_NEAR(device.MeanShare(1, 200), row.b, 5.0);
  }
}

TEST(ShareControllerTest, ThrottlesALoneTaskOnAnIdleLargeGpu) {
  // HAMi-core #274: a fixed token refill barely throttles a large GPU. The controller scales to any size.
  for (double capacity : {1e5, 1e8, 1e10}) {
    SCOPED_TRACE(capacity);
    SimulatedDevice device(capacity, 7);
    device.AddTask(30, kUnbounded);
    device.Run(400);
    EXPECT_NEAR(device.MeanShare(0, 200), 30.0, 5.0);
  }
}

TEST(ShareControllerTest, NoWindUpWhileDemandIsLow) {
  SimulatedDevice device(1e7, 3);
  device.AddTask(30, 1e6);  // wants 10 % of the device
  device.Run(300);
  EXPECT_NEAR(device.MeanShare(0, 100), 10.0, 3.0);
  double rate_while_idle = device.task(0).controller.rate();
  EXPECT_LT(rate_while_idle, 1e7);  // did not climb towards the maximum while unthrottled
  device.task(0).demand = kUnbounded;
  device.Run(300);
  EXPECT_LT(device.MaxShare(0, 300), 60.0);  // no burst to the whole device when demand returns
  EXPECT_NEAR(device.MeanShare(0, 100), 30.0, 5.0);
}

TEST(ShareControllerTest, RateStaysWithinBounds) {
  ShareController::Config config;
  config.target_percent = 50;
  ShareController controller(config);
  for (int i = 0; i < 200; ++i) controller.Update(100, true);
  EXPECT_DOUBLE_EQ(controller.rate(), config.min_rate);
  for (int i = 0; i < 2000; ++i) controller.Update(0, true);
  EXPECT_DOUBLE_EQ(controller.rate(), config.max_rate);
  double before = controller.rate();
  controller.Update(0, false);
  EXPECT_DOUBLE_EQ(controller.rate(), before);
}

TEST(LaunchBudgetTest, DebtIsPaidBackByRefills) {
  LaunchBudget budget;
  budget.Refill(100, 1000);
  EXPECT_TRUE(budget.Take(60));
  EXPECT_FALSE(budget.Take(60));  // 40 - 60: in debt
  EXPECT_FALSE(budget.PaidBack());
  EXPECT_TRUE(budget.ConsumeThrottled());
  EXPECT_FALSE(budget.ConsumeThrottled());
  budget.Refill(30, 1000);
  EXPECT_TRUE(budget.PaidBack());
  budget.Refill(1e6, 1000);
  EXPECT_EQ(budget.tokens(), 1000);  // capped at the burst
}

}  // namespace
}  // namespace xpool::vgpu
