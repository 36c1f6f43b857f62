#include "store/caching_state_store.h"

#include <algorithm>
#include <limits>

#include "common/memory.h"
#include "store/internal/clip.h"

namespace xpool {
namespace {

// A failed write that may still have committed (a connection lost at COMMIT), or whose effect is unknown.
bool MayHaveCommitted(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kInternal;
}

size_t StateIndex(JobState s) { return static_cast<size_t>(s); }

// Jobs read per query while loading: bounds the copy held at once besides the cache.
constexpr int kLoadPage = 10000;

}  // namespace

Result<std::unique_ptr<CachingStateStore>> CachingStateStore::Load(StateStore& base) {
  std::unique_ptr<CachingStateStore> cache(new CachingStateStore(base));
  JobFilter page;
  page.limit = kLoadPage;
  for (;;) {
    ASSIGN_OR_RETURN(std::vector<JobRecord> jobs, base.ListJobs(page));
    if (jobs.empty()) break;
    page.after = jobs.back().id;
    std::lock_guard lock(cache->mu_);
    for (JobRecord& job : jobs) cache->InsertLocked(std::move(job));
    if (static_cast<int>(jobs.size()) < kLoadPage) break;
  }
  ASSIGN_OR_RETURN(std::vector<AllocationRecord> allocations, base.ListAllocations());
  std::lock_guard lock(cache->mu_);
  for (AllocationRecord& a : allocations) cache->allocations_[a.job.value()].push_back(std::move(a));
  ReleaseFreeMemory();  // the pages of records read and copied into the cache
  return cache;
}

void CachingStateStore::DropTasks(JobId id) {
  std::lock_guard lock(mu_);
  tasks_.erase(id.value());
  ++tasks_epoch_;
}

void CachingStateStore::InsertLocked(JobRecord job) {
  if (jobs_.contains(job.id.value())) return;
  PutLocked(std::make_shared<const JobRecord>(std::move(job)));
}

void CachingStateStore::PutLocked(JobPtr job) {
  const int64_t id = job->id.value();
  auto [it, added] = jobs_.try_emplace(id, job);
  if (!added) {
    const JobRecord& old = *it->second;
    if (old.tenant != job->tenant) {
      auto t = by_tenant_.find(old.tenant.value());
      if (t != by_tenant_.end() && t->second.erase(id) > 0 && t->second.empty()) by_tenant_.erase(t);
    }
    if (old.state != job->state) by_state_[StateIndex(old.state)].erase(id);
    it->second = job;
  }
  by_tenant_[job->tenant.value()].insert(id);
  by_state_[StateIndex(job->state)].insert(id);
}

template <typename Change>
bool CachingStateStore::UpdateLocked(JobId id, Change&& change) {
  auto it = jobs_.find(id.value());
  if (it == jobs_.end()) return false;
  auto next = std::make_shared<JobRecord>(*it->second);
  change(*next);
  PutLocked(std::move(next));
  return true;
}

void CachingStateStore::Refresh(JobId id) {
  Result<JobRecord> job = base().GetJob(id);
  if (!job.ok()) return;
  std::optional<std::vector<AllocationRecord>> held;
  if (HoldsAllocation(job->state)) {
    Result<std::vector<AllocationRecord>> read = base().JobAllocations(id);
    if (!read.ok()) return;
    held = std::move(*read);
  }
  std::lock_guard lock(mu_);
  PutLocked(std::make_shared<const JobRecord>(std::move(*job)));
  if (held) {
    allocations_[id.value()] = std::move(*held);
  } else {
    allocations_.erase(id.value());
  }
}

// ---- Reads ----

std::vector<int64_t> CachingStateStore::MatchLocked(const JobFilter& filter) const {
  const size_t want = filter.limit > 0 ? static_cast<size_t>(filter.limit) + 1 : std::numeric_limits<size_t>::max();
  const int64_t after = filter.after.value();
  std::array<bool, kStates> state_wanted{};
  std::vector<size_t> states;
  for (JobState s : filter.states) {
    if (!state_wanted[StateIndex(s)]) states.push_back(StateIndex(s));
    state_wanted[StateIndex(s)] = true;
  }
  const std::set<int64_t>* tenant_ids = nullptr;
  if (filter.tenant) {
    auto t = by_tenant_.find(filter.tenant->value());
    if (t == by_tenant_.end()) return {};
    tenant_ids = &t->second;
  }
  size_t in_states = 0;
  for (size_t s : states) in_states += by_state_[s].size();
  std::vector<int64_t> out;
  if (tenant_ids != nullptr && (states.empty() || tenant_ids->size() <= in_states)) {
    // The tenant's own ids, each checked for its state.
    for (auto it = tenant_ids->upper_bound(after); it != tenant_ids->end() && out.size() < want; ++it) {
      if (states.empty() || state_wanted[StateIndex(jobs_.at(*it)->state)]) out.push_back(*it);
    }
    return out;
  }
  if (!states.empty()) {
    // Each state's ids in order, each checked for the tenant; merged and cut.
    for (size_t s : states) {
      size_t taken = 0;
      for (auto it = by_state_[s].upper_bound(after); it != by_state_[s].end() && taken < want; ++it) {
        if (filter.tenant && jobs_.at(*it)->tenant != *filter.tenant) continue;
        out.push_back(*it);
        ++taken;
      }
    }
    std::sort(out.begin(), out.end());
    if (out.size() > want) out.resize(want);
    return out;
  }
  for (auto it = jobs_.upper_bound(after); it != jobs_.end() && out.size() < want; ++it) out.push_back(it->first);
  return out;
}

CachingStateStore::JobPage CachingStateStore::ListJobRefs(const JobFilter& filter) const {
  JobPage page;
  std::lock_guard lock(mu_);
  std::vector<int64_t> ids = MatchLocked(filter);
  if (filter.limit > 0 && ids.size() > static_cast<size_t>(filter.limit)) {
    page.more = true;
    ids.resize(static_cast<size_t>(filter.limit));
  }
  page.jobs.reserve(ids.size());
  for (int64_t id : ids) page.jobs.push_back(jobs_.at(id));
  return page;
}

std::shared_ptr<const JobRecord> CachingStateStore::FindJob(JobId id) const {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(id.value());
  return it == jobs_.end() ? nullptr : it->second;
}

size_t CachingStateStore::job_count() const {
  std::lock_guard lock(mu_);
  return jobs_.size();
}

Result<JobRecord> CachingStateStore::GetJob(JobId id) {
  JobPtr job = FindJob(id);
  if (job == nullptr) return NotFoundError("no job with id " + id.ToString());
  return *job;
}

Result<std::vector<JobRecord>> CachingStateStore::ListJobs(const JobFilter& filter) {
  JobPage page = ListJobRefs(filter);  // the copies are made outside the lock
  std::vector<JobRecord> out;
  out.reserve(page.jobs.size());
  for (const JobPtr& job : page.jobs) out.push_back(*job);
  return out;
}

Result<std::vector<AllocationRecord>> CachingStateStore::ListAllocations() {
  std::lock_guard lock(mu_);
  std::vector<AllocationRecord> out;
  for (const auto& [id, held] : allocations_) out.insert(out.end(), held.begin(), held.end());
  return out;
}

Result<std::vector<AllocationRecord>> CachingStateStore::JobAllocations(JobId job) {
  std::lock_guard lock(mu_);
  auto it = allocations_.find(job.value());
  if (it == allocations_.end()) return std::vector<AllocationRecord>{};
  return it->second;
}

Result<std::vector<AllocationRecord>> CachingStateStore::JobAllocationsBetween(JobId first, JobId last) {
  std::lock_guard lock(mu_);
  std::vector<AllocationRecord> out;
  for (auto it = allocations_.lower_bound(first.value()); it != allocations_.end() && it->first <= last.value(); ++it) {
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return out;
}

Result<std::vector<TaskRecord>> CachingStateStore::ListTasks(JobId job) {
  {
    std::lock_guard lock(mu_);
    auto it = tasks_.find(job.value());
    if (it != tasks_.end()) return it->second;
  }
  // Read without a write_mu_ stripe (a reader connection: no wait for a commit's fsync) and kept only when no change to
  // any job's tasks came in between: such a change may have committed after the read.
  uint64_t epoch = 0;
  {
    std::lock_guard lock(mu_);
    epoch = tasks_epoch_;
  }
  Result<std::vector<TaskRecord>> tasks = base().ListTasks(job);
  // None yet may mean a job being submitted (submissions do not take write_mu_): not kept.
  if (tasks.ok() && !tasks->empty()) {
    std::lock_guard lock(mu_);
    if (tasks_epoch_ == epoch) tasks_[job.value()] = *tasks;
  }
  return tasks;
}

Status CachingStateStore::UpdateTask(JobId job, int replica, JobState state, std::optional<int> exit_code,
                                     TimeMicros now) {
  std::lock_guard write(WriteLockFor(job));
  Status s = base().UpdateTask(job, replica, state, exit_code, now);
  std::lock_guard lock(mu_);
  ++tasks_epoch_;
  auto it = tasks_.find(job.value());
  if (it == tasks_.end()) return s;
  if (!s.ok()) {
    tasks_.erase(it);  // a failed write may have committed
    return s;
  }
  // The same change the store made (its UPDATE of the replica's row), so the next read needs no database.
  for (TaskRecord& t : it->second) {
    if (t.replica != replica) continue;
    t.state = state;
    t.exit_code = exit_code;
    t.updated_us = now;
  }
  return s;
}

// ---- Changes: the store first, then the same change here ----

Result<JobRecord> CachingStateStore::SubmitJob(TenantId tenant, const JobSpec& spec, TimeMicros now) {
  Result<JobRecord> job = base().SubmitJob(tenant, spec, now);
  if (job.ok()) {
    std::lock_guard lock(mu_);
    InsertLocked(*job);
  }
  return job;
}

std::vector<Result<JobRecord>> CachingStateStore::SubmitJobs(const std::vector<std::pair<TenantId, JobSpec>>& jobs,
                                                             TimeMicros now) {
  std::vector<Result<JobRecord>> stored = base().SubmitJobs(jobs, now);
  std::lock_guard lock(mu_);
  for (const Result<JobRecord>& job : stored) {
    if (job.ok()) InsertLocked(*job);
  }
  return stored;
}

Status CachingStateStore::TransitionJob(JobId id, JobState to, std::string_view reason, TimeMicros now,
                                        std::optional<JobState> expected) {
  std::lock_guard write(WriteLockFor(id));
  Status s = base().TransitionJob(id, to, reason, now, expected);
  DropTasks(id);
  if (!s.ok()) {
    if (MayHaveCommitted(s)) Refresh(id);
    return s;
  }
  bool applied = false;
  {
    std::lock_guard lock(mu_);
    JobState from = to;
    applied = UpdateLocked(id, [&](JobRecord& j) {
      from = j.state;
      j.state = to;
      j.updated_us = now;
      if (to == JobState::kQueued) ++j.restart_count;  // the placement epoch
      if (to == JobState::kRunning) j.last_start_us = now;
      j.pending_reason.clear();
      j.state_reason = store_internal::ClipReason(reason);
    });
    if (applied && HoldsAllocation(from) && !HoldsAllocation(to)) allocations_.erase(id.value());
  }
  if (!applied) Refresh(id);
  return s;
}

Status CachingStateStore::CommitPlacement(JobId id, const std::vector<AllocationRecord>& allocations,
                                          std::string_view reason, TimeMicros now) {
  std::lock_guard write(WriteLockFor(id));
  Status s = base().CommitPlacement(id, allocations, reason, now);
  DropTasks(id);
  if (!s.ok()) {
    if (MayHaveCommitted(s)) Refresh(id);
    return s;
  }
  bool applied = false;
  {
    std::lock_guard lock(mu_);
    applied = UpdateLocked(id, [&](JobRecord& j) {
      j.state = JobState::kScheduled;
      j.updated_us = now;
      j.pending_reason.clear();
      j.state_reason = store_internal::ClipReason(reason);
    });
    if (applied) {
      std::vector<AllocationRecord> held = allocations;  // as the store reads them back: by replica, job set
      for (AllocationRecord& a : held) a.job = id;
      std::sort(held.begin(), held.end(),
                [](const AllocationRecord& a, const AllocationRecord& b) { return a.replica < b.replica; });
      allocations_[id.value()] = std::move(held);
    }
  }
  if (!applied) Refresh(id);
  return s;
}

Result<JobRecord> CachingStateStore::SetJobPriority(JobId id, int priority, std::string_view reason, TimeMicros now) {
  std::lock_guard write(WriteLockFor(id));
  Result<JobRecord> job = base().SetJobPriority(id, priority, reason, now);
  if (!job.ok()) {
    if (MayHaveCommitted(job.status())) Refresh(id);
    return job;
  }
  std::lock_guard lock(mu_);
  PutLocked(std::make_shared<const JobRecord>(*job));
  return job;
}

Status CachingStateStore::SetPendingReason(JobId id, std::string_view reason) {
  std::lock_guard write(WriteLockFor(id));
  Status s = base().SetPendingReason(id, reason);
  if (!s.ok()) {
    if (MayHaveCommitted(s)) Refresh(id);
    return s;
  }
  bool applied = false;
  {
    std::lock_guard lock(mu_);
    applied = UpdateLocked(id, [&](JobRecord& j) { j.pending_reason = store_internal::ClipReason(reason); });
  }
  if (!applied) Refresh(id);
  return s;
}

Status CachingStateStore::SetPendingReasons(const std::vector<std::pair<JobId, std::string>>& reasons) {
  std::array<std::unique_lock<std::mutex>, kWriteStripes> writes;
  for (size_t k = 0; k < kWriteStripes; ++k) writes[k] = std::unique_lock(write_mu_[k]);
  Status s = base().SetPendingReasons(reasons);
  // Refused: nothing changed (one transaction). Only reasons: a failure that did commit is rewritten by the next
  // pass, which finds the reason it keeps in memory different from this one.
  if (!s.ok()) return s;
  std::lock_guard lock(mu_);
  for (const auto& [id, reason] : reasons) {
    auto it = jobs_.find(id.value());
    if (it == jobs_.end() || it->second->state != JobState::kQueued) continue;  // as the store: queued only
    std::string clipped = store_internal::ClipReason(reason);
    if (it->second->pending_reason == clipped) continue;
    UpdateLocked(id, [&](JobRecord& j) { j.pending_reason = std::move(clipped); });
  }
  return s;
}

}  // namespace xpool
