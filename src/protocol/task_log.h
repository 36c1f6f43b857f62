#pragma once
// Task logs: what a task writes to stdout and stderr, captured by the launcher into one
// size-capped, rotated file per task, and read back by `xpool logs JOB [--replica N] [-f]`.
//
// Files: <path> is the live file; when a write would take it past max_bytes it becomes <path>.1
// (older ones shift to .2 ... .keep, the oldest is deleted). stdout and stderr share one pipe, so
// their lines stay in order. When the disk fills (or any write fails), LogWriter stops writing,
// records a note and discards what follows: the task is never blocked or killed because of its log.
//
// Stream offsets: a byte's offset in the task's log stream is how many bytes the log received before it, across
// rotations (deleted rotated files included) and across runs of the task appending to the same log. LogWriter
// records the stream offset of each new live file's first byte in a small file beside the log
// (LogOffsetPath: ".<name>.offset", "<inode> <offset>"), so a reader that starts late — an agent restarted after
// rotations, adopting a running task — still counts offsets as the first reader did. A log without that file
// never rotated, or predates it: its oldest kept file is taken to start at offset 0.
//
// LogWriter is owned by one task's log pump thread; note() and stopped() are safe from any thread.
// The reading functions are stateless; LogFollower is owned by one reader (not thread-safe).
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace xpool::protocol {

struct LogLimits {
  int64_t max_bytes = 10 << 20;  // per file
  int keep = 3;                  // rotated files kept besides the live one
};

class LogWriter {
 public:
  LogWriter(std::string path, LogLimits limits);
  ~LogWriter();
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Opens (appending) the live file, creating it. An error here means no log at all for the task.
  Status Open();
  // Appends task output, rotating as needed. Never fails: a write error stops logging with a note.
  void Write(std::string_view data);
  // Appends a line "[xpool] <text>" (launcher events: start failures, restarts). Also subject to
  // the limits.
  void Note(std::string_view text);

  bool stopped() const { return stopped_.load(); }
  std::string note() const;
  int64_t bytes_written() const { return total_.load(); }

 private:
  void WriteChunk(std::string_view data);
  bool Rotate();
  void StopWithNote(const std::string& why);

  const std::string path_;
  const LogLimits limits_;
  int fd_ = -1;
  int64_t size_ = 0;  // of the live file
  int64_t base_ = 0;  // stream offset of the live file's first byte
  std::atomic<bool> stopped_{false};
  std::atomic<int64_t> total_{0};
  mutable std::mutex note_mu_;
  std::string note_;  // guarded by note_mu_
};

// The task's log files, oldest first (<path>.N ... <path>.1, <path>); only those that exist.
std::vector<std::string> LogFiles(const std::string& path);
// Where LogWriter records the live file's stream offset: <dir>/.<name>.offset.
std::string LogOffsetPath(const std::string& path);
// The last `max_bytes` of the task's output across its rotated files (all of it when max_bytes <=
// 0). NotFound when the task has no log.
Result<std::string> ReadLogTail(const std::string& path, int64_t max_bytes);

// Up to `max_bytes` of the task's log stream from stream offset `from` (from < 0: the last max_bytes), across
// its rotated files: `data` holds bytes [offset, next_offset); `first_offset` is the oldest byte kept (offset >
// from when older output was rotated away). NotFound when the task has no log.
struct LogRange {
  int64_t first_offset = 0;
  int64_t offset = 0;
  int64_t next_offset = 0;
  int64_t end_offset = 0;  // the stream's length in the files now
  std::string data;
};
Result<LogRange> ReadLogRange(const std::string& path, int64_t from, int64_t max_bytes);

// Follows a live log across rotations (as `tail -F`): each ReadNew() returns what was appended
// since the last.
class LogFollower {
 public:
  explicit LogFollower(std::string path) : path_(std::move(path)) {}
  ~LogFollower();
  LogFollower(const LogFollower&) = delete;
  LogFollower& operator=(const LogFollower&) = delete;

  // Starts at the live file's beginning (from_start) or its end. NotFound when there is no log yet.
  Status Open(bool from_start);
  // Starts `max_bytes` before the end of the stream, in whichever kept file holds that byte (at the oldest kept
  // byte when fewer are kept). NotFound when there is no log yet.
  Status OpenTail(int64_t max_bytes);
  // New output, possibly empty. Follows the live file when it is rotated (finishing the old one
  // first).
  Result<std::string> ReadNew();
  // The stream offset of the next byte ReadNew returns (see "Stream offsets" above). What one ReadNew returns
  // is contiguous from offset() before the call; when output was rotated away unread (more than `keep`
  // rotations between two reads) the call returns what came before the gap and offset() moves past it (to the
  // oldest kept byte), so offset() > the old offset() + the bytes returned.
  int64_t offset() const { return offset_; }

 private:
  Result<std::string> ReadNewUncounted();

  std::string path_;
  int fd_ = -1;
  ino_t inode_ = 0;
  int64_t offset_ = 0;
  int64_t skip_to_ = -1;  // set by ReadNewUncounted when it skipped a gap: offset_ after it
};

}  // namespace xpool::protocol
