// ControlPlane's job lifecycle outside scheduling passes: submit (one job or a batch), cancel, finish, the agent's
// start report, suspend / resume (by hand or for a preemptor, through the agent's checkpoint), suspension
// bookkeeping for the per-job cap, retries, and lost nodes (their jobs requeued).
// Same class as control_plane.cc (see control_plane.h for the locking rules); split only to keep files small.
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "model/job_spec.h"
#include "model/job_state.h"
#include "server/control_plane.h"
#include "server/internal/victim_reason.h"

namespace xpool::server {

Result<JobRecord> ControlPlane::Submit(TenantId tenant, const JobSpec& spec) {
  RETURN_IF_ERROR(ValidateJobSpec(spec));
  RETURN_IF_ERROR(ValidateTaskRequest(spec.ToTaskRequest()).WithContext("resources"));
  ASSIGN_OR_RETURN(JobRecord job, store_.SubmitJob(tenant, spec, clock_.NowMicros()));
  if (metrics_ != nullptr) metrics_->CounterAdd("xpool_jobs_submitted_total", {});
  {
    std::lock_guard lock(mu_);
    EnqueueLocked(job);
    ArrivedLocked(queued_[job.id]);
    fresh_.push_back(job.id);
  }
  Wake(false);
  return job;
}

Result<std::vector<Result<JobRecord>>> ControlPlane::SubmitMany(const std::vector<std::pair<TenantId, JobSpec>>& jobs) {
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string where = "jobs[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(ValidateJobSpec(jobs[i].second).WithContext(where));
    RETURN_IF_ERROR(ValidateTaskRequest(jobs[i].second.ToTaskRequest()).WithContext(where + ".resources"));
  }
  std::vector<Result<JobRecord>> stored = store_.SubmitJobs(jobs, clock_.NowMicros());
  int64_t accepted = 0;
  {
    std::lock_guard lock(mu_);
    for (const Result<JobRecord>& job : stored) {
      if (!job.ok()) continue;
      ++accepted;
      EnqueueLocked(*job);
      ArrivedLocked(queued_[job->id]);
      fresh_.push_back(job->id);
    }
  }
  if (metrics_ != nullptr && accepted > 0) metrics_->CounterAdd("xpool_jobs_submitted_total", {}, double(accepted));
  if (accepted >= kReleaseMemoryAfterJobs) release_memory_ = true;
  if (accepted > 0) Wake(false);
  return stored;
}

Result<bool> ControlPlane::TransitionUnlocked(JobId id, JobState to, std::string_view reason, TimeMicros at,
                                              bool (*from)(JobState)) {
  constexpr int kTries = 8;  // each retry follows another change of the same job that committed first
  Status last;
  for (int attempt = 0; attempt < kTries; ++attempt) {
    ASSIGN_OR_RETURN(JobRecord job, store_.GetJob(id));
    if (!from(job.state)) return false;
    last = store_.TransitionJob(id, to, reason, at, job.state);
    if (last.ok()) return true;
    if (last.code() != StatusCode::kFailedPrecondition) return last;
  }
  return last;
}

Result<JobRecord> ControlPlane::Cancel(JobId id, std::string_view reason) {
  ASSIGN_OR_RETURN(const bool committed, TransitionUnlocked(id, JobState::kCancelled, reason, clock_.NowMicros(),
                                                            [](JobState s) { return !IsTerminal(s); }));
  if (!committed) {
    ASSIGN_OR_RETURN(JobRecord job, store_.GetJob(id));
    return FailedPreconditionError("job " + id.ToString() + " is already " + std::string(JobStateName(job.state)));
  }
  bool released = false;
  {
    std::lock_guard lock(mu_);
    DequeueLocked(id);
    released = held_.count(id) > 0;
    ReleaseLocked(id);
  }
  if (released) Wake(true);
  return store_.GetJob(id);
}

