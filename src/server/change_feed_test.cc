#include "server/change_feed.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace xpool::server {
namespace {

TEST(ChangeFeedTest, GenerationsMoveOnPerNode) {
  ChangeFeed feed(1000);
  EXPECT_EQ(feed.Generation("a"), 1000);
  feed.Bump("a");
  EXPECT_EQ(feed.Generation("a"), 1001);
  EXPECT_EQ(feed.Generation("b"), 1000);
}

TEST(ChangeFeedTest, WaitReturnsAtOnceForAChangeItMissedAndWakesOnABump) {
  ChangeFeed feed(1);
  // The agent saw an older generation (a change came between its heartbeat and its wait): no waiting.
  feed.Bump("a");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(feed.Wait("a", 1, 10 * kMicrosPerSecond), 2);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // Nothing new: the timeout.
  EXPECT_EQ(feed.Wait("a", 2, 1000), 2);
  // Woken by a bump of its node, not of another.
  std::thread bumper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    feed.Bump("b");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    feed.Bump("a");
  });
  EXPECT_EQ(feed.Wait("a", 2, 10 * kMicrosPerSecond), 3);
  bumper.join();
}

TEST(ChangeFeedTest, SubscriptionsRunOnceAndCancelTellsWhetherTheyRan) {
  ChangeFeed feed(5);
  std::atomic<int> calls{0};
  std::atomic<int64_t> got{0};
  auto done = [&](int64_t g) {
    ++calls;
    got = g;
  };
  // Already different: called here, no id.
  EXPECT_EQ(feed.Subscribe("a", 4, done), 0u);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(got, 5);
  const uint64_t id = feed.Subscribe("a", 5, done);
  EXPECT_NE(id, 0u);
  EXPECT_EQ(feed.waiting(), 1u);
  feed.Bump("b");
  EXPECT_EQ(calls, 1);
  feed.Bump("a");
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(got, 6);
  EXPECT_FALSE(feed.Cancel(id));  // it ran
  feed.Bump("a");
  EXPECT_EQ(calls, 2);  // once only
  const uint64_t dropped = feed.Subscribe("a", 7, done);
  EXPECT_TRUE(feed.Cancel(dropped));
  feed.Bump("a");
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(feed.waiting(), 0u);
}

}  // namespace
}  // namespace xpool::server
