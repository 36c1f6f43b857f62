#include "agent/log_relay.h"

#include <algorithm>

namespace xpool::agent {

void LogRelay::Append(const std::string& task_id, int64_t offset, const std::string& data) {
  if (data.empty() || offset < 0) return;
  std::lock_guard lock(mu_);
  auto it = streams_.find(task_id);
  if (it == streams_.end()) {
    while (streams_.size() >= options_.max_tasks && !lru_.empty()) {
      streams_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(task_id);
    it = streams_.emplace(task_id, Stream{offset, "", lru_.begin()}).first;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  Stream& s = it->second;
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

Result<LogSlice> LogRelay::Read(const std::string& task_id, int64_t from, int64_t max_bytes) const {
  std::lock_guard lock(mu_);
  auto it = streams_.find(task_id);
  if (it == streams_.end()) return NotFoundError("no output from task " + task_id + " yet");
  const Stream& s = it->second;
  const int64_t end = s.base + static_cast<int64_t>(s.data.size());
  LogSlice out;
  out.first_offset = s.base;
  if (max_bytes <= 0) max_bytes = options_.max_bytes_per_task;
  int64_t start = from < 0 ? std::max(s.base, end - max_bytes) : std::clamp(from, s.base, end);
  const int64_t n = std::min(max_bytes, end - start);
  out.offset = start;
  out.next_offset = start + n;
  out.data = s.data.substr(static_cast<size_t>(start - s.base), static_cast<size_t>(n));
  return out;
}

}  // namespace xpool::agent
