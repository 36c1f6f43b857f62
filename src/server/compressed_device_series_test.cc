#include "server/compressed_device_series.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "http/testing/gunzip.h"

namespace xpool::server {
namespace {

using std::chrono::milliseconds;

// A piece's text, read as GzipOf carries it.
std::string Inflate(const http::DeflatedText& piece) { return testing::Gunzip(http::GzipOf({&piece})).value_or("?"); }

// Polls `done` for up to 10 s (the refresh thread runs on its own schedule).
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return done();
}

TEST(CompressedDeviceSeriesTest, TheFirstScrapeRendersThenTheThreadKeepsTheSeriesFresh) {
  std::atomic<int> value{1};
  CompressedDeviceSeries series([&](std::string* out) { *out += "x " + std::to_string(value.load()) + "\n"; },
                                {milliseconds(20), std::chrono::minutes(5)});
  EXPECT_EQ(series.renders(), 0);  // nothing before a scrape asks
  std::this_thread::sleep_for(milliseconds(60));
  EXPECT_EQ(series.renders(), 0);
  EXPECT_EQ(Inflate(*series.Get()), "x 1\n");
  EXPECT_GE(series.renders(), 1);
  value = 2;
  EXPECT_TRUE(Eventually([&] { return Inflate(*series.Get()) == "x 2\n"; }));  // refreshed without being asked
  EXPECT_GE(series.renders(), 2);
}

TEST(CompressedDeviceSeriesTest, RefreshingStopsWithoutScrapesAndTheNextScrapeRendersAtOnce) {
  std::atomic<int> value{1};
  CompressedDeviceSeries series([&](std::string* out) { *out += "x " + std::to_string(value.load()) + "\n"; },
                                {milliseconds(10), milliseconds(50)});
  ASSERT_EQ(Inflate(*series.Get()), "x 1\n");
  // No scrape for idle_after: the thread stops rendering.
  int64_t before = -1;
  EXPECT_TRUE(Eventually([&] {
    const int64_t now = series.renders();
    std::this_thread::sleep_for(milliseconds(100));
    const bool still = series.renders() == now;
    before = now;
    return still;
  }));
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(series.renders(), before);
  // The next scrape gets the present at once, not the series of before the pause.
  value = 7;
  EXPECT_EQ(Inflate(*series.Get()), "x 7\n");
  EXPECT_EQ(series.renders(), before + 1);
}

// A render that takes longer than a tenth of the refresh interval spaces the refreshes to ten renders' time.
TEST(CompressedDeviceSeriesTest, ASlowRenderIsRepeatedAtMostATenthOfTheTime) {
  CompressedDeviceSeries series(
      [](std::string* out) {
        std::this_thread::sleep_for(milliseconds(20));
        *out += "x 1\n";
      },
      {milliseconds(1), std::chrono::minutes(5)});
  ASSERT_EQ(Inflate(*series.Get()), "x 1\n");
  std::this_thread::sleep_for(milliseconds(600));
  // Every 1 ms after each 20 ms render would be ~28 renders; every 200 ms, at most 4.
  EXPECT_LE(series.renders(), 5);
  EXPECT_GE(series.renders(), 2);  // the thread does refresh
}

TEST(CompressedDeviceSeriesTest, ConcurrentScrapesShareOneRender) {
  std::atomic<int> rendering{0}, overlapped{0};
  CompressedDeviceSeries series(
      [&](std::string* out) {
        if (rendering.fetch_add(1) > 0) overlapped++;
        std::this_thread::sleep_for(milliseconds(50));
        rendering--;
        *out += "x 1\n";
      },
      {std::chrono::minutes(1), std::chrono::minutes(5)});
  std::vector<std::thread> scrapers;
  for (int i = 0; i < 8; ++i) scrapers.emplace_back([&] { EXPECT_EQ(Inflate(*series.Get()), "x 1\n"); });
  for (std::thread& t : scrapers) t.join();
  EXPECT_EQ(overlapped.load(), 0);
  EXPECT_EQ(series.renders(), 1);  // the refresh interval (a minute) has not passed
}

}  // namespace
}  // namespace xpool::server
