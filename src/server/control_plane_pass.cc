// ControlPlane's scheduling loop: the loop thread, a pass (RunPass: book under mu_, commit to the store without it,
// confirm under mu_), the placements a pass books and their store commits. Kept apart from control_plane.cc;
// same class, same locking rules (pass_mu_ before mu_).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "common/memory.h"
#include "common/units.h"
#include "model/job_state.h"
#include "scheduler/queue/quota_amounts.h"
#include "scheduler/queue/scheduler_job_placer.h"
#include "scheduler/queue/scheduling_pass.h"
#include "server/control_plane.h"
#include "server/internal/distributed_launch.h"
#include "server/internal/pass_undo.h"
#include "server/internal/reservation.h"
#include "server/internal/victim_reason.h"
#include "store/allocation_codec.h"

namespace xpool::server {
namespace {

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// "Why pending" rows written to the store per pass (one transaction); the rest are written by later passes.
constexpr size_t kMaxReasonWritesPerPass = 4096;

// A store quota or guarantee as the pass's amounts: GPU compute (device_compute_milli, and `devices` counted as
// 1000 milli each), GPU memory, CPU. `unset` stands for the store's -1.
ResourceAmounts ToPassAmounts(const TenantQuota& q, int64_t unset) {
  auto amount = [unset](int64_t v) { return v < 0 ? unset : v; };
  ResourceAmounts out = ResourceAmounts::Unlimited();
  out.gpu_compute_milli = QuotaGpuComputeMilli(q.devices, q.device_compute_milli, unset);
  out.gpu_memory_mib = amount(q.device_memory_mib);
  out.cpu_milli = amount(q.cpu_milli);
  return out;
}

// The store's tenant as the pass sees it: limits (-1 = unlimited) and guarantees, a guarantee never above its
// limit (the pass would reject such a tenant). A tenant with no guarantee field set is guaranteed nothing; one
// with some set is guaranteed those, and the others do not constrain it ("2 GPUs guaranteed" holds whatever
// CPU its jobs ask for).
Tenant ToPassTenant(const TenantRecord& t) {
  Tenant out;
  out.id = t.id;
  out.name = t.name;
  out.limit = ToPassAmounts(t.quota, kUnlimitedAmount);
  const bool has_guarantee = !(t.guaranteed == TenantQuota{});
  out.guaranteed = CapGuaranteeAtLimit(ToPassAmounts(t.guaranteed, has_guarantee ? kUnlimitedAmount : 0), out.limit);
  for (const TenantPriorityQuota& q : t.priority_quotas) {
    out.priority_limits.push_back({q.min_priority, q.max_priority, ToPassAmounts(q.quota, kUnlimitedAmount)});
  }
  return out;
}

// The devices of a placement for its event, which keeps them after the job has ended (the allocation is gone
// then): " (replica 0: gpu-3 40.0 GiB 50%; replica 1: ...)"; "" when no replica got a device.
std::string PlacementText(const std::vector<AllocationRecord>& records) {
  constexpr size_t kShown = 16;  // replicas spelled out; the rest counted
  std::string out;
  size_t shown = 0, with_devices = 0;
  for (const AllocationRecord& a : records) {
    if (a.devices.empty()) continue;
    if (++with_devices > kShown) continue;
    ++shown;
    out += (out.empty() ? "" : "; ") + std::string("replica ") + std::to_string(a.replica) + ":";
    for (const DeviceGrantRecord& g : a.devices) {
      out += " " + g.device_uuid + " " + FormatGiB(g.memory_mib) + " GiB " + FormatDevicePercent(g.compute_milli);
    }
  }
  if (with_devices > shown) out += "; " + std::to_string(with_devices - shown) + " more replicas";
  return out.empty() ? "" : " (" + out + ")";
}

std::string JobList(const std::vector<JobId>& ids) {
  std::string out;
  for (JobId id : ids) out += (out.empty() ? "" : ", ") + id.ToString();
  return out;
}

}  // namespace

void ControlPlane::Wake(bool full) {
  {
    std::lock_guard lk(loop_mu_);
    wake_ = true;
    wake_full_ = wake_full_ || full;
  }
  loop_cv_.notify_one();
}

void ControlPlane::Loop() {
  auto next_tick = std::chrono::steady_clock::now() + std::chrono::microseconds(options_.tick);
  while (true) {
    bool full = false;
    {
      std::unique_lock lk(loop_mu_);
      loop_cv_.wait_until(lk, next_tick, [&] { return wake_ || stop_; });
      if (stop_) return;
      full = wake_full_;
      wake_ = wake_full_ = false;
    }
    if (std::chrono::steady_clock::now() >= next_tick) {
      full = true;
      next_tick = std::chrono::steady_clock::now() + std::chrono::microseconds(options_.tick);
      CheckNodeTimeouts();
      CheckInteractiveLimits();
      // After a large batch (SubmitMany), at least one pass and its request are done by now: what they
      // allocated is free, and held in malloc's free lists until given back.
      if (release_memory_.exchange(false)) ReleaseFreeMemory();
    }
    RunPass(full);
  }
}

int ControlPlane::RunPass(bool full) {
  std::lock_guard pass(pass_mu_);
  std::vector<std::pair<JobId, std::string>> reason_writes;
  std::vector<PendingCommit> commits;
  BookPass(full, &commits, &reason_writes);
  // The placements' commits (an fsync each) run outside the lock, so API reads, heartbeats and submissions do
  // not wait for them.
  const int placed = CommitPlacements(commits);
  // "Why pending" is kept in the store too (a restart shows it); outside the lock. A job that left the queue
  // meanwhile is refused by the store or has its reason cleared by its transition.
  if (reason_writes.empty()) return placed;
  if (Status s = store_.SetPendingReasons(reason_writes); !s.ok()) {  // one transaction
    std::fprintf(stderr, "xpool server: storing why jobs wait: %s (retried by the next full pass)\n",
                 s.ToString().c_str());
    std::lock_guard lock(mu_);
    for (const auto& [id, reason] : reason_writes) {
      auto it = queued_.find(id);
      if (it != queued_.end() && it->second.persisted == reason) it->second.persisted.clear();
    }
  }
  return placed;
}

void ControlPlane::BookPass(bool full, std::vector<PendingCommit>* commits,
                            std::vector<std::pair<JobId, std::string>>* reason_writes) {
  // Tenants (quotas) are read before the lock: a small table, read once per pass.
  auto tenant_records = store_.ListTenants();
  {
    std::lock_guard lock(mu_);
    if (tenant_records.ok()) {
      for (const TenantRecord& t : *tenant_records) tenant_names_[t.id.value()] = t.name;
    }
    BookReservedLocked(commits);  // the preemptors booked here leave the queue before `waiting` is read
    std::vector<JobId> waiting;
    if (full) {
      waiting.reserve(queued_.size());
      for (const auto& [id, job] : queued_) waiting.push_back(id);
    } else {
      for (JobId id : fresh_) {
        if (queued_.count(id)) waiting.push_back(id);
      }
    }
    fresh_.clear();
    // A preemptor whose victims are still suspending waits for them (no second round of victims); a retry waits
    // out its backoff.
    const TimeMicros now = clock_.NowMicros();
    std::erase_if(waiting, [&](JobId id) { return awaiting_.count(id) > 0 || queued_[id].not_before > now; });
    std::sort(waiting.begin(), waiting.end());
    if (!waiting.empty() && state_.node_count() == 0) {
      // Not written to the store: true of every job until the first node comes, and recomputed by the first
      // pass after a restart (keeps submissions at one commit each on a server without nodes).
      for (JobId id : waiting) queued_[id].reason = queued_[id].persisted = "no nodes in the cluster yet";
    } else if (!waiting.empty() && !tenant_records.ok()) {
      std::fprintf(stderr, "xpool server: scheduling pass skipped: %s\n", tenant_records.status().ToString().c_str());
    } else if (!waiting.empty()) {
      PassLocked(waiting, *tenant_records, commits);
      PlanMigGeometryLocked(waiting, now);
    }
    for (JobId id : waiting) {
      auto it = queued_.find(id);
      if (it == queued_.end() || it->second.reason == it->second.persisted) continue;
      // Bounded per pass, so a first pass over a long queue does not make one huge transaction.
      if (reason_writes->size() >= kMaxReasonWritesPerPass) break;
      it->second.persisted = it->second.reason;
      reason_writes->emplace_back(id, it->second.reason);
    }
  }
}

void ControlPlane::BookReservedLocked(std::vector<PendingCommit>* commits) {
  std::vector<JobId> ready;
  for (const auto& [id, allocations] : reserved_) {
    if (!awaiting_.contains(id)) ready.push_back(id);
  }
  std::sort(ready.begin(), ready.end());
  for (JobId id : ready) {
    std::vector<Allocation> allocations = std::move(reserved_[id]);
    reserved_.erase(id);
    auto q = queued_.find(id);
    if (q == queued_.end()) continue;
    const bool usable = std::all_of(allocations.begin(), allocations.end(), [&](const Allocation& a) {
      return a.node >= 0 && a.node < state_.node_count() && state_.node(a.node).ready && !state_.node(a.node).cordoned;
    });
    std::string reason;
    if (usable && BookLocked(id, allocations, &reason, commits)) continue;
    q->second.reason = "its reserved room was lost (" + (usable ? reason : "a node left") + "); scheduled afresh";
  }
}

void ControlPlane::PassLocked(const std::vector<JobId>& waiting, const std::vector<TenantRecord>& tenant_records,
                              std::vector<PendingCommit>* commits) {
  const TimeMicros now = clock_.NowMicros();
  std::vector<QueueJob>& jobs = pass_jobs_;
  std::vector<JobId>& ids = pass_ids_;
  ids.clear();
  const bool with_mps_user = state_.totals().mps_device_count > 0;  // an MPS device serves one tenant at a time
  auto next_job = [&]() -> QueueJob& {  // the element for ids.size(), kept from an earlier pass when there is one
    if (ids.size() == jobs.size()) jobs.emplace_back();
    return jobs[ids.size()];
  };
  for (const auto& [id, h] : held_) {
    if (static_cast<int>(h.allocations.size()) != h.replicas) continue;  // not every replica booked: skip
    QueueJob& j = next_job();
    h.FillQueueJob(id, with_mps_user, &j);
    j.state = QueueJobState::kRunning;
    // Only a running job can be a victim; scheduled and suspending ones still count for their tenant.
    j.preemptible = h.preemptible && h.state == JobState::kRunning && options_.preemption;
    j.last_start = h.last_start;
    j.suspensions_last_hour = SuspensionsLastHour(id, now);
    j.allocations = h.allocations;
    ids.push_back(id);
  }
  for (JobId id : waiting) {
    const QueuedJob& q = queued_[id];
    QueueJob& j = next_job();
    q.FillQueueJob(id, with_mps_user, &j);
    j.state = q.restarted ? QueueJobState::kSuspended : QueueJobState::kPending;
    j.allocations.clear();
    ids.push_back(id);
  }
  jobs.resize(ids.size());
  std::vector<Tenant> tenants;
  tenants.reserve(tenant_records.size());
  for (const TenantRecord& t : tenant_records) tenants.push_back(ToPassTenant(t));

  PassOptions pass_options;
  pass_options.preemption = options_.preemption;
  pass_options.rules.min_runtime = options_.min_runtime;
  pass_options.rules.max_suspensions_per_hour = options_.max_suspensions_per_hour;
  // The pass books and releases in state_ itself; once it returns, what it left there is taken back
  // (internal/pass_undo.h) and the decisions below book what they keep. The room already freed for preemptors
  // still awaiting victims is theirs: held for the pass's duration, and so is an MPS device their victims still
  // hold, whole (internal::MpsDevicesKeptFor).
  std::vector<Allocation> holds;
  for (const auto& [id, allocations] : reserved_) {
    if (!awaiting_.contains(id)) continue;
    for (const Allocation& a : allocations) {
      holds.push_back(internal::FreePartOf(state_, a));
      CheckOk(state_.Apply(holds.back()), "only the part that is free in this state");
      for (Allocation& kept : internal::MpsDevicesKeptFor(state_, a)) {
        holds.push_back(std::move(kept));
        CheckOk(state_.Apply(holds.back()), "what is left of the device, as its user's");
      }
    }
  }
  if (placer_ == nullptr) placer_ = std::make_unique<SchedulerJobPlacer>(state_, *policy_, rng_);
  const auto start = std::chrono::steady_clock::now();
  PassResult result = RunSchedulingPass(jobs, tenants, state_, *placer_, now, pass_options);
  if (metrics_ != nullptr) {
    metrics_->Observe("xpool_scheduling_latency_seconds", {}, Seconds(std::chrono::steady_clock::now() - start));
  }
  internal::UndoPass(state_, jobs, result);
  for (auto h = holds.rbegin(); h != holds.rend(); ++h) CheckOk(state_.Release(*h), "held for the pass above");

  for (JobDecision& d : result.decisions) {
    const JobId id = ids[d.job];
    auto q = queued_.find(id);
    if (q == queued_.end()) continue;
    std::string reason(d.reason);
    switch (d.kind) {
      case DecisionKind::kPlace:
        if (BookLocked(id, d.allocations, &reason, commits)) continue;
        break;
      case DecisionKind::kPreempt: {
        bool all_released = true;
        std::vector<JobId> victims;
        for (const SuspendDecision& sd : result.suspensions) {
          if (sd.for_job != d.job) continue;
          const JobId v = ids[sd.job];
          // The server restarts a moved job through the queue, as any victim: a move is a suspension here.
          if (!sd.move_to.empty() && metrics_ != nullptr) metrics_->CounterAdd("xpool_moves_total", {});
          auto released = SuspendLocked(v, sd.reason, /*requeue=*/true, now);
          if (!released.ok()) {
            std::fprintf(stderr, "xpool server: suspending job %s for job %s: %s\n", v.ToString().c_str(),
                         id.ToString().c_str(), released.status().ToString().c_str());
            continue;
          }
          if (!*released) {
            all_released = false;
            victims.push_back(v);
          }
        }
        if (metrics_ != nullptr) metrics_->CounterAdd("xpool_preemptions_total", {});
        EventRecord e;
        e.time_us = now;
        e.job = id;
        e.kind = "preempt";
        e.reason = d.reason;
        if (Status s = store_.AppendEvent(e).status(); !s.ok()) {  // history only: the transitions are committed
          std::fprintf(stderr, "xpool server: recording the preemption by job %s: %s\n", id.ToString().c_str(),
                       s.ToString().c_str());
        }
        if (all_released) {
          if (BookLocked(id, d.allocations, &reason, commits)) continue;
          break;
        }
        reason = "waiting for job " + JobList(victims) + " to checkpoint and leave (" + std::string(d.reason) + ")";
        awaiting_[id] = std::move(victims);
        reserved_[id] = d.allocations;
        break;
      }
      case DecisionKind::kNeverFits:
        if (reason.rfind("can never fit", 0) != 0) reason = "can never fit: " + reason;
        break;
      case DecisionKind::kWait:
      case DecisionKind::kRejected:
        break;
    }
    if (queued_.count(id)) queued_[id].reason = reason.empty() ? "no node fits" : reason;
  }
}

bool ControlPlane::BookLocked(JobId id, const std::vector<Allocation>& allocations, std::string* reason,
                              std::vector<PendingCommit>* commits) {
  std::vector<Allocation> applied;
  auto rollback = [&] {
    for (auto a = applied.rbegin(); a != applied.rend(); ++a)
      CheckOk(state_.Release(*a), "releasing what was just applied");
  };
  for (const Allocation& a : allocations) {
    Status s = state_.Apply(a);
    if (!s.ok()) {
      // Room the pass counted on is still held (a job suspending elsewhere): next pass.
      rollback();
      *reason = "waiting for devices being released";
      return false;
    }
    applied.push_back(a);
  }
  PendingCommit pending;
  pending.id = id;
  for (size_t replica = 0; replica < applied.size(); ++replica) {
    auto record = ToAllocationRecord(state_, applied[replica], id, static_cast<int>(replica));
    if (!record.ok()) {
      rollback();
      *reason = "internal: " + record.status().message();
      return false;
    }
    const Node& n = state_.node(applied[replica].node);
    pending.all_simulated = pending.all_simulated && n.simulated;
    if (pending.nodes.find(n.name) == std::string::npos) pending.nodes += (pending.nodes.empty() ? "" : ",") + n.name;
    pending.records.push_back(std::move(*record));
  }
  QueuedJob& job = queued_[id];
  HeldJob h(static_cast<const JobTerms&>(job));
  h.state = JobState::kScheduled;
  h.last_start = clock_.NowMicros();
  h.master_port = PickMasterPortLocked(id, applied);
  h.allocations = std::move(applied);
  h.committing = true;
  held_[id] = std::move(h);
  IndexHeldLocked(id, held_[id].allocations, true);
  pending.queued = std::move(job);
  DequeueLocked(id);
  commits->push_back(std::move(pending));
  return true;
}

int ControlPlane::CommitPlacements(std::vector<PendingCommit>& commits) {
  if (commits.empty()) return 0;
  enum class Outcome { kCommitted, kGone, kStoreDown };
  std::vector<Outcome> outcome(commits.size(), Outcome::kCommitted);
  std::vector<bool> running(commits.size(), false);
  std::string down;  // the store's error once a commit failed: the rest are not tried
  for (size_t i = 0; i < commits.size(); ++i) {
    const PendingCommit& p = commits[i];
    if (!down.empty()) {
      outcome[i] = Outcome::kStoreDown;
      continue;
    }
    const TimeMicros now = clock_.NowMicros();
    Status committed = store_.CommitPlacement(p.id, p.records, "placed on " + p.nodes + PlacementText(p.records), now);
    if (committed.ok()) {
      // No agent runs the tasks of simulated nodes: they start at once.
      running[i] =
          p.all_simulated && store_
                                 .TransitionJob(p.id, JobState::kRunning, "started on a simulated node (no agent)", now,
                                                JobState::kScheduled)
                                 .ok();
    } else if (committed.code() == StatusCode::kFailedPrecondition) {
      outcome[i] = Outcome::kGone;  // no longer queued (cancelled meanwhile)
    } else {
      outcome[i] = Outcome::kStoreDown;
      down = committed.message();
    }
  }
  int placed = 0;
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < commits.size(); ++i) {
    PendingCommit& p = commits[i];
    auto h = held_.find(p.id);
    // Not ours any more when the job was cancelled (or finished) meanwhile: that released its devices.
    const bool ours = h != held_.end() && h->second.committing;
    if (outcome[i] == Outcome::kCommitted) {
      ++placed;
      if (metrics_ != nullptr) metrics_->CounterAdd("xpool_placements_total", {});
      if (!ours) continue;
      h->second.committing = false;
      BumpNodesLocked(h->second.allocations);  // now in the store: the agents' next heartbeat gets it
      if (running[i] && h->second.state == JobState::kScheduled) h->second.state = JobState::kRunning;
      continue;
    }
    if (!ours) continue;
    // SetPriority may have changed it while the commit was in flight (it updates held_): requeue with that one.
    const int priority = h->second.priority;
    ReleaseLocked(p.id);
    if (outcome[i] == Outcome::kStoreDown) {
      // Back in the queue: the store refused the placement, so the job is still queued there.
      p.queued.priority = priority;
      p.queued.reason = "the store is unavailable: " + down;
      queued_[p.id] = std::move(p.queued);
    }
  }
  return placed;
}

}  // namespace xpool::server
