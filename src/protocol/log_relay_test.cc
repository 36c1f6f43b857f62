#include "protocol/log_relay.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/testing/test_util.h"
#include "protocol/task_log.h"

namespace xpool::protocol {
namespace {

// A restarted server holds nothing (or only what agents re-sent since): the task's file answers the rest.
TEST(LogRelayTest, ReadsWhatItDoesNotHoldFromTheTaskDirectory) {
  const std::string dir = FreshDir("relay_disk");
  std::filesystem::create_directories(dir + "/job3-r1");
  {
    LogWriter log(dir + "/job3-r1/output.log", LogLimits{});
    ASSERT_TRUE(log.Open().ok());
    log.Write("line 1\nline 2\nline 3\n");
  }
  LogRelayOptions options;
  options.disk_dirs = {dir + "/elsewhere", dir};
  LogRelay relay(options);
  auto all = relay.Read("job3-r1", 0, 1000);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->data, "line 1\nline 2\nline 3\n");
  EXPECT_EQ(all->next_offset, 21);
  // The agent re-sends only the tail; a read from the start still gets everything, in stream offsets.
  relay.Append("job3-r1", 14, "line 3\nline 4\n");
  auto from_start = relay.Read("job3-r1", 0, 1000);
  ASSERT_TRUE(from_start.ok());
  EXPECT_EQ(from_start->data, "line 1\nline 2\nline 3\n");  // the file, as far as it goes
  auto rest = relay.Read("job3-r1", from_start->next_offset, 1000);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->data, "line 4\n");  // memory holds what the file does not have yet
  EXPECT_EQ(relay.Read("job9-r0", 0, 10).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(relay.Read("../job3-r1", 0, 10).status().code(), StatusCode::kNotFound);  // no climbing out
  std::filesystem::remove_all(dir);
}

TEST(LogRelayTest, AppendsInOrderAndDropsResends) {
  LogRelay relay;
  EXPECT_EQ(relay.Read("t", 0, 100).status().code(), StatusCode::kNotFound);
  relay.Append("t", 0, "hello ");
  relay.Append("t", 6, "world\n");
  relay.Append("t", 0, "hello ");          // a resend after a lost reply
  relay.Append("t", 3, "lo world\nmore");  // overlaps: only "more" is new
  auto all = relay.Read("t", 0, 1000);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->data, "hello world\nmore");
  EXPECT_EQ(all->offset, 0);
  EXPECT_EQ(all->next_offset, 16);
  auto tail = relay.Read("t", 12, 1000);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->data, "more");
  auto nothing_new = relay.Read("t", 16, 1000);
  ASSERT_TRUE(nothing_new.ok());
  EXPECT_EQ(nothing_new->data, "");
  EXPECT_EQ(nothing_new->next_offset, 16);
  auto last = relay.Read("t", -1, 5);  // the last 5 bytes
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->data, "\nmore");
  EXPECT_EQ(last->offset, 11);
}

TEST(LogRelayTest, KeepsTheLastBytesPerTaskAndBoundsTasks) {
  LogRelay relay({/*max_bytes_per_task=*/8, /*max_tasks=*/2, /*disk_dirs=*/{}});
  relay.Append("a", 0, "0123456789");
  auto a = relay.Read("a", 0, 100);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first_offset, 2);
  EXPECT_EQ(a->offset, 2);  // asked for 0: the reader sees the gap
  EXPECT_EQ(a->data, "23456789");
  relay.Append("a", 20, "xy");  // a gap (the agent dropped output): start again there
  a = relay.Read("a", 0, 100);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first_offset, 20);
  EXPECT_EQ(a->data, "xy");
  relay.Append("b", 0, "b");
  relay.Append("a", 22, "z");  // a is now the most recently written
  relay.Append("c", 0, "c");   // evicts b, the least recently written
  EXPECT_TRUE(relay.Read("a", 0, 100).ok());
  EXPECT_FALSE(relay.Read("b", 0, 100).ok());
  EXPECT_TRUE(relay.Read("c", 0, 100).ok());
}

// The end of a task's log (TaskReport::log_end) is kept with its stream; a read says it, and a chunk that arrives
// after the end was heard of (the report carried the end but its data waited for the next heartbeat) is kept.
TEST(LogRelayTest, KnowsWhereAStreamEnds) {
  LogRelay relay;
  relay.Append("t", 0, "abc");
  EXPECT_EQ(relay.Read("t", 0, 100)->end_offset, -1);
  relay.MarkEnd("t", 6);
  auto part = relay.Read("t", 0, 100);
  EXPECT_EQ(part->end_offset, 6);
  EXPECT_EQ(part->next_offset, 3);  // not all of it yet
  relay.Append("t", 3, "def");
  EXPECT_EQ(relay.Read("t", 0, 100)->next_offset, 6);
  relay.MarkEnd("late", 10);  // the end first, then the bytes
  relay.Append("late", 4, "456789");
  auto late = relay.Read("late", 4, 100);
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->data, "456789");
  EXPECT_EQ(late->next_offset, late->end_offset);
  relay.MarkEnd("t", -1);  // "unknown" never erases a known end
  EXPECT_EQ(relay.Read("t", 0, 100)->end_offset, 6);
}

}  // namespace
}  // namespace xpool::protocol
