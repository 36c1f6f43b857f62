#include "protocol/task_log.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "common/testing/test_util.h"

namespace xpool::protocol {
namespace {

int64_t FileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

TEST(LogWriterTest, RotatesAndKeepsTheNewest) {
  const std::string dir = FreshDir("agent_rotate");
  const std::string path = dir + "/output.log";
  LogWriter log(path, LogLimits{100, 2});
  ASSERT_TRUE(log.Open().ok());
  std::string all;
  for (int i = 0; i < 100; ++i) {
    const std::string line = "line " + std::to_string(i) + "\n";
    log.Write(line);
    all += line;
  }
  EXPECT_FALSE(log.stopped());
  EXPECT_EQ(log.bytes_written(), static_cast<int64_t>(all.size()));
  const auto files = LogFiles(path);
  ASSERT_EQ(files.size(), 3u);  // .2, .1, live
  EXPECT_EQ(files[0], path + ".2");
  EXPECT_EQ(FileSize(path + ".3"), -1);
  for (const auto& f : files) EXPECT_LE(FileSize(f), 100);
  EXPECT_EQ(FileSize(path + ".1"), 100);
  // The tail is the end of what was written, across files.
  auto tail = ReadLogTail(path, 150);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(*tail, all.substr(all.size() - 150));
  auto everything = ReadLogTail(path, 0);
  ASSERT_TRUE(everything.ok());
  EXPECT_EQ(*everything, all.substr(all.size() - everything->size()));
  EXPECT_GT(everything->size(), 200u);
  std::filesystem::remove_all(dir);
}

// A range of the stream by offset, across rotated files (what the server reads from disk for `xpool logs`).
TEST(LogReaderTest, ReadsARangeByStreamOffsetAcrossRotations) {
  const std::string dir = FreshDir("agent_range");
  const std::string path = dir + "/output.log";
  std::string all;
  {
    LogWriter log(path, LogLimits{100, 2});
    ASSERT_TRUE(log.Open().ok());
    for (int i = 0; i < 100; ++i) {
      const std::string line = "line " + std::to_string(i) + "\n";
      log.Write(line);
      all += line;
    }
  }
  const int64_t end = static_cast<int64_t>(all.size());
  auto tail = ReadLogRange(path, -1, 50);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->next_offset, end);
  EXPECT_EQ(tail->offset, end - 50);
  EXPECT_EQ(tail->data, all.substr(all.size() - 50));
  // From the oldest kept byte (older output was rotated away), in pieces that span files.
  auto first = ReadLogRange(path, 0, 70);
  ASSERT_TRUE(first.ok());
  EXPECT_GT(first->first_offset, 0);
  EXPECT_EQ(first->offset, first->first_offset);
  std::string read = first->data;
  int64_t at = first->next_offset;
  while (at < end) {
    auto next = ReadLogRange(path, at, 70);
    ASSERT_TRUE(next.ok());
    ASSERT_EQ(next->offset, at);
    ASSERT_GT(next->next_offset, at);
    read += next->data;
    at = next->next_offset;
  }
  EXPECT_EQ(read, all.substr(static_cast<size_t>(first->first_offset)));
  auto past = ReadLogRange(path, end + 10, 70);
  ASSERT_TRUE(past.ok());
  EXPECT_EQ(past->offset, end);
  EXPECT_EQ(past->data, "");
  EXPECT_EQ(ReadLogRange(dir + "/none.log", 0, 10).status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

TEST(LogWriterTest, DiskFullStopsLoggingWithNote) {
  const std::string dir = FreshDir("agent_full");
  const std::string path = dir + "/output.log";
  ASSERT_EQ(::symlink("/dev/full", path.c_str()), 0);
  LogWriter log(path, LogLimits{1 << 20, 1});
  ASSERT_TRUE(log.Open().ok());
  log.Write("hello\n");
  EXPECT_TRUE(log.stopped());
  EXPECT_NE(log.note().find("the log disk is full"), std::string::npos) << log.note();
  log.Write("more\n");  // discarded, no crash
  EXPECT_EQ(log.bytes_written(), 0);
  std::filesystem::remove_all(dir);
}

TEST(LogReaderTest, MissingLogIsNotFound) {
  auto tail = ReadLogTail("/nonexistent/output.log", 10);
  ASSERT_FALSE(tail.ok());
  EXPECT_EQ(tail.status().code(), StatusCode::kNotFound);
  LogFollower follower("/nonexistent/output.log");
  EXPECT_EQ(follower.Open(true).code(), StatusCode::kNotFound);
}

TEST(LogFollowerTest, FollowsAcrossRotation) {
  const std::string dir = FreshDir("agent_follow");
  const std::string path = dir + "/output.log";
  LogWriter log(path, LogLimits{64, 3});
  ASSERT_TRUE(log.Open().ok());
  log.Write("before\n");
  LogFollower from_end(path);
  ASSERT_TRUE(from_end.Open(false).ok());
  LogFollower follower(path);
  ASSERT_TRUE(follower.Open(true).ok());
  EXPECT_EQ(*follower.ReadNew(), "before\n");
  EXPECT_EQ(*follower.ReadNew(), "");
  std::string expected, got;
  for (int i = 0; i < 40; ++i) {  // 40 × 9 bytes into 64-byte files: several rotations between reads
    const std::string line = "line " + std::to_string(100 + i) + "\n";
    expected += line;
    log.Write(line);
    if (i % 13 == 12) {
      auto more = follower.ReadNew();
      ASSERT_TRUE(more.ok());
      got += *more;
    }
  }
  got += *follower.ReadNew();
  EXPECT_EQ(got, expected);
  auto rest = from_end.ReadNew();  // a follower from the end saw only what came after it
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->find("before"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// Stream offsets survive rotations (also past `keep`, where files are deleted) and a new writer appending to the
// log: a follower opened late anywhere in the stream reads exactly the bytes at its offset.
TEST(LogFollowerTest, OffsetsCountAcrossRotationsAndWriters) {
  const std::string dir = FreshDir("agent_offsets");
  const std::string path = dir + "/output.log";
  std::string all;
  auto write = [&](LogWriter& log, int from, int to) {
    for (int i = from; i < to; ++i) {
      const std::string line = "line " + std::to_string(1000 + i) + "\n";  // 10 bytes
      log.Write(line);
      all += line;
    }
  };
  {
    LogWriter log(path, LogLimits{64, 2});
    ASSERT_TRUE(log.Open().ok());
    write(log, 0, 30);  // 300 bytes in 64-byte files: rotated past keep, the oldest files are gone
  }
  auto expect_tail = [&](int64_t max_bytes, int64_t want_offset) {
    SCOPED_TRACE("tail " + std::to_string(max_bytes));
    LogFollower f(path);
    ASSERT_TRUE(f.OpenTail(max_bytes).ok());
    EXPECT_EQ(f.offset(), want_offset);
    auto got = f.ReadNew();
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, all.substr(static_cast<size_t>(want_offset)));
    EXPECT_EQ(f.offset(), static_cast<int64_t>(all.size()));
  };
  const int64_t live_size = FileSize(path);
  const int64_t kept = live_size + FileSize(path + ".1") + FileSize(path + ".2");
  ASSERT_LT(kept, static_cast<int64_t>(all.size()));
  expect_tail(5, static_cast<int64_t>(all.size()) - 5);                          // inside the live file
  expect_tail(live_size + 7, static_cast<int64_t>(all.size()) - live_size - 7);  // inside .1
  expect_tail(1 << 20, static_cast<int64_t>(all.size()) - kept);                 // all that is kept
  LogFollower from_start(path);
  ASSERT_TRUE(from_start.Open(true).ok());
  EXPECT_EQ(from_start.offset(), static_cast<int64_t>(all.size()) - live_size);
  LogFollower from_end(path);
  ASSERT_TRUE(from_end.Open(false).ok());
  EXPECT_EQ(from_end.offset(), static_cast<int64_t>(all.size()));
  {
    // A later run of the task appends to the same log and rotates on: offsets go on from the first run's.
    LogWriter log(path, LogLimits{64, 2});
    ASSERT_TRUE(log.Open().ok());
    write(log, 30, 40);  // two rotations: the file from_end reads is still kept (.2)
    EXPECT_EQ(from_end.ReadNew().value(), all.substr(300));
    EXPECT_EQ(from_end.offset(), static_cast<int64_t>(all.size()));
  }
  expect_tail(25, static_cast<int64_t>(all.size()) - 25);
  expect_tail(1 << 20,
              static_cast<int64_t>(all.size()) - FileSize(path) - FileSize(path + ".1") - FileSize(path + ".2"));
  // The record is a hidden file beside the log, so `output.log*` globs see only output.
  EXPECT_EQ(LogOffsetPath(path), dir + "/.output.log.offset");
  EXPECT_GT(FileSize(LogOffsetPath(path)), 0);
  std::filesystem::remove_all(dir);
}

// More rotations than `keep` between two reads: the read returns the follower's file to its end, then offset()
// jumps over what was deleted to the oldest kept byte, and the next read goes on from there.
TEST(LogFollowerTest, SkipsOutputRotatedAwayUnreadAndSaysWhere) {
  const std::string dir = FreshDir("agent_gap");
  const std::string path = dir + "/output.log";
  LogWriter log(path, LogLimits{64, 1});
  ASSERT_TRUE(log.Open().ok());
  LogFollower follower(path);
  ASSERT_TRUE(follower.Open(true).ok());
  std::string all;
  for (int i = 0; i < 40; ++i) {  // 400 bytes: six rotations, one rotated file kept
    const std::string line = "line " + std::to_string(1000 + i) + "\n";
    log.Write(line);
    all += line;
  }
  auto first = follower.ReadNew();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, all.substr(0, 64));  // the file it had open, to its end
  const int64_t kept = FileSize(path) + FileSize(path + ".1");
  EXPECT_EQ(follower.offset(), static_cast<int64_t>(all.size()) - kept);
  const int64_t at = follower.offset();
  auto rest = follower.ReadNew();
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(*rest, all.substr(static_cast<size_t>(at)));
  EXPECT_EQ(follower.offset(), static_cast<int64_t>(all.size()));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace xpool::protocol
