#include "server/change_feed.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

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

TEST(ChangeFeedTest, ABumpWakesItsNodesWaitersInOrderAndNoOthers) {
  ChangeFeed feed(1);
  std::vector<std::string> woken;
  auto waiter = [&](std::string name) { return [&woken, name](int64_t) { woken.push_back(name); }; };
  feed.Subscribe("a", 1, waiter("a1"));
  feed.Subscribe("b", 1, waiter("b1"));
  const uint64_t a2 = feed.Subscribe("a", 1, waiter("a2"));
  feed.Subscribe("a", 1, waiter("a3"));
  feed.Subscribe("c", 1, waiter("c1"));
  EXPECT_TRUE(feed.Cancel(a2));
  EXPECT_EQ(feed.waiting(), 4u);
  feed.Bump("a");
  EXPECT_EQ(woken, (std::vector<std::string>{"a1", "a3"}));
  EXPECT_EQ(feed.waiting(), 2u);
  // A node whose waiters all left is woken by nothing later; its next waiter is.
  feed.Subscribe("a", 2, waiter("a4"));
  feed.Bump("c");
  feed.Bump("a");
  EXPECT_EQ(woken, (std::vector<std::string>{"a1", "a3", "c1", "a4"}));
  EXPECT_EQ(feed.waiting(), 1u);  // b1
}

}  // namespace
}  // namespace xpool::server