Result<JobRecord> ControlPlane::Finish(JobId id, JobState to, std::string_view reason) {
  ASSIGN_OR_RETURN(const bool committed,
                   TransitionUnlocked(id, to, reason, clock_.NowMicros(), [](JobState s) { return !IsTerminal(s); }));
  if (committed) {
    {
      std::lock_guard lock(mu_);
      DequeueLocked(id);
      ReleaseLocked(id);
    }
    Wake(true);
  }
  return store_.GetJob(id);
}

Status ControlPlane::TaskStarted(JobId id, TimeMicros at) {
  ASSIGN_OR_RETURN(const bool committed, TransitionUnlocked(id, JobState::kRunning, "started by the agent", at,
                                                            [](JobState s) { return s == JobState::kScheduled; }));
  if (!committed) return Status::Ok();
  std::lock_guard lock(mu_);
  auto it = held_.find(id);
  // Not when a suspend (or anything else) moved it on meanwhile.
  if (it != held_.end() && it->second.state == JobState::kScheduled) {
    it->second.state = JobState::kRunning;
    it->second.last_start = at;
  }
  return Status::Ok();
}

Result<JobRecord> ControlPlane::Suspend(JobId id) {
  bool released = false;
  {
    std::lock_guard lock(mu_);
    ASSIGN_OR_RETURN(JobRecord job, store_.GetJob(id));
    if (job.state != JobState::kRunning) {
      std::string why = "job " + id.ToString() + " is " + std::string(JobStateName(job.state)) +
                        "; only a running job can be suspended";
      if (job.state == JobState::kQueued || job.state == JobState::kScheduled) why += " (cancel it instead)";
      return FailedPreconditionError(why);
    }
    ASSIGN_OR_RETURN(released, SuspendLocked(id, "suspend requested by the user", false, clock_.NowMicros()));
  }
  if (released) Wake(true);
  return store_.GetJob(id);
}

Result<bool> ControlPlane::SuspendLocked(JobId id, std::string_view reason, bool requeue, TimeMicros now) {
  RETURN_IF_ERROR(store_.TransitionJob(id, JobState::kSuspending, reason, now, JobState::kRunning));
  suspended_at_[id].push_back(now);
  if (metrics_ != nullptr) metrics_->CounterAdd("xpool_suspensions_total", {{"cause", requeue ? "scheduler" : "user"}});
  auto it = held_.find(id);
  bool all_simulated = it != held_.end();
  if (it != held_.end()) {
    it->second.state = JobState::kSuspending;
    BumpNodesLocked(it->second.allocations);  // its agents deliver the suspend now
    for (const Allocation& a : it->second.allocations) all_simulated = all_simulated && state_.node(a.node).simulated;
  }
  if (!all_simulated) return false;
  // No agent to signal on a simulated node: the job stops at once.
  RETURN_IF_ERROR(FinishSuspendLocked(id, "simulated node: suspended without an agent", requeue, now));
  return true;
}

Status ControlPlane::FinishSuspendLocked(JobId id, std::string_view reason, bool requeue, TimeMicros now) {
  RETURN_IF_ERROR(store_.TransitionJob(id, JobState::kSuspended, reason, now, JobState::kSuspending));
  ReleaseLocked(id);
  if (!requeue) return Status::Ok();
  RETURN_IF_ERROR(store_.TransitionJob(
      id, JobState::kQueued, "back in the queue after its suspension, keeping its place", now, JobState::kSuspended));
  ASSIGN_OR_RETURN(JobRecord queued, store_.GetJob(id));
  EnqueueLocked(queued);
  return Status::Ok();
}

Status ControlPlane::SuspendDone(JobId id, std::string_view reason) {
  {
    std::lock_guard lock(mu_);
    ASSIGN_OR_RETURN(JobRecord job, store_.GetJob(id));
    if (job.state != JobState::kSuspending) {
      return FailedPreconditionError("job " + id.ToString() + " is " + std::string(JobStateName(job.state)) +
                                     ", not suspending");
    }
    RETURN_IF_ERROR(FinishSuspendLocked(id, reason, internal::IsVictimReason(job.state_reason), clock_.NowMicros()));
  }
  Wake(true);
  return Status::Ok();
}

