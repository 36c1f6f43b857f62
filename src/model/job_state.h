#pragma once
// JobState and the rules of the job lifecycle.
//
//   queued ──► scheduled ──► running ──► succeeded | failed | cancelled      (terminal: nothing leaves them)
//     ▲  │         │            │
//     │  │         └─► queued   └─► suspending ──► suspended ──► queued (resumed / re-queued by time-sharing)
//     │  └─► suspended (held by the user before it ran)
//     └──── running / suspending / suspended → queued (node lost, resume)
//
// Allowed (from → to):
//   queued     → scheduled, suspended, failed, cancelled
//   scheduled  → running, queued, failed, cancelled
//   running    → succeeded, failed, cancelled, suspending, queued
//   suspending → suspended, succeeded, failed, cancelled, queued
//   suspended  → queued, cancelled
// Everything else, including a state to itself, is refused with FailedPrecondition.
// Stateless functions; thread-safe.
#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace xpool {

enum class JobState : uint8_t {
  kQueued,
  kScheduled,
  kRunning,
  kSucceeded,
  kFailed,
  kCancelled,
  kSuspending,
  kSuspended,
};

inline constexpr JobState kAllJobStates[] = {
    JobState::kQueued, JobState::kScheduled, JobState::kRunning,    JobState::kSucceeded,
    JobState::kFailed, JobState::kCancelled, JobState::kSuspending, JobState::kSuspended,
};

// "queued", "scheduled", ...
std::string_view JobStateName(JobState state);
// Accepts the names above (case-insensitive).
Result<JobState> ParseJobState(std::string_view name);

// succeeded, failed, cancelled.
bool IsTerminal(JobState state);
// True when a job in this state holds (or is about to hold) devices: scheduled, running, suspending.
bool HoldsAllocation(JobState state);

bool IsLegalTransition(JobState from, JobState to);
// OK, or FailedPrecondition "cannot go from succeeded to running (succeeded is final)".
Status CheckTransition(JobState from, JobState to);

}  // namespace xpool
