#include "server/control_plane.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "common/memory.h"
#include "common/units.h"
#include "model/job_state.h"
#include "model/mig_label.h"
#include "scheduler/queue/quota_amounts.h"
#include "scheduler/queue/scheduler_job_placer.h"
#include "scheduler/queue/scheduling_pass.h"
#include "scheduler/schedule.h"
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

ControlPlane::ControlPlane(StateStore& store, Clock& clock, MetricsRegistry* metrics, ControlPlaneOptions options)
    : store_(store),
      clock_(clock),
      metrics_(metrics),
      options_(std::move(options)),
      changes_(clock.NowMicros()),
      rng_(options_.seed) {}

ControlPlane::~ControlPlane() { Stop(); }

Status ControlPlane::Start() {
  RETURN_IF_ERROR(Rebuild());
  loop_ = std::thread([this] { Loop(); });
  Wake(true);
  return Status::Ok();
}

void ControlPlane::Stop() {
  {
    std::lock_guard lk(loop_mu_);
    stop_ = true;
  }
  loop_cv_.notify_all();
  if (loop_.joinable()) loop_.join();
}

Status ControlPlane::Rebuild() {
  std::lock_guard lock(mu_);
  placer_.reset();  // it refers to the policy replaced here
  ASSIGN_OR_RETURN(policy_, MakePolicy(options_.policy));
  ASSIGN_OR_RETURN(std::vector<NodeRecord> nodes, store_.ListNodes());
  const TimeMicros now = clock_.NowMicros();
  for (NodeRecord& n : nodes) {
    std::string name = n.node.name;
    const bool ready = n.node.ready;
    auto added = state_.AddNode(std::move(n.node));
    if (!added.ok()) return added.status().WithContext("rebuilding node " + name);
    std::lock_guard seen(seen_mu_);
    last_seen_[name] = now;
    if (!ready) maybe_not_ready_.insert(name);
  }
  ASSIGN_OR_RETURN(std::vector<AllocationRecord> allocations, store_.ListAllocations());
  std::unordered_map<JobId, std::vector<Allocation>> booked;
  for (const AllocationRecord& record : allocations) {
    auto allocation = FromAllocationRecord(state_, record);
    if (!allocation.ok()) return allocation.status().WithContext("rebuilding job " + record.job.ToString());
    RETURN_IF_ERROR(state_.Apply(*allocation).WithContext("rebuilding job " + record.job.ToString()));
    booked[record.job].push_back(*allocation);
  }
  RETURN_IF_ERROR(state_.CheckInvariants());
  JobFilter holding;
  holding.states = {JobState::kScheduled, JobState::kRunning, JobState::kSuspending};
  ASSIGN_OR_RETURN(std::vector<JobRecord> held, store_.ListJobs(holding));
  for (const JobRecord& job : held) {
    HeldJob h(JobTerms::Of(job));
    ArrivedLocked(h);  // the policy relearns the workload from the jobs alive now
    h.state = job.state;
    h.last_start = job.last_start_us > 0 ? job.last_start_us : job.updated_us;
    h.allocations = std::move(booked[job.id]);
    h.master_port = PickMasterPortLocked(job.id, h.allocations);  // in id order: as they were first chosen
    held_[job.id] = std::move(h);
    IndexHeldLocked(job.id, held_[job.id].allocations, true);
    if (job.state == JobState::kSuspending) {
      JobId preemptor = internal::PreemptorOf(job.state_reason);
      if (preemptor.value() != 0) awaiting_[preemptor].push_back(job.id);
    }
  }
  // The suspensions the per-hour cap counts (the store records each one).
  ASSIGN_OR_RETURN(auto suspensions, store_.SuspensionsSince(now - 3600 * kMicrosPerSecond));
  for (const auto& [id, at] : suspensions) suspended_at_[id].push_back(at);
  JobFilter filter;
  filter.states = {JobState::kQueued};
  ASSIGN_OR_RETURN(std::vector<JobRecord> queued, store_.ListJobs(filter));
  for (const JobRecord& job : queued) {
    EnqueueLocked(job);
    queued_[job.id].not_before = RetryNotBefore(job);
    ArrivedLocked(queued_[job.id]);
    queued_[job.id].reason = job.pending_reason;
    queued_[job.id].persisted = job.pending_reason;
  }
  std::fprintf(stderr, "xpool server: rebuilt %zu nodes, %zu allocations, %zu queued jobs from the %s store\n",
               nodes.size(), allocations.size(), queued.size(), std::string(store_.Kind()).c_str());
  return Status::Ok();
}

