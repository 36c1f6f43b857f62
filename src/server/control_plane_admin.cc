// ControlPlane: an admin's changes to a job already submitted (issue 7: "admins can change a job's priority").
// Kept apart from control_plane.cc; same class, same locking rules (mu_ guards the queue and the held jobs).
#include <string>

#include "model/job_spec.h"
#include "server/control_plane.h"

namespace xpool::server {

Result<JobRecord> ControlPlane::SetPriority(JobId id, int priority, std::string_view by) {
  if (priority < 0 || priority > kMaxPriority) {
    return InvalidArgumentError("priority must be 0..100 or low, normal, high, not " + std::to_string(priority));
  }
  JobRecord after;
  {
    std::lock_guard lock(mu_);
    ASSIGN_OR_RETURN(JobRecord job, store_.GetJob(id));
    if (job.priority == priority) return job;  // nothing to change, no event
    const std::string reason =
        "priority " + std::to_string(job.priority) + " -> " + std::to_string(priority) + " by " + std::string(by);
    ASSIGN_OR_RETURN(after, store_.SetJobPriority(id, priority, reason, clock_.NowMicros()));
    if (auto q = queued_.find(id); q != queued_.end()) q->second.priority = priority;
    if (auto h = held_.find(id); h != held_.end()) h->second.priority = priority;
  }
  Wake(true);  // every queued job: a raised job may preempt, a lowered running one may now be a victim
  return after;
}

}  // namespace xpool::server
