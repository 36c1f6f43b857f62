#pragma once
// How a time-sharing victim is recognised from its state reason: the reason a victim is given starts with
// "suspended for job N" (scheduler/preemption/victim_selection.h), which is how a suspending job is known to go
// back to the queue (not stay suspended) after a restart too. Internal to src/server. Stateless; thread-safe.
#include <cstdint>
#include <string_view>

#include "common/ids.h"

namespace xpool::server::internal {

inline constexpr std::string_view kVictimPrefix = "suspended for job ";

inline bool IsVictimReason(std::string_view reason) { return reason.substr(0, kVictimPrefix.size()) == kVictimPrefix; }

// The preemptor's id from a victim's reason ("suspended for job 12 (...)"), or an unset id.
inline JobId PreemptorOf(std::string_view reason) {
  if (!IsVictimReason(reason)) return JobId();
  int64_t id = 0;
  for (size_t i = kVictimPrefix.size(); i < reason.size() && reason[i] >= '0' && reason[i] <= '9'; ++i) {
    id = id * 10 + (reason[i] - '0');
  }
  return JobId(id);
}

}  // namespace xpool::server::internal
