#include "protocol/log_relay.h"

#include <algorithm>

#include "protocol/task_log.h"

namespace xpool::protocol {

LogRelay::Stream& LogRelay::StreamLocked(const std::string& task_id, int64_t base) {
  auto it = streams_.find(task_id);
  if (it == streams_.end()) {
    while (streams_.size() >= options_.max_tasks && !lru_.empty()) {
      streams_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(task_id);
    it = streams_.emplace(task_id, Stream{base, "", lru_.begin()}).first;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  return it->second;
}

void LogRelay::MarkEnd(const std::string& task_id, int64_t end) {
  if (end < 0) return;
  std::lock_guard lock(mu_);
  // A stream first heard of here holds nothing: it starts at its end (older bytes are not held).
  StreamLocked(task_id, end).end = end;
}

void LogRelay::Append(const std::string& task_id, int64_t offset, const std::string& data) {
  if (data.empty() || offset < 0) return;
  std::lock_guard lock(mu_);
  Stream& s = StreamLocked(task_id, offset);
  if (s.data.empty()) s.base = offset;  // holds nothing yet (or only its end, from MarkEnd): starts here
  const int64_t end = s.base + static_cast<int64_t>(s.data.size());
  const int64_t chunk_end = offset + static_cast<int64_t>(data.size());
  if (chunk_end <= end) return;  // already held
  if (offset > end) {
    // A gap (the agent dropped output it could not ship): start again from this chunk.
    s.base = offset;
    s.data = data;
  } else {
    s.data.append(data, static_cast<size_t>(end - offset), std::string::npos);
  }
  const int64_t excess = static_cast<int64_t>(s.data.size()) - options_.max_bytes_per_task;
  if (excess > 0) {
    s.data.erase(0, static_cast<size_t>(excess));
    s.base += excess;
  }
}

Result<LogSlice> LogRelay::ReadDisk(const std::string& task_id, int64_t from, int64_t max_bytes) const {
  if (max_bytes <= 0) max_bytes = options_.max_bytes_per_task;
  for (const std::string& dir : options_.disk_dirs) {
    auto range = ReadLogRange(dir + "/" + task_id + "/output.log", from, max_bytes);
    if (!range.ok()) continue;
    return LogSlice{range->first_offset, range->offset, range->next_offset, range->end_offset, std::move(range->data)};
  }
  return NotFoundError("no output from task " + task_id + " yet");
}

Result<LogSlice> LogRelay::Read(const std::string& task_id, int64_t from, int64_t max_bytes) const {
  // A task id names a directory below disk_dirs: nothing that could climb out of it.
  const bool plain_id = !task_id.empty() && task_id[0] != '.' && task_id.find('/') == std::string::npos;
  {
    std::lock_guard lock(mu_);
    auto it = streams_.find(task_id);
    // Memory answers when it holds the bytes asked for (a tail: when it holds the stream from its start).
    if (it != streams_.end() && (!plain_id || (from < 0 ? it->second.base == 0 : from >= it->second.base))) {
      return ReadLocked(it->second, from, max_bytes);
    }
  }
  // Not held, or older than what is held (a restarted server holds only what agents sent since): the file.
  if (plain_id) {
    auto disk = ReadDisk(task_id, from, max_bytes);
    if (disk.ok()) return disk;
  }
  std::lock_guard lock(mu_);
  auto it = streams_.find(task_id);
  if (it == streams_.end()) return NotFoundError("no output from task " + task_id + " yet");
  return ReadLocked(it->second, from, max_bytes);
}

LogSlice LogRelay::ReadLocked(const Stream& s, int64_t from, int64_t max_bytes) const {
  const int64_t end = s.base + static_cast<int64_t>(s.data.size());
  LogSlice out;
  out.first_offset = s.base;
  if (max_bytes <= 0) max_bytes = options_.max_bytes_per_task;
  int64_t start = from < 0 ? std::max(s.base, end - max_bytes) : std::clamp(from, s.base, end);
  const int64_t n = std::min(max_bytes, end - start);
  out.offset = start;
  out.next_offset = start + n;
  out.end_offset = s.end;
  out.data = s.data.substr(static_cast<size_t>(start - s.base), static_cast<size_t>(n));
  return out;
}

}  // namespace xpool::protocol
