#include "server/usage_history.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "model/node_builder.h"

namespace xpool::server {
namespace {

UsagePoint At(TimeMicros t, int64_t queued) {
  UsagePoint p;
  p.time_us = t;
  p.queued_jobs = queued;
  return p;
}

TEST(UsageHistoryTest, MeasureSumsDevicesAndAllocation) {
  NodeView a;
  a.node = NodeBuilder("a").WithGpus(2, "A100", 81920).Build();
  a.usage.devices.resize(2);
  a.usage.devices[0] = DeviceUsage{40960, 500, 1, false};
  NodeView b;
  b.node = NodeBuilder("b").WithGpus(1, "T4", 16384).Build();
  b.usage.devices.resize(1);
  b.usage.devices[0] = DeviceUsage{16384, 1000, 1, true};
  UsagePoint p = UsageHistory::Measure({a, b}, 3, 123);
  EXPECT_EQ(p.time_us, 123);
  EXPECT_EQ(p.nodes, 2);
  EXPECT_EQ(p.devices, 3);
  EXPECT_EQ(p.devices_in_use, 2);
  EXPECT_EQ(p.device_memory_capacity_mib, 2 * 81920 + 16384);
  EXPECT_EQ(p.device_memory_allocated_mib, 40960 + 16384);
  EXPECT_EQ(p.device_compute_capacity_milli, 3000);
  EXPECT_EQ(p.device_compute_allocated_milli, 1500);
  EXPECT_EQ(p.queued_jobs, 3);
}

TEST(UsageHistoryTest, KeepsOnlyTheNewestCapacityPointsInOrder) {
  UsageHistory h(4, kMicrosPerSecond);
  for (int i = 1; i <= 10; ++i) h.Add(At(i, i));
  std::vector<UsagePoint> points = h.Points();
  ASSERT_EQ(points.size(), 4u);
  for (size_t i = 0; i < points.size(); ++i) EXPECT_EQ(points[i].time_us, static_cast<TimeMicros>(7 + i));
  EXPECT_EQ(h.Points(8).size(), 2u);
  EXPECT_TRUE(h.Points(10).empty());
}

TEST(UsageHistoryTest, RenderJsonHasIntervalCapacityAndPoints) {
  UsageHistory h(16, 10 * kMicrosPerSecond);
  UsagePoint p = At(1'700'000'000'000'000, 2);
  p.device_memory_allocated_mib = 40960;
  h.Add(p);
  auto j = nlohmann::json::parse(h.RenderJson());
  EXPECT_EQ(j["interval_s"], 10);
  EXPECT_EQ(j["capacity"], 16);
  ASSERT_EQ(j["points"].size(), 1u);
  EXPECT_EQ(j["points"][0]["queued_jobs"], 2);
  EXPECT_EQ(j["points"][0]["device_memory_allocated_mib"], 40960);
  EXPECT_EQ(j["points"][0]["t"], "2023-11-14T22:13:20.000Z");
  EXPECT_TRUE(nlohmann::json::parse(h.RenderJson(1'700'000'000'000'000))["points"].empty());
}

TEST(UsageHistoryTest, SamplerMeasuresAtStartAndEveryIntervalUntilStopped) {
  UsageHistory h(100, 2000);  // 2 ms
  std::atomic<int> calls{0};
  h.Start([&] { return At(++calls, 0); });
  for (int i = 0; i < 2000 && calls.load() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  h.Stop();
  const int after_stop = calls.load();
  EXPECT_GE(after_stop, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(calls.load(), after_stop);
  EXPECT_EQ(static_cast<int>(h.Points().size()), after_stop);
}

}  // namespace
}  // namespace xpool::server