Result<JobRecord> ControlPlane::FailOrRetry(JobId id, std::string_view reason, std::string_view what) {
  {
    std::lock_guard lock(mu_);
    ASSIGN_OR_RETURN(JobRecord job, store_.GetJob(id));
    if (IsTerminal(job.state)) return job;
    ASSIGN_OR_RETURN(std::vector<EventRecord> events, store_.JobEvents(id));
    const int used = static_cast<int>(
        std::count_if(events.begin(), events.end(), [](const EventRecord& e) { return e.kind == "retry"; }));
    const TimeMicros now = clock_.NowMicros();
    if (used >= job.spec.retries || !HoldsAllocation(job.state)) {
      std::string why(reason);
      if (used > 0) why += " (after " + std::to_string(used) + (used == 1 ? " retry)" : " retries)");
      RETURN_IF_ERROR(store_.TransitionJob(id, JobState::kFailed, why, now, job.state));
      DequeueLocked(id);
      ReleaseLocked(id);
    } else {
      const int attempt = used + 1;
      const int delay = RetryDelaySeconds(job.spec, attempt);
      const std::string text = "retry " + std::to_string(attempt) + " of " + std::to_string(job.spec.retries) + " in " +
                               std::to_string(delay) + " s after " + std::string(what);
      EventRecord e;
      e.time_us = now;
      e.job = id;
      e.kind = "retry";
      e.reason = text + " (" + std::string(reason) + ")";
      RETURN_IF_ERROR(store_.AppendEvent(e));
      // Every replica runs again (the store releases all of the job's allocations in this transaction).
      RETURN_IF_ERROR(store_.TransitionJob(id, JobState::kQueued, text, now, job.state));
      ReleaseLocked(id);
      ASSIGN_OR_RETURN(JobRecord queued, store_.GetJob(id));
      EnqueueLocked(queued);
      queued_[id].not_before = now + static_cast<TimeMicros>(delay) * kMicrosPerSecond;
      queued_[id].reason = text;
    }
  }
  Wake(true);
  return store_.GetJob(id);
}

TimeMicros ControlPlane::RetryNotBefore(const JobRecord& job) {
  if (job.spec.retries == 0 || job.restart_count == 0) return 0;
  auto events = store_.JobEvents(job.id);
  if (!events.ok()) return 0;
  int attempt = 0;
  TimeMicros last = 0;
  for (const EventRecord& e : *events) {
    if (e.kind != "retry") continue;
    ++attempt;
    last = e.time_us;
  }
  // Only when the retry is what put the job in the queue (no later transition, e.g. a suspension).
  if (attempt == 0 || job.updated_us > last) return 0;
  return last + static_cast<TimeMicros>(RetryDelaySeconds(job.spec, attempt)) * kMicrosPerSecond;
}

Result<JobRecord> ControlPlane::Resume(JobId id) {
  {
    std::lock_guard lock(mu_);
    ASSIGN_OR_RETURN(JobRecord job, store_.GetJob(id));
    if (job.state != JobState::kSuspended) {
      return FailedPreconditionError("job " + id.ToString() + " is " + std::string(JobStateName(job.state)) +
                                     ", only a suspended job can be resumed");
    }
    RETURN_IF_ERROR(store_.TransitionJob(id, JobState::kQueued, "resumed by the user", clock_.NowMicros(), job.state));
    ASSIGN_OR_RETURN(JobRecord queued, store_.GetJob(id));
    EnqueueLocked(queued);
    fresh_.push_back(id);
  }
  Wake(false);
  return store_.GetJob(id);
}

