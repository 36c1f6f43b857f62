#pragma once
// CachingStateStore: a write-through cache of every job and every live allocation in front of another
// StateStore, so the control plane answers job lists, job views and agents' task lists from memory while the
// wrapped store stays the record.
//
// - Load() reads every job and allocation from the wrapped store; after a restart the cache therefore serves
//   exactly what was committed.
// - Each job-changing call (SubmitJob(s), TransitionJob, CommitPlacement, SetJobPriority, SetPendingReason(s))
//   goes to the wrapped store first; only once it has committed does the cache apply the same change (the
//   store's rules, StateStore's contract: a transition clears the pending reason, → queued bumps the restart
//   count, leaving the allocation-holding states drops the allocations, ...). A refused call changes nothing
//   here either. A single-job call that fails with Unavailable or Internal (on PostgreSQL, a connection lost at
//   COMMIT may hide a commit) reads that job back from the store, best effort.
// - GetJob, ListJobs, ListAllocations, JobAllocations and JobAllocationsBetween are served from memory; everything
//   else (tenants, tokens, nodes, events) passes through.
// - ListTasks is read through: a job's tasks, once read, are kept until TransitionJob or CommitPlacement drops
//   them; UpdateTask changes the kept replica as the store did. The read that fills an entry does not wait for
//   the writer (write_mu_); it is kept only when no change to tasks came while it read (tasks_epoch_), so it
//   cannot keep what such a change replaced. Agents report every task on every heartbeat: the report's checks
//   read the tasks from here, not from the database.
// - ListJobs walks an index: jobs by id, and the ids of each tenant and of each state, so a tenant's or a state's
//   page costs its own jobs, not every job.
// Every write to jobs and allocations must go through this object once it is loaded (writes made to the wrapped
// store behind its back are not seen).
//
// Memory: one JobRecord per job (shared, immutable snapshots: a change replaces the job's snapshot, readers keep
// the one they hold) plus three ordered-set entries.
//
// Owned by whoever owns the wrapped store (the server), which must outlive it. Thread-safe: reads take mu_ only to
// collect snapshots; the changes of one job are serialised by its stripe of write_mu_ across the store call and the
// cache update, so the cache applies them in commit order; changes of different jobs run at once (the store may
// commit them together: SqlStore's group commit). SetPendingReasons takes every stripe. Submissions take none
// (they create new jobs; the store's group commit keeps concurrent submitters in one transaction).
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "store/forwarding_state_store.h"

namespace xpool {

class CachingStateStore : public ForwardingStateStore {
 public:
  // Loads every job and live allocation from `base`.
  static Result<std::unique_ptr<CachingStateStore>> Load(StateStore& base);

  // A page of jobs as the cache holds them (no copy): those matching `filter` in id order, and whether more
  // match after the last one.
  struct JobPage {
    std::vector<std::shared_ptr<const JobRecord>> jobs;
    bool more = false;
  };
  JobPage ListJobRefs(const JobFilter& filter) const;
  // The job's current snapshot; null when there is no such job.
  std::shared_ptr<const JobRecord> FindJob(JobId id) const;
  size_t job_count() const;

  // ---- StateStore: jobs and allocations from memory ----
  Result<JobRecord> SubmitJob(TenantId tenant, const JobSpec& spec, TimeMicros now) override;
  std::vector<Result<JobRecord>> SubmitJobs(const std::vector<std::pair<TenantId, JobSpec>>& jobs,
                                            TimeMicros now) override;
  Result<JobRecord> GetJob(JobId id) override;
  Result<std::vector<JobRecord>> ListJobs(const JobFilter& filter) override;
  Status TransitionJob(JobId id, JobState to, std::string_view reason, TimeMicros now,
                       std::optional<JobState> expected = std::nullopt) override;
  Status CommitPlacement(JobId id, const std::vector<AllocationRecord>& allocations, std::string_view reason,
                         TimeMicros now) override;
  Result<JobRecord> SetJobPriority(JobId id, int priority, std::string_view reason, TimeMicros now) override;
  Status SetPendingReason(JobId id, std::string_view reason) override;
  Status SetPendingReasons(const std::vector<std::pair<JobId, std::string>>& reasons) override;
  Result<std::vector<AllocationRecord>> ListAllocations() override;
  Result<std::vector<AllocationRecord>> JobAllocations(JobId job) override;
  Result<std::vector<AllocationRecord>> JobAllocationsBetween(JobId first, JobId last) override;
  Result<std::vector<TaskRecord>> ListTasks(JobId job) override;
  Status UpdateTask(JobId job, int replica, JobState state, std::optional<int> exit_code, TimeMicros now) override;

 private:
  using JobPtr = std::shared_ptr<const JobRecord>;
  static constexpr size_t kStates = std::size(kAllJobStates);

  explicit CachingStateStore(StateStore& base) : ForwardingStateStore(base) {}

  // Forgets the job's tasks (its write_mu_ stripe held, after the store call): the next ListTasks reads them from the
  // wrapped store.
  void DropTasks(JobId id);
  // Adds a job the cache does not hold yet; a job it holds already is kept (a newer snapshot won the race).
  void InsertLocked(JobRecord job);
  // Replaces the job's snapshot (or adds it), keeping the indexes in step.
  void PutLocked(JobPtr job);
  // The job's snapshot with `change` applied, stored; false when the cache does not hold the job.
  template <typename Change>
  bool UpdateLocked(JobId id, Change&& change);
  // Reads the job (and its allocations) back from the wrapped store after a write that may or may not have
  // committed, or that the cache could not apply. Best effort: a failed read keeps what the cache holds.
  void Refresh(JobId id);
  // The ids matching `filter` (up to limit + 1, to tell whether more follow); mu_ held.
  std::vector<int64_t> MatchLocked(const JobFilter& filter) const;

  // Serialise one job's changes (store call + cache update), by job id; taken before mu_, one at a time except by
  // SetPendingReasons (every stripe, in order).
  static constexpr size_t kWriteStripes = 32;
  std::mutex& WriteLockFor(JobId id) { return write_mu_[static_cast<uint64_t>(id.value()) % kWriteStripes]; }
  std::array<std::mutex, kWriteStripes> write_mu_;
  mutable std::mutex mu_;
  std::map<int64_t, JobPtr> jobs_;                                // by id; guarded by mu_
  std::unordered_map<int64_t, std::set<int64_t>> by_tenant_;      // tenant id → job ids; mu_
  std::array<std::set<int64_t>, kStates> by_state_;               // state → job ids; mu_
  std::map<int64_t, std::vector<AllocationRecord>> allocations_;  // job id → by replica; mu_
  std::unordered_map<int64_t, std::vector<TaskRecord>> tasks_;    // job id → as last read (never empty); mu_
  uint64_t tasks_epoch_ = 0;  // moved on by every change to any job's tasks (after its commit); mu_
};

}  // namespace xpool
