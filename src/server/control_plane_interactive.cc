// ControlPlane: the time limits of interactive jobs (kind: interactive, docs/jobs.md): ttl and idle-timeout.
#include <algorithm>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/control_plane.h"

namespace xpool::server {
namespace {

// "8h", "30m", "90s": the largest unit that divides it.
std::string ShortDuration(TimeMicros micros) {
  const int64_t s = micros / kMicrosPerSecond;
  if (s > 0 && s % 3600 == 0) return std::to_string(s / 3600) + "h";
  if (s > 0 && s % 60 == 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

}  // namespace

void ControlPlane::NoteInteractiveTraffic(JobId id) {
  const TimeMicros now = clock_.NowMicros();
  std::lock_guard lock(traffic_mu_);
  last_traffic_[id] = now;
}

int ControlPlane::CheckInteractiveLimits() {
  const TimeMicros now = clock_.NowMicros();
  std::unordered_map<JobId, TimeMicros> traffic;
  TimeMicros since_check = 0;
  {
    std::lock_guard lock(traffic_mu_);
    if (first_interactive_check_ == 0) first_interactive_check_ = now;
    since_check = first_interactive_check_;
    traffic = last_traffic_;
  }
  std::vector<std::pair<JobId, std::string>> ending;
  std::vector<JobId> gone;  // traffic entries of jobs no longer held
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, h] : held_) {
      if (h.interactive_ttl == 0 || h.state != JobState::kRunning) continue;
      if (now - h.last_start >= h.interactive_ttl) {
        ending.emplace_back(id, "interactive ttl " + ShortDuration(h.interactive_ttl) + " reached");
        continue;
      }
      if (h.interactive_idle == 0) continue;
      TimeMicros last = std::max(h.last_start, since_check);
      if (auto t = traffic.find(id); t != traffic.end()) last = std::max(last, t->second);
      if (now - last >= h.interactive_idle) {
        ending.emplace_back(id, "idle for " + ShortDuration(h.interactive_idle) + " (no traffic through the proxy)");
      }
    }
    for (const auto& [id, at] : traffic) {
      if (held_.count(id) == 0) gone.push_back(id);
    }
  }
  if (!gone.empty()) {
    std::lock_guard lock(traffic_mu_);
    for (JobId id : gone) last_traffic_.erase(id);
  }
  int ended = 0;
  for (const auto& [id, reason] : ending) {
    Result<JobRecord> r = Cancel(id, reason);
    if (r.ok()) {
      ++ended;
    } else {
      std::fprintf(stderr, "xpool server: ending interactive job %lld: %s\n", static_cast<long long>(id.value()),
                   r.status().ToString().c_str());
    }
  }
  return ended;
}

}  // namespace xpool::server