void ControlPlane::CheckNodeTimeouts() {
  const TimeMicros now = clock_.NowMicros();
  bool lost = false;
  {
    std::lock_guard lock(mu_);
    for (int i = 0; i < state_.node_count(); ++i) {
      const Node& n = state_.node(i);
      if (n.simulated) continue;
      TimeMicros seen;
      {
        std::lock_guard s(seen_mu_);
        seen = last_seen_[n.name];
      }
      const TimeMicros silent = now - seen;
      if (silent <= options_.node_timeout) continue;
      if (n.ready) {
        if (!store_.SetNodeReady(n.name, false, now).ok()) continue;
        CheckOk(state_.SetNodeReady(i, false), "the index of a node in the state");
        {
          std::lock_guard s(seen_mu_);
          maybe_not_ready_.insert(n.name);
        }
        std::fprintf(stderr,
                     "xpool server: node %s not ready (no heartbeat for %llds); its tasks stop themselves, its jobs "
                     "go back to the queue in %llds unless it reports\n",
                     n.name.c_str(), static_cast<long long>(silent / kMicrosPerSecond),
                     static_cast<long long>((options_.node_timeout + options_.fence_margin - silent + 999'999) /
                                            kMicrosPerSecond));
      }
      if (silent <= options_.node_timeout + options_.fence_margin) continue;
      auto held = held_on_node_.find(i);
      if (held == held_on_node_.end() || held->second.empty()) continue;
      std::fprintf(stderr, "xpool server: node %s lost (no heartbeat for %llds); requeueing its jobs\n", n.name.c_str(),
                   static_cast<long long>(silent / kMicrosPerSecond));
      RequeueLostLocked(n.name, now);
      lost = true;
    }
  }
  if (lost) Wake(true);
}

Status ControlPlane::Requeue(JobId id, std::string_view reason) {
  {
    std::lock_guard lock(mu_);
    auto it = held_.find(id);
    if (it == held_.end() || it->second.committing) {
      return FailedPreconditionError("job " + id.ToString() + " holds no devices");
    }
    // The store deletes every allocation of the job (all replicas, any node) in the same transaction.
    RETURN_IF_ERROR(store_.TransitionJob(id, JobState::kQueued, reason, clock_.NowMicros(), it->second.state));
    ReleaseLocked(id);
    ASSIGN_OR_RETURN(JobRecord job, store_.GetJob(id));
    EnqueueLocked(job);
  }
  Wake(true);
  return Status::Ok();
}

void ControlPlane::RequeueLostLocked(const std::string& node, TimeMicros now) {
  const int index = state_.FindNode(node);
  auto indexed = held_on_node_.find(index);
  const std::vector<JobId> on_node = indexed == held_on_node_.end() ? std::vector<JobId>() : indexed->second;
  const std::string reason = "node " + node + " lost (no heartbeat for " +
                             std::to_string((options_.node_timeout + options_.fence_margin) / kMicrosPerSecond) +
                             "s): back in the queue";
  for (JobId id : on_node) {
    const JobState from = held_[id].state;
    // The store deletes every allocation of the job (all replicas, any node) in the same transaction.
    Status s = store_.TransitionJob(id, JobState::kQueued, reason, now, from);
    if (!s.ok()) {
      std::fprintf(stderr, "xpool server: requeueing job %s: %s\n", id.ToString().c_str(), s.ToString().c_str());
      continue;
    }
    ReleaseLocked(id);
    auto job = store_.GetJob(id);
    if (job.ok()) EnqueueLocked(*job);
  }
}

int ControlPlane::SuspensionsLastHour(JobId id, TimeMicros now) {
  auto it = suspended_at_.find(id);
  if (it == suspended_at_.end()) return 0;
  std::erase_if(it->second, [&](TimeMicros t) { return now - t >= 3600 * kMicrosPerSecond; });
  return static_cast<int>(it->second.size());
}

}  // namespace xpool::server