ControlPlane::JobTerms ControlPlane::JobTerms::Of(const JobRecord& job) {
  JobTerms t;
  t.tenant = job.tenant;
  t.priority = job.priority;
  t.first_submit = job.submitted_us;
  t.request = job.spec.ToTaskRequest();
  t.replicas = job.spec.replicas;
  t.preemptible = job.spec.preemptible;
  if (job.spec.interactive) {
    t.interactive_ttl = job.spec.interactive->ttl_seconds * kMicrosPerSecond;
    t.interactive_idle = job.spec.interactive->idle_timeout_seconds * kMicrosPerSecond;
  }
  return t;
}

void ControlPlane::JobTerms::FillQueueJob(JobId id, QueueJob* job) const {
  job->id = id;
  job->tenant = tenant;
  job->priority = priority;
  job->first_submit = first_submit;
  job->request = request;
  job->replicas = replicas;
  job->state = QueueJobState::kPending;
  job->preemptible = preemptible;
  job->last_start = 0;
  job->suspensions_last_hour = 0;
}

void ControlPlane::EnqueueLocked(const JobRecord& job) {
  QueuedJob q(JobTerms::Of(job));
  q.restarted = job.restart_count > 0;
  queued_[job.id] = std::move(q);
}

void ControlPlane::ArrivedLocked(const JobTerms& terms) {
  for (int r = 0; r < terms.replicas; ++r) policy_->OnArrival(terms.request);
}

void ControlPlane::DequeueLocked(JobId id) {
  queued_.erase(id);
  awaiting_.erase(id);
  reserved_.erase(id);
}

void ControlPlane::IndexHeldLocked(JobId id, const std::vector<Allocation>& allocations, bool add) {
  for (const Allocation& a : allocations) {
    std::vector<JobId>& ids = held_on_node_[a.node];
    auto it = std::lower_bound(ids.begin(), ids.end(), id);
    if (add && (it == ids.end() || *it != id)) ids.insert(it, id);
    if (!add && it != ids.end() && *it == id) ids.erase(it);
  }
}

void ControlPlane::ReleaseLocked(JobId id) {
  // A job leaving the devices is no longer awaited by a preemptor.
  for (auto w = awaiting_.begin(); w != awaiting_.end();) {
    std::erase(w->second, id);
    w = w->second.empty() ? awaiting_.erase(w) : std::next(w);
  }
  auto it = held_.find(id);
  if (it == held_.end()) return;
  for (const Allocation& a : it->second.allocations) {
    Status s = state_.Release(a);
    if (!s.ok())
      std::fprintf(stderr, "xpool server: releasing job %s: %s\n", id.ToString().c_str(), s.ToString().c_str());
  }
  IndexHeldLocked(id, it->second.allocations, false);
  BumpNodesLocked(it->second.allocations);
  held_.erase(it);
}

void ControlPlane::BumpNodesLocked(const std::vector<Allocation>& allocations) {
  for (size_t i = 0; i < allocations.size(); ++i) {
    const int node = allocations[i].node;
    bool seen = false;  // a gang's replicas on one node: one bump
    for (size_t j = 0; j < i && !seen; ++j) seen = allocations[j].node == node;
    if (!seen && node >= 0 && node < state_.node_count()) changes_.Bump(state_.node(node).name);
  }
}

std::vector<JobId> ControlPlane::JobsOnNode(std::string_view node) const {
  std::lock_guard lock(mu_);
  const int index = state_.FindNode(node);
  auto it = held_on_node_.find(index);
  return it == held_on_node_.end() ? std::vector<JobId>() : it->second;
}

int ControlPlane::PickMasterPortLocked(JobId id, const std::vector<Allocation>& allocations) const {
  if (allocations.size() < 2) return 0;
  std::vector<int> taken;
  auto on_node = held_on_node_.find(allocations[0].node);
  if (on_node != held_on_node_.end()) {
    for (JobId other : on_node->second) {
      auto h = held_.find(other);
      if (other == id || h == held_.end() || h->second.allocations.empty()) continue;
      if (h->second.allocations[0].node == allocations[0].node) taken.push_back(h->second.master_port);
    }
  }
  return internal::ChooseMasterPort(id.value(), taken);
}

int ControlPlane::MasterPort(JobId id) const {
  std::lock_guard lock(mu_);
  auto it = held_.find(id);
  return it == held_.end() ? 0 : it->second.master_port;
}

