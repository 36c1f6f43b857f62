#pragma once
// LogRelay: the server's copy of the tail of every task's output, fed by agents' heartbeats, read by
// `GET /api/v1/jobs/{id}/logs` (`xpool logs JOB [--replica N] [-f]`).
//
// Why a relay: a remote agent's log files are on its machine, and the agent only ever talks to the server (no
// port of its own to open or secure). So each heartbeat carries, per task, the output written since the last
// acknowledged heartbeat (TaskReport::log_offset/log_data, at most kMaxLogChunkBytes (protocol/messages.h) per task),
// and the server keeps the last `max_bytes_per_task` of each task's stream in memory. Offsets are byte offsets in the
// task's log stream as the agent reads it; a chunk the server already has (a resend after a lost reply, or a restarted
// agent reading the same file again) is dropped, an overlap keeps only what is new. Memory is bounded: at most
// `max_tasks` streams, the least recently written dropped first. Lost on a server restart (the files stay on the
// agent's machine: <state-dir>/<task>/output.log); where those files are on the server's machine (`xpool up`, an
// agent beside the server: LogRelayOptions::disk_dirs) a read the memory cannot answer reads them.
//
// Owned by the Server. Thread-safe (one mutex; Append and Read are short).
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace xpool::protocol {

struct LogRelayOptions {
  int64_t max_bytes_per_task = 1 << 20;
  size_t max_tasks = 4096;
  // Task directories on this machine (an agent's --state-dir, `xpool up`'s STATE/tasks): a read the relay cannot
  // answer from memory (a restarted server, output older than it holds) reads <dir>/<task>/output.log there.
  std::vector<std::string> disk_dirs;
};

// What a read returns: bytes [offset, next_offset) of the stream; `first_offset` is the oldest byte still held
// (a reader that asked for less got a gap, which `offset` > asked shows).
// `end_offset`: the length of the whole stream when known — from the agent (MarkEnd: the task ended and its log
// was read to the end), or the files' length for a read from disk (complete once the task has ended) — else -1.
struct LogSlice {
  int64_t first_offset = 0;
  int64_t offset = 0;
  int64_t next_offset = 0;
  int64_t end_offset = -1;
  std::string data;
};

class LogRelay {
 public:
  explicit LogRelay(LogRelayOptions options = {}) : options_(options) {}

  // Adds bytes [offset, offset + data.size()) of `task_id`'s stream.
  void Append(const std::string& task_id, int64_t offset, const std::string& data);
  // The task's whole stream is `end` bytes long (TaskReport::log_end): its copy is complete once it holds them.
  void MarkEnd(const std::string& task_id, int64_t end);
  // Up to `max_bytes` from `from` (clamped to what is held; from < 0 = the last max_bytes). NotFound when the
  // relay holds nothing for the task.
  // Bytes the relay does not hold come from the task's file in `disk_dirs` when one is there.
  Result<LogSlice> Read(const std::string& task_id, int64_t from, int64_t max_bytes) const;

 private:
  struct Stream {
    int64_t base = 0;  // stream offset of data[0]
    std::string data;
    std::list<std::string>::iterator lru;
    int64_t end = -1;  // the whole stream's length, once MarkEnd said it
  };
  // The task's stream, created (the least recently written dropped past max_tasks) at `base` when new, moved to
  // the front of the LRU list.
  Stream& StreamLocked(const std::string& task_id, int64_t base);
  LogSlice ReadLocked(const Stream& stream, int64_t from, int64_t max_bytes) const;
  Result<LogSlice> ReadDisk(const std::string& task_id, int64_t from, int64_t max_bytes) const;
  const LogRelayOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, Stream> streams_;  // guarded by mu_
  std::list<std::string> lru_;             // most recently written first; guarded by mu_
};

}  // namespace xpool::protocol
