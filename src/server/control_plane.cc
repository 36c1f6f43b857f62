#include "server/control_plane.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "model/job_state.h"
#include "scheduler/schedule.h"
#include "store/allocation_codec.h"

namespace xpool::server {
namespace {

// Jobs with the same key ask for the same thing: within one pass (capacity only shrinks) a shape that did
// not fit will not fit later in the pass either, so its reason is reused instead of scheduling again.
std::string RequestKey(const TaskRequest& r, int replicas) {
  std::string k = std::to_string(replicas) + "|" + std::to_string(r.cpu_milli) + "|" +
                  std::to_string(r.memory_mib) + "|" + std::to_string(r.device_count) + "|" +
                  std::to_string(r.device_memory_mib) + "|" + std::to_string(r.device_memory_percent) + "|" +
                  std::to_string(r.device_compute_milli) + "|" +
                  (r.vendor ? std::string(VendorName(*r.vendor)) : "") + "|" + (r.numa_bind ? "1" : "0");
  for (const auto* list : {&r.type_include, &r.type_exclude, &r.uuid_include, &r.uuid_exclude}) {
    k += "|";
    for (const std::string& s : *list) k += s + ",";
  }
  return k;
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

ControlPlane::ControlPlane(StateStore& store, Clock& clock, MetricsRegistry* metrics, ControlPlaneOptions options)
    : store_(store), clock_(clock), metrics_(metrics), options_(std::move(options)), rng_(options_.seed) {}

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
  ASSIGN_OR_RETURN(policy_, MakePolicy(options_.policy));
  ASSIGN_OR_RETURN(std::vector<NodeRecord> nodes, store_.ListNodes());
  const TimeMicros now = clock_.NowMicros();
  for (NodeRecord& n : nodes) {
    std::string name = n.node.name;
    auto added = state_.AddNode(std::move(n.node));
    if (!added.ok()) return added.status().WithContext("rebuilding node " + name);
    std::lock_guard seen(seen_mu_);
    last_seen_[name] = now;
  }
  ASSIGN_OR_RETURN(std::vector<AllocationRecord> allocations, store_.ListAllocations());
  for (const AllocationRecord& record : allocations) {
    auto allocation = FromAllocationRecord(state_, record);
    if (!allocation.ok()) return allocation.status().WithContext("rebuilding job " + record.job.ToString());
    RETURN_IF_ERROR(state_.Apply(*allocation).WithContext("rebuilding job " + record.job.ToString()));
    placed_[record.job].push_back(*allocation);
  }
  RETURN_IF_ERROR(state_.CheckInvariants());
  JobFilter filter;
  filter.states = {JobState::kQueued};
  ASSIGN_OR_RETURN(std::vector<JobRecord> queued, store_.ListJobs(filter));
  for (const JobRecord& job : queued) {
    EnqueueLocked(job);
    queued_[job.id].reason = job.pending_reason;
  }
  std::fprintf(stderr, "xpool server: rebuilt %zu nodes, %zu allocations, %zu queued jobs from the %s store\n",
               nodes.size(), allocations.size(), queued.size(), std::string(store_.Kind()).c_str());
  return Status::Ok();
}

void ControlPlane::EnqueueLocked(const JobRecord& job) {
  QueuedJob q;
  q.key = QueueKey{job.priority, job.submitted_us, job.id};
  q.tenant = job.tenant;
  q.request = job.spec.ToTaskRequest();
  q.replicas = job.spec.replicas;
  queue_.insert(q.key);
  queued_[job.id] = std::move(q);
}

void ControlPlane::DequeueLocked(JobId id) {
  auto it = queued_.find(id);
  if (it == queued_.end()) return;
  queue_.erase(it->second.key);
  queued_.erase(it);
}

void ControlPlane::ReleaseLocked(JobId id) {
  auto it = placed_.find(id);
  if (it == placed_.end()) return;
  for (const Allocation& a : it->second) {
    Status s = state_.Release(a);
    if (!s.ok()) std::fprintf(stderr, "xpool server: releasing job %s: %s\n", id.ToString().c_str(), s.ToString().c_str());
  }
  placed_.erase(it);
}

Result<JobRecord> ControlPlane::Submit(TenantId tenant, const JobSpec& spec) {
  RETURN_IF_ERROR(ValidateJobSpec(spec));
  RETURN_IF_ERROR(ValidateTaskRequest(spec.ToTaskRequest()).WithContext("resources"));
  ASSIGN_OR_RETURN(JobRecord job, store_.SubmitJob(tenant, spec, clock_.NowMicros()));
  if (metrics_ != nullptr) metrics_->CounterAdd("xpool_jobs_submitted_total", {});
  {
    std::lock_guard lock(mu_);
    EnqueueLocked(job);
    fresh_.push_back(job.id);
  }
  Wake(false);
  return job;
}

Result<JobRecord> ControlPlane::Cancel(JobId id, std::string_view reason) {
  bool released = false;
  {
    std::lock_guard lock(mu_);
    ASSIGN_OR_RETURN(JobRecord job, store_.GetJob(id));
    if (IsTerminal(job.state)) {
      return FailedPreconditionError("job " + id.ToString() + " is already " + std::string(JobStateName(job.state)));
    }
    RETURN_IF_ERROR(store_.TransitionJob(id, JobState::kCancelled, reason, clock_.NowMicros(), job.state));
    DequeueLocked(id);
    released = placed_.count(id) > 0;
    ReleaseLocked(id);
  }
  if (released) Wake(true);
  return store_.GetJob(id);
}

Result<JobRecord> ControlPlane::Finish(JobId id, JobState to, std::string_view reason) {
  {
    std::lock_guard lock(mu_);
    ASSIGN_OR_RETURN(JobRecord job, store_.GetJob(id));
    if (IsTerminal(job.state)) return job;
    RETURN_IF_ERROR(store_.TransitionJob(id, to, reason, clock_.NowMicros(), job.state));
    DequeueLocked(id);
    ReleaseLocked(id);
  }
  Wake(true);
  return store_.GetJob(id);
}

Result<JobRecord> ControlPlane::Suspend(JobId id) {
  bool released = false;
  {
    std::lock_guard lock(mu_);
    ASSIGN_OR_RETURN(JobRecord job, store_.GetJob(id));
    const TimeMicros now = clock_.NowMicros();
    switch (job.state) {
      case JobState::kQueued:
        RETURN_IF_ERROR(store_.TransitionJob(id, JobState::kSuspended, "held by the user", now, job.state));
        DequeueLocked(id);
        break;
      case JobState::kScheduled:
        // Not started yet: give the devices back and hold it.
        RETURN_IF_ERROR(store_.TransitionJob(id, JobState::kQueued, "suspend before start", now, job.state));
        RETURN_IF_ERROR(store_.TransitionJob(id, JobState::kSuspended, "held by the user", now, JobState::kQueued));
        ReleaseLocked(id);
        released = true;
        break;
      case JobState::kRunning: {
        RETURN_IF_ERROR(store_.TransitionJob(id, JobState::kSuspending, "suspend requested by the user", now, job.state));
        bool all_simulated = true;
        for (const Allocation& a : placed_[id]) all_simulated = all_simulated && state_.node(a.node).simulated;
        if (all_simulated) {
          // No agent to signal on a simulated node: the job stops at once.
          RETURN_IF_ERROR(store_.TransitionJob(id, JobState::kSuspended, "simulated node: suspended without an agent",
                                               now, JobState::kSuspending));
          ReleaseLocked(id);
          released = true;
        }
        break;
      }
      default:
        return FailedPreconditionError("job " + id.ToString() + " is " + std::string(JobStateName(job.state)) +
                                       " and cannot be suspended");
    }
  }
  if (released) Wake(true);
  return store_.GetJob(id);
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

std::string ControlPlane::PendingReason(JobId id) const {
  std::lock_guard lock(mu_);
  auto it = queued_.find(id);
  return it == queued_.end() ? "" : it->second.reason;
}

Status ControlPlane::RegisterNode(Node node) {
  RETURN_IF_ERROR(ValidateNode(node));
  const TimeMicros now = clock_.NowMicros();
  {
    std::lock_guard lock(mu_);
    int index = state_.FindNode(node.name);
    if (index >= 0 && state_.node(index).devices.size() != node.devices.size()) {
      return FailedPreconditionError("node " + node.name + " is registered with " +
                                     std::to_string(state_.node(index).devices.size()) +
                                     " devices; changing the device count of a node is not supported");
    }
    if (index < 0) {
      // Check it can join before persisting it (ClusterState validates names and capacities).
      ClusterState probe;
      RETURN_IF_ERROR(probe.AddNode(node).status());
    }
    RETURN_IF_ERROR(store_.UpsertNode(node, now));
    if (index >= 0) {
      RETURN_IF_ERROR(state_.UpdateNode(index, node));
    } else {
      RETURN_IF_ERROR(state_.AddNode(node).status());
    }
    std::lock_guard seen(seen_mu_);
    last_seen_[node.name] = now;
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
  }
  std::lock_guard lock(mu_);
  int index = state_.FindNode(name);
  if (index >= 0 && !state_.node(index).ready) {
    RETURN_IF_ERROR(store_.SetNodeReady(name, true, now));
    RETURN_IF_ERROR(state_.SetNodeReady(index, true));
    Wake(true);
  }
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

void ControlPlane::CheckNodeTimeouts() {
  const TimeMicros now = clock_.NowMicros();
  std::lock_guard lock(mu_);
  for (int i = 0; i < state_.node_count(); ++i) {
    const Node& n = state_.node(i);
    if (n.simulated || !n.ready) continue;
    TimeMicros seen;
    {
      std::lock_guard s(seen_mu_);
      seen = last_seen_[n.name];
    }
    if (now - seen <= options_.node_timeout) continue;
    if (store_.SetNodeReady(n.name, false, now).ok()) (void)state_.SetNodeReady(i, false);
  }
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
    }
    RunPass(full);
  }
}

int ControlPlane::RunPass(bool full) {
  std::lock_guard lock(mu_);
  std::vector<JobId> order;
  if (full) {
    order.reserve(queue_.size());
    for (const QueueKey& k : queue_) order.push_back(k.id);
    fresh_.clear();
  } else {
    std::vector<QueueKey> keys;
    for (JobId id : fresh_) {
      auto it = queued_.find(id);
      if (it != queued_.end()) keys.push_back(it->second.key);
    }
    fresh_.clear();
    std::sort(keys.begin(), keys.end());
    for (const QueueKey& k : keys) order.push_back(k.id);
  }
  std::unordered_map<std::string, std::string> failed_shapes;
  int placed = 0;
  for (JobId id : order) {
    auto it = queued_.find(id);
    if (it == queued_.end()) continue;
    QueuedJob& job = it->second;
    if (state_.node_count() == 0) {
      job.reason = "no nodes in the cluster yet";
      continue;
    }
    std::string key = RequestKey(job.request, job.replicas);
    auto memo = failed_shapes.find(key);
    if (memo != failed_shapes.end()) {
      job.reason = memo->second;
      continue;
    }
    auto start = std::chrono::steady_clock::now();
    GangResult result = PlaceLocked(job);  // may erase `job` from queued_
    if (metrics_ != nullptr) {
      metrics_->Observe("xpool_scheduling_latency_seconds", {}, Seconds(std::chrono::steady_clock::now() - start));
    }
    if (result.stop_pass) break;
    if (result.placed) {
      ++placed;
      continue;
    }
    failed_shapes[key] = result.reason;
    job.reason = std::move(result.reason);
  }
  return placed;
}

ControlPlane::GangResult ControlPlane::PlaceLocked(QueuedJob& job) {
  const JobId id = job.key.id;
  std::vector<Allocation> applied;
  auto rollback = [&] {
    for (auto a = applied.rbegin(); a != applied.rend(); ++a) (void)state_.Release(*a);
  };
  for (int replica = 0; replica < job.replicas; ++replica) {
    ScheduleOutcome outcome = Schedule(state_, job.request, *policy_, rng_);
    if (outcome.kind != OutcomeKind::kPlaced) {
      rollback();
      std::string reason = outcome.reason.empty() ? "no node fits" : outcome.reason;
      if (outcome.kind == OutcomeKind::kNeverFits) reason = "can never fit: " + reason;
      if (job.replicas > 1) {
        reason = "replica " + std::to_string(replica) + " of " + std::to_string(job.replicas) + " (all-or-nothing): " + reason;
      }
      return GangResult{false, false, reason};
    }
    Status s = state_.Apply(outcome.allocation);
    if (!s.ok()) {
      rollback();
      return GangResult{false, false, "internal: " + s.message()};
    }
    policy_->OnPlaced(state_, job.request, outcome.allocation);
    applied.push_back(std::move(outcome.allocation));
  }
  std::vector<AllocationRecord> records;
  std::string nodes;
  bool all_simulated = true;
  for (int replica = 0; replica < job.replicas; ++replica) {
    auto record = ToAllocationRecord(state_, applied[replica], id, replica);
    if (!record.ok()) {
      rollback();
      return GangResult{false, false, "internal: " + record.status().message()};
    }
    const Node& n = state_.node(applied[replica].node);
    all_simulated = all_simulated && n.simulated;
    if (nodes.find(n.name) == std::string::npos) nodes += (nodes.empty() ? "" : ",") + n.name;
    records.push_back(std::move(*record));
  }
  const TimeMicros now = clock_.NowMicros();
  Status committed = store_.CommitPlacement(id, records, "placed on " + nodes, now);
  if (!committed.ok()) {
    rollback();
    if (committed.code() == StatusCode::kFailedPrecondition) {
      DequeueLocked(id);  // no longer queued (cancelled meanwhile): drop it
      return GangResult{false, false, ""};
    }
    return GangResult{false, true, "the store is unavailable: " + committed.message()};
  }
  placed_[id] = std::move(applied);
  DequeueLocked(id);
  if (metrics_ != nullptr) metrics_->CounterAdd("xpool_placements_total", {});
  if (all_simulated) {
    // No agent runs the tasks of simulated nodes: they start at once.
    (void)store_.TransitionJob(id, JobState::kRunning, "started on a simulated node (no agent)", now,
                               JobState::kScheduled);
  }
  return GangResult{true, false, ""};
}

std::string ControlPlane::TenantName(TenantId id) const {
  auto it = tenant_names_.find(id.value());
  if (it != tenant_names_.end()) return it->second;
  auto t = store_.GetTenant(id);
  std::string name = t.ok() ? t->name : id.ToString();
  tenant_names_[id.value()] = name;
  return name;
}

void ControlPlane::ExportGauges(MetricsRegistry& m) const {
  std::lock_guard lock(mu_);
  std::map<std::string, int64_t> per_tenant;
  for (const auto& [id, job] : queued_) per_tenant[TenantName(job.tenant)]++;
  m.GaugeClear("xpool_queue_length");
  for (const auto& [tenant, n] : per_tenant) m.GaugeSet("xpool_queue_length", {{"tenant", tenant}}, double(n));
  for (const char* g : {"xpool_device_memory_capacity_mib", "xpool_device_memory_allocated_mib",
                        "xpool_device_cores_capacity_milli", "xpool_device_cores_allocated_milli"}) {
    m.GaugeClear(g);
  }
  int64_t ready = 0, not_ready = 0, cordoned = 0;
  for (int i = 0; i < state_.node_count(); ++i) {
    const Node& n = state_.node(i);
    (n.ready ? ready : not_ready)++;
    if (n.cordoned) cordoned++;
    for (size_t d = 0; d < n.devices.size(); ++d) {
      Labels l = {{"node", n.name}, {"device", std::to_string(d)}, {"model", n.devices[d].model}};
      const DeviceUsage& u = state_.usage(i).devices[d];
      m.GaugeSet("xpool_device_memory_capacity_mib", l, double(n.devices[d].memory_mib));
      m.GaugeSet("xpool_device_memory_allocated_mib", l, double(u.memory_mib));
      m.GaugeSet("xpool_device_cores_capacity_milli", l, double(n.devices[d].compute_milli));
      m.GaugeSet("xpool_device_cores_allocated_milli", l, double(u.compute_milli));
    }
  }
  m.GaugeSet("xpool_nodes", {{"condition", "ready"}}, double(ready));
  m.GaugeSet("xpool_nodes", {{"condition", "not_ready"}}, double(not_ready));
  m.GaugeSet("xpool_nodes", {{"condition", "cordoned"}}, double(cordoned));
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
  for (const AllocationRecord& r : records) {
    ASSIGN_OR_RETURN(Allocation a, FromAllocationRecord(rebuilt, r));
    RETURN_IF_ERROR(rebuilt.Apply(a));
  }
  for (int i = 0; i < state_.node_count(); ++i) {
    const NodeUsage& want = rebuilt.usage(i);
    const NodeUsage& have = state_.usage(i);
    bool same = want.cpu_milli == have.cpu_milli && want.memory_mib == have.memory_mib;
    for (size_t d = 0; same && d < want.devices.size(); ++d) {
      same = want.devices[d].memory_mib == have.devices[d].memory_mib &&
             want.devices[d].compute_milli == have.devices[d].compute_milli &&
             want.devices[d].sharers == have.devices[d].sharers;
    }
    if (!same) return InternalError("node " + state_.node(i).name + ": store allocations differ from the cluster state");
  }
  return state_.CheckInvariants();
}

}  // namespace xpool::server
