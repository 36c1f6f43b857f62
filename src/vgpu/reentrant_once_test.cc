#include "vgpu/internal/reentrant_once.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace xpool::vgpu {
namespace {

ReentrantOnce g_outer;
ReentrantOnce g_inner;
int g_outer_runs = 0;
int g_inner_runs = 0;
int g_nested_returns = 0;

void Inner() {
  ++g_inner_runs;
  g_outer.Run([] { ++g_outer_runs; });  // re-entry into the outer once from inside the inner: returns at once
  ++g_nested_returns;
}

void Outer() {
  ++g_outer_runs;
  g_inner.Run(&Inner);
  g_outer.Run([] { ++g_outer_runs; });  // direct re-entry
  ++g_nested_returns;
}

TEST(ReentrantOnceTest, NestedRunsReturnInsteadOfDeadlocking) {
  g_outer.Run(&Outer);
  EXPECT_EQ(g_outer_runs, 1);
  EXPECT_EQ(g_inner_runs, 1);
  EXPECT_EQ(g_nested_returns, 2);
  EXPECT_TRUE(g_outer.done());
  g_outer.Run(&Outer);
  EXPECT_EQ(g_outer_runs, 1);
}

TEST(ReentrantOnceTest, ConcurrentCallersWaitForTheOneRun) {
  ReentrantOnce once;
  std::atomic<int> runs{0};
  std::atomic<int> finished_before_return{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      once.Run([&] {
        ++runs;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        done = true;
      });
      if (done) ++finished_before_return;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(finished_before_return, 8);  // nobody returned before the run completed
}

}  // namespace
}  // namespace xpool::vgpu