std::string ControlPlane::PendingReason(JobId id) const {
  std::lock_guard lock(mu_);
  auto it = queued_.find(id);
  return it == queued_.end() ? "" : it->second.reason;
}

std::vector<std::string> ControlPlane::PendingReasons(const std::vector<JobId>& ids) const {
  std::vector<std::string> out;
  out.reserve(ids.size());
  std::lock_guard lock(mu_);
  for (JobId id : ids) {
    auto it = queued_.find(id);
    out.push_back(it == queued_.end() ? "" : it->second.reason);
  }
  return out;
}

Status ControlPlane::RegisterNode(Node node) {
  RETURN_IF_ERROR(ValidateNode(node));
  if (auto mig = node.labels.find(std::string(kMigDynamicLabel)); mig != node.labels.end()) {
    auto gpus = ParseMigDynamicLabel(mig->second);
    RETURN_IF_ERROR(gpus.status().WithContext("label " + mig->first));
    RETURN_IF_ERROR(ValidateMigSlots(node, *gpus).WithContext("label " + mig->first));
  }
  const TimeMicros now = clock_.NowMicros();
  {
    std::lock_guard lock(mu_);
    int index = state_.FindNode(node.name);
    if (auto plan = mig_plans_.find(node.name); index >= 0 && plan != mig_plans_.end()) {
      // Back after a MIG plan (applied or not): the description from before it (devices not cordoned) first.
      // Applied: the node may be planned again at once (the delay keeps a plan its agent refused from coming back).
      auto label = node.labels.find(std::string(kMigDynamicLabel));
      if (label != node.labels.end() && label->second == plan->second.label_after) mig_next_plan_.erase(node.name);
      CheckOk(state_.UpdateNode(index, std::move(plan->second.before)), "the node's description before the plan");
      mig_plans_.erase(plan);
      mig_plans_out_.store(mig_plans_.size(), std::memory_order_relaxed);
    }
    if (index >= 0) {
      // A node known before may come back changed (another MIG geometry, a GPU more or less): ClusterState takes
      // the new description only where nothing allocated is lost, then it is persisted (or the old one restored).
      Node before = state_.node(index);
      RETURN_IF_ERROR(state_.UpdateNode(index, node));
      if (Status stored = store_.UpsertNode(node, now); !stored.ok()) {
        (void)state_.UpdateNode(index, std::move(before));  // the description it held a moment ago fits
        return stored;
      }
    } else {
      // Check it can join before persisting it (ClusterState validates names and capacities).
      ClusterState probe;
      RETURN_IF_ERROR(probe.AddNode(node).status());
      RETURN_IF_ERROR(store_.UpsertNode(node, now));
      RETURN_IF_ERROR(state_.AddNode(node).status());
    }
    std::lock_guard seen(seen_mu_);
    last_seen_[node.name] = now;
    if (!node.ready) maybe_not_ready_.insert(node.name);
  }
  Wake(true);
  return Status::Ok();
}

Status ControlPlane::Heartbeat(std::string_view name) {
  const TimeMicros now = clock_.NowMicros();
  {
    std::lock_guard seen(seen_mu_);
    auto it = last_seen_.find(std::string(name));
    if (it == last_seen_.end()) return NotFoundError("node " + std::string(name) + " is not registered");
    it->second = now;
    // The common case, a Ready node reporting in, does not wait for the main lock (a pass may hold it).
    if (!maybe_not_ready_.contains(it->first)) return Status::Ok();
  }
  std::lock_guard lock(mu_);
  int index = state_.FindNode(name);
  if (index >= 0 && !state_.node(index).ready) {
    RETURN_IF_ERROR(store_.SetNodeReady(name, true, now));
    RETURN_IF_ERROR(state_.SetNodeReady(index, true));
    Wake(true);
  }
  std::lock_guard seen(seen_mu_);
  maybe_not_ready_.erase(std::string(name));
  return Status::Ok();
}

Status ControlPlane::SetCordoned(std::string_view name, bool cordoned) {
  {
    std::lock_guard lock(mu_);
    int index = state_.FindNode(name);
    if (index < 0) return NotFoundError("node " + std::string(name) + " not found");
    RETURN_IF_ERROR(store_.SetNodeCordoned(name, cordoned, clock_.NowMicros()));
    RETURN_IF_ERROR(state_.SetNodeCordoned(index, cordoned));
  }
  Wake(true);
  return Status::Ok();
}

