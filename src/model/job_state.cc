#include "model/job_state.h"

#include <cctype>
#include <string>

namespace xpool {

std::string_view JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return "queued";
    case JobState::kScheduled:
      return "scheduled";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
    case JobState::kSuspending:
      return "suspending";
    case JobState::kSuspended:
      return "suspended";
  }
  return "unknown";
}

Result<JobState> ParseJobState(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (JobState s : kAllJobStates) {
    if (JobStateName(s) == lower) return s;
  }
  return InvalidArgumentError("unknown job state '" + std::string(name) +
                              "' (queued, scheduled, running, succeeded, failed, cancelled, suspending, "
                              "suspended)");
}

bool IsTerminal(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed || state == JobState::kCancelled;
}

bool HoldsAllocation(JobState state) {
  return state == JobState::kScheduled || state == JobState::kRunning || state == JobState::kSuspending;
}

bool IsLegalTransition(JobState from, JobState to) {
  using S = JobState;
  switch (from) {
    case S::kQueued:
      return to == S::kScheduled || to == S::kSuspended || to == S::kFailed || to == S::kCancelled;
    case S::kScheduled:
      return to == S::kRunning || to == S::kQueued || to == S::kFailed || to == S::kCancelled;
    case S::kRunning:
      return to == S::kSucceeded || to == S::kFailed || to == S::kCancelled || to == S::kSuspending || to == S::kQueued;
    case S::kSuspending:
      return to == S::kSuspended || to == S::kSucceeded || to == S::kFailed || to == S::kCancelled || to == S::kQueued;
    case S::kSuspended:
      return to == S::kQueued || to == S::kCancelled;
    case S::kSucceeded:
    case S::kFailed:
    case S::kCancelled:
      return false;
  }
  return false;
}

Status CheckTransition(JobState from, JobState to) {
  if (IsLegalTransition(from, to)) return Status::Ok();
  std::string message = "cannot go from " + std::string(JobStateName(from)) + " to " + std::string(JobStateName(to));
  if (IsTerminal(from)) {
    message += " (" + std::string(JobStateName(from)) + " is final)";
  } else if (from == to) {
    message += " (already " + std::string(JobStateName(from)) + ")";
  }
  return FailedPreconditionError(std::move(message));
}

}  // namespace xpool
