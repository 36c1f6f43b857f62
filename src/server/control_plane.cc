#include "server/control_plane.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "common/units.h"
#include "model/job_state.h"
#include "model/mig_label.h"
#include "scheduler/queue/scheduler_job_placer.h"
#include "scheduler/queue/scheduling_pass.h"
#include "server/internal/distributed_launch.h"
#include "server/internal/pass_undo.h"
#include "server/internal/victim_reason.h"
#include "store/allocation_codec.h"

namespace xpool::server {
namespace {

// The MPS user of a tenant's tasks (TaskRequest::mps_user): they run as its uid (docs/agent.md, "Task identity").
uint64_t MpsUserOf(TenantId tenant) { return static_cast<uint64_t>(tenant.value()); }

// The user of the first device in MPS mode that `a` names and tasks hold; 0 when none.
uint64_t MpsUserHolding(const ClusterState& state, const Allocation& a) {
  for (const DeviceGrant& g : a.devices) {
    const DeviceUsage& u = state.usage(a.node).devices[static_cast<size_t>(g.device)];
    if (state.node(a.node).devices[static_cast<size_t>(g.device)].mode == DeviceMode::kMps && u.sharers > 0) {
      return u.mps_user;
    }
  }
  return 0;
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
  JobFilter holding;
  holding.states = {JobState::kScheduled, JobState::kRunning, JobState::kSuspending};
  ASSIGN_OR_RETURN(std::vector<JobRecord> held, store_.ListJobs(holding));
  ASSIGN_OR_RETURN(auto booked, RebookLocked(held));
  RETURN_IF_ERROR(state_.CheckInvariants());
  size_t allocation_count = 0;
  for (const auto& [id, allocations] : booked) allocation_count += allocations.size();
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
               nodes.size(), allocation_count, queued.size(), std::string(store_.Kind()).c_str());
  return Status::Ok();
}

Result<std::unordered_map<JobId, std::vector<Allocation>>> ControlPlane::RebookLocked(
    const std::vector<JobRecord>& held) {
  std::unordered_map<JobId, TenantId> tenant_of;
  for (const JobRecord& job : held) tenant_of[job.id] = job.tenant;
  ASSIGN_OR_RETURN(std::vector<AllocationRecord> records, store_.ListAllocations());
  std::unordered_map<JobId, std::vector<Allocation>> booked;
  for (const AllocationRecord& record : records) {
    const std::string where = "rebuilding job " + record.job.ToString();
    auto allocation = FromAllocationRecord(state_, record);
    if (!allocation.ok()) return allocation.status().WithContext(where);
    auto tenant = tenant_of.find(record.job);
    allocation->mps_user = tenant == tenant_of.end() ? 0 : MpsUserOf(tenant->second);
    Status applied = state_.Apply(*allocation);
    const uint64_t holder = MpsUserHolding(state_, *allocation);
    if (!applied.ok() && holder != allocation->mps_user) {
      // Beside another tenant's tasks on an MPS device (a store written before one tenant held an MPS device at a
      // time): kept as it is, booked as that device's user's, so nothing accepted is lost. The device takes one
      // tenant's tasks again once these have ended.
      allocation->mps_user = holder;
      applied = state_.Apply(*allocation);
      if (applied.ok()) {
        std::fprintf(stderr, "xpool server: job %s shares an MPS device with another tenant's tasks\n",
                     record.job.ToString().c_str());
      }
    }
    RETURN_IF_ERROR(applied.WithContext(where));
    booked[record.job].push_back(*allocation);
  }
  return booked;
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

void ControlPlane::JobTerms::FillQueueJob(JobId id, bool with_mps_user, QueueJob* job) const {
  job->id = id;
  job->tenant = tenant;
  job->priority = priority;
  job->first_submit = first_submit;
  job->request = request;
  job->request.mps_user = with_mps_user ? MpsUserOf(tenant) : 0;
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
    if (auto h = held_.find(r.job); h != held_.end() && r.replica < static_cast<int>(h->second.allocations.size())) {
      a.mps_user = h->second.allocations[static_cast<size_t>(r.replica)].mps_user;  // the store keeps no user
    }
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