std::vector<NodeView> ControlPlane::Nodes() const {
  std::lock_guard lock(mu_);
  std::vector<NodeView> out;
  out.reserve(state_.node_count());
  std::lock_guard seen(seen_mu_);
  for (int i = 0; i < state_.node_count(); ++i) {
    auto it = last_seen_.find(state_.node(i).name);
    out.push_back(NodeView{state_.node(i), state_.usage(i), it == last_seen_.end() ? 0 : it->second});
  }
  return out;
}

void ControlPlane::VisitNodes(const std::function<void(const NodeVisit&)>& visit) const {
  std::lock_guard lock(mu_);
  std::lock_guard seen(seen_mu_);
  for (int i = 0; i < state_.node_count(); ++i) {
    auto it = last_seen_.find(state_.node(i).name);
    visit(NodeVisit{i, state_.identity(), state_.node(i), state_.usage(i), it == last_seen_.end() ? 0 : it->second});
  }
}

Result<NodeView> ControlPlane::GetNode(std::string_view name) const {
  std::lock_guard lock(mu_);
  int i = state_.FindNode(name);
  if (i < 0) return NotFoundError("node " + std::string(name) + " not found");
  std::lock_guard seen(seen_mu_);
  auto it = last_seen_.find(state_.node(i).name);
  return NodeView{state_.node(i), state_.usage(i), it == last_seen_.end() ? 0 : it->second};
}

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
  auto next_job = [&]() -> QueueJob& {  // the element for ids.size(), kept from an earlier pass when there is one
    if (ids.size() == jobs.size()) jobs.emplace_back();
    return jobs[ids.size()];
  };
  for (const auto& [id, h] : held_) {
    if (static_cast<int>(h.allocations.size()) != h.replicas) continue;  // not every replica booked: skip
    QueueJob& j = next_job();
    h.FillQueueJob(id, &j);
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
    q.FillQueueJob(id, &j);
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
  // still awaiting victims is theirs: held for the pass's duration.
  std::vector<Allocation> holds;
  for (const auto& [id, allocations] : reserved_) {
    if (!awaiting_.contains(id)) continue;
    for (const Allocation& a : allocations) {
      holds.push_back(internal::FreePartOf(state_, a));
      CheckOk(state_.Apply(holds.back()), "only the part that is free in this state");
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

std::string ControlPlane::TenantName(TenantId id) const {
  auto it = tenant_names_.find(id.value());
  if (it != tenant_names_.end()) return it->second;
  auto t = store_.GetTenant(id);
  std::string name = t.ok() ? t->name : id.ToString();
  tenant_names_[id.value()] = name;
  return name;
}

size_t ControlPlane::queue_length() const {
  std::lock_guard lock(mu_);
  return queued_.size();
}

Status ControlPlane::CheckConsistency() const {
  std::lock_guard lock(mu_);
  ClusterState rebuilt;
  for (int i = 0; i < state_.node_count(); ++i) RETURN_IF_ERROR(rebuilt.AddNode(state_.node(i)).status());
  ASSIGN_OR_RETURN(std::vector<AllocationRecord> records, store_.ListAllocations());
  // A placement being committed is booked in the state already; it may or may not be in the store yet.
  auto committing = [&](JobId id) {
    auto h = held_.find(id);
    return h != held_.end() && h->second.committing;
  };
  for (const AllocationRecord& r : records) {
    if (committing(r.job)) continue;
    ASSIGN_OR_RETURN(Allocation a, FromAllocationRecord(rebuilt, r));
    RETURN_IF_ERROR(rebuilt.Apply(a));
  }
  for (const auto& [id, h] : held_) {
    if (!h.committing) continue;
    for (const Allocation& a : h.allocations) RETURN_IF_ERROR(rebuilt.Apply(a));
  }
  if (int i = internal::FirstUsageDifference(rebuilt, state_); i >= 0) {
    return InternalError("node " + state_.node(i).name + ": store allocations differ from the cluster state");
  }
  // The per-node index of held jobs says what held_ says.
  std::unordered_map<int, std::vector<JobId>> index;
  for (const auto& [id, h] : held_) {
    for (const Allocation& a : h.allocations) {
      std::vector<JobId>& ids = index[a.node];
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
  }
  for (auto& [node, ids] : index) std::sort(ids.begin(), ids.end());
  std::erase_if(index, [](const auto& e) { return e.second.empty(); });
  auto indexed = held_on_node_;
  std::erase_if(indexed, [](const auto& e) { return e.second.empty(); });
  if (index != indexed) return InternalError("the per-node index of held jobs differs from the held jobs");
  return state_.CheckInvariants();
}

}  // namespace xpool::server
