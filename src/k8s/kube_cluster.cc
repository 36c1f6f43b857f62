#include "k8s/kube_cluster.h"

#include <algorithm>
#include <map>
#include <utility>

#include "common/units.h"
#include "scheduler/fit.h"
#include "scheduler/schedule.h"

namespace xpool::k8s {
namespace {

// "1 node: not enough device memory on any device" → "not enough device memory on any device".
std::string OneNodeReason(const ClusterState& state, int index, const TaskRequest& request,
                          const NodeVerdict& verdict) {
  ReasonTally tally(request);
  tally.Add(state, index, verdict);
  std::string text = tally.Render();
  constexpr std::string_view kPrefix = "1 node: ";
  if (text.rfind(kPrefix, 0) == 0) text.erase(0, kPrefix.size());
  return text;
}

std::string ContainerPrefix(const ContainerDemand& c) { return "container \"" + c.container + "\": "; }

// The grants the init containers need beyond what the pod's app containers hold on the same devices: per device,
// the largest excess over the init containers (they run one at a time, before the app containers, and kubelet
// hands their devices on to the later containers).
Allocation InitExcess(int index, const std::vector<const Allocation*>& app,
                      const std::vector<const Allocation*>& init) {
  std::map<int, DeviceGrant> held;  // device → what the app containers hold there
  for (const Allocation* a : app) {
    for (const DeviceGrant& g : a->devices) {
      DeviceGrant& h = held[g.device];
      h.memory_mib += g.memory_mib;
      h.compute_milli += g.compute_milli;
    }
  }
  std::map<int, DeviceGrant> excess;
  for (const Allocation* a : init) {
    for (const DeviceGrant& g : a->devices) {
      const DeviceGrant& h = held[g.device];
      DeviceGrant& e = excess[g.device];
      e.device = g.device;
      e.memory_mib = std::max(e.memory_mib, g.memory_mib - h.memory_mib);
      e.compute_milli = std::max(e.compute_milli, g.compute_milli - h.compute_milli);
    }
  }
  Allocation out;
  out.node = index;
  for (const auto& [device, e] : excess) {
    const bool app_holds_device =
        held.count(device) != 0 && (held[device].memory_mib > 0 || held[device].compute_milli > 0);
    if (e.memory_mib > 0 || e.compute_milli > 0 || !app_holds_device) out.devices.push_back(e);
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<KubeCluster>> KubeCluster::Create(Options options, const Clock& clock) {
  std::unique_ptr<KubeCluster> cluster(new KubeCluster(std::move(options), clock));
  cluster->rng_.seed(cluster->options_.seed);
  std::lock_guard<std::mutex> lock(cluster->mu_);
  Result<PlacementPolicy*> policy = cluster->PolicyLocked(cluster->options_.default_policy);
  if (!policy.ok()) return policy.status();
  return cluster;
}

Result<PlacementPolicy*> KubeCluster::PolicyLocked(const std::string& name) {
  const std::string& wanted = name.empty() ? options_.default_policy : name;
  auto it = policies_.find(wanted);
  if (it != policies_.end()) return it->second.get();
  Result<std::unique_ptr<PlacementPolicy>> made = MakePolicy(wanted);
  if (!made.ok() && wanted == "binpack") made = MakePolicy("best-fit");  // HAMi's name for packing
  if (!made.ok()) return made.status();
  PlacementPolicy* out = made->get();
  policies_.emplace(wanted, std::move(made).value());
  return out;
}

// ---- nodes ----

void KubeCluster::UpsertNode(const KubeNode& node) {
  std::lock_guard<std::mutex> lock(mu_);
  UpsertNodeLocked(node);
}

void KubeCluster::UpsertNodeLocked(const KubeNode& kube) {
  Result<Node> parsed = NodeFromKube(kube);
  Node node;
  if (parsed.ok()) {
    node = std::move(parsed).value();
    node_errors_.erase(kube.name);
  } else {
    node_errors_[kube.name] = parsed.status().message();
    node.name = kube.name;
    node.ready = kube.ready;
    node.cordoned = kube.unschedulable;
  }
  auto it = index_.find(kube.name);
  if (it != index_.end()) {
    const int old = it->second;
    const Node& before = state_.node(old);
    bool same_devices = before.devices.size() == node.devices.size();
    for (size_t d = 0; same_devices && d < node.devices.size(); ++d) {
      same_devices = before.devices[d].uuid == node.devices[d].uuid;
    }
    node.name = before.name;  // the internal name stays
    if (same_devices && state_.UpdateNode(old, node).ok()) return;
  }
  // New node, or its devices changed (reboot with a different set): a fresh entry; bookings move over by uuid.
  node.name = kube.name;
  if (state_.FindNode(node.name) >= 0) node.name = kube.name + "#" + std::to_string(++internal_names_);
  Result<int> added = state_.AddNode(node);
  if (!added.ok()) {  // cannot happen for a validated node; keep the old entry if any
    node_errors_[kube.name] = added.status().message();
    return;
  }
  if (it != index_.end()) {
    const int old = it->second;
    for (auto& [uid, booking] : bookings_) {
      if (booking.index != old) continue;
      for (auto a = booking.allocations.rbegin(); a != booking.allocations.rend(); ++a) {
        CheckOk(state_.Release(*a), "a booking held on the node");
      }
      booking.allocations.clear();
      booking.index = *added;
      BookContainersLocked(&booking, booking.assignment.containers);
    }
    RetireIndexLocked(old);
  }
  index_[kube.name] = *added;
}

void KubeCluster::RetireIndexLocked(int index) {
  CheckOk(state_.SetNodeReady(index, false), "the index of a node in the state");
  CheckOk(state_.SetNodeCordoned(index, true), "the index of a node in the state");
}

void KubeCluster::RemoveNode(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(name);
  if (it == index_.end()) return;
  RetireIndexLocked(it->second);
  index_.erase(it);
  node_errors_.erase(name);
}

void KubeCluster::ReplaceNodes(const std::vector<KubeNode>& nodes) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unordered_set<std::string> listed;
  for (const KubeNode& n : nodes) {
    listed.insert(n.name);
    UpsertNodeLocked(n);
  }
  for (auto it = index_.begin(); it != index_.end();) {
    if (listed.count(it->first) != 0) {
      ++it;
      continue;
    }
    RetireIndexLocked(it->second);
    node_errors_.erase(it->first);
    it = index_.erase(it);
  }
}

bool KubeCluster::HasNode(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.count(name) != 0;
}

// ---- pods ----

void KubeCluster::ReleaseLocked(const std::string& uid) {
  arrived_.erase(uid);
  auto it = bookings_.find(uid);
  if (it == bookings_.end()) return;
  for (auto a = it->second.allocations.rbegin(); a != it->second.allocations.rend(); ++a) {
    CheckOk(state_.Release(*a), "a booking held in the state");
  }
  bookings_.erase(it);
}

void KubeCluster::NoteTermsLocked(Booking* booking, const PodInfo& pod) {
  Result<PodTerms> terms = PodTermsOf(pod);
  booking->terms = terms.ok() ? std::optional<PodTerms>(*terms) : std::nullopt;
  booking->queue_key = terms.ok() ? QueueKey(pod, *terms) : "";
  auto bound_at = pod.annotations.find(std::string(kBindTimeAnnotation));
  Result<int64_t> at = bound_at == pod.annotations.end() ? Result<int64_t>(InvalidArgumentError("none"))
                                                         : ParseNonNegativeInt(bound_at->second);
  booking->started = at.ok() ? *at : (booking->started != 0 ? booking->started : booking->reserved_at);
}

void KubeCluster::NotePendingLocked(const PodInfo& pod) {
  if (pod.node_name.empty() && !pod.deleting && !pod.Terminated() && RequestsManagedResources(pod)) {
    pending_[pod.uid] = pod;
  } else {
    pending_.erase(pod.uid);
  }
}

void KubeCluster::ObservePodLocked(const PodInfo& pod) {
  if (pod.uid.empty()) return;
  NotePendingLocked(pod);
  if (pod.Terminated()) {
    ReleaseLocked(pod.uid);
    return;
  }
  auto booked = bookings_.find(pod.uid);
  if (booked != bookings_.end()) {
    booked->second.confirmed = true;
    booked->second.pod_key = pod.Key();
    NoteTermsLocked(&booked->second, pod);
    return;
  }
  auto annotation = pod.annotations.find(std::string(kAllocationAnnotation));
  if (annotation == pod.annotations.end()) return;
  Result<PodAssignment> assignment = DecodeAssignment(annotation->second);
  if (!assignment.ok()) {
    ++counters_.observed_conflicts;
    return;
  }
  auto node = index_.find(assignment->node);
  if (node == index_.end()) return;
  Booking booking;
  booking.node = assignment->node;
  booking.pod_key = pod.Key();
  booking.index = node->second;
  booking.confirmed = true;
  booking.reserved_at = clock_->NowMicros();
  BookContainersLocked(&booking, assignment->containers);
  booking.assignment = std::move(assignment).value();
  NoteTermsLocked(&booking, pod);
  bookings_.emplace(pod.uid, std::move(booking));
}

void KubeCluster::BookContainersLocked(Booking* booking, const std::vector<ContainerAssignment>& containers) {
  const auto& devices = state_.node(booking->index).devices;
  std::vector<Allocation> inits, app;
  for (const ContainerAssignment& c : containers) {
    Allocation a;
    a.node = booking->index;
    for (const AssignedDevice& d : c.devices) {
      auto found = std::find_if(devices.begin(), devices.end(), [&](const Device& x) { return x.uuid == d.uuid; });
      if (found == devices.end()) continue;
      a.devices.push_back({static_cast<int>(found - devices.begin()), d.memory_mib, d.compute_milli});
    }
    if (c.init) {
      inits.push_back(std::move(a));
      continue;
    }
    if (state_.Apply(a).ok()) {
      if (!c.sidecar) app.push_back(a);
      booking->allocations.push_back(std::move(a));
    } else {
      ++counters_.observed_conflicts;  // recorded elsewhere but no longer fits here: do not over-allocate
    }
  }
  if (inits.empty()) return;
  // As at placement: the init containers' devices count where they exceed the app containers' (not sidecars').
  std::vector<const Allocation*> held, init;
  for (const Allocation& a : app) held.push_back(&a);
  for (const Allocation& a : inits) init.push_back(&a);
  Allocation excess = InitExcess(booking->index, held, init);
  if (excess.devices.empty()) return;
  if (state_.Apply(excess).ok()) {
    booking->allocations.push_back(std::move(excess));
  } else {
    ++counters_.observed_conflicts;
  }
}

void KubeCluster::ObservePod(const PodInfo& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  ObservePodLocked(pod);
}

void KubeCluster::ForgetPod(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.erase(uid);
  ReleaseLocked(uid);
}

void KubeCluster::ReplacePods(const std::vector<PodInfo>& pods) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unordered_set<std::string> listed;
  pending_.clear();
  for (const PodInfo& p : pods) {
    listed.insert(p.uid);
    ObservePodLocked(p);
  }
  const TimeMicros now = clock_->NowMicros();
  std::vector<std::string> gone;
  for (const auto& [uid, b] : bookings_) {
    if (listed.count(uid) != 0) continue;
    if (b.confirmed || now - b.reserved_at > options_.unconfirmed_grace) gone.push_back(uid);
  }
  for (const std::string& uid : gone) ReleaseLocked(uid);
}

// ---- placement ----

bool KubeCluster::PlaceContainerLocked(const ContainerDemand& c, int index, PlacementPolicy& policy, Allocation* a,
                                       int64_t* score, NodeFit* out) {
  const TaskRequest& r = c.request;
  NodeCandidate candidate;
  NodeVerdict verdict;
  if (!FitNode(state_, index, r, /*ignore_usage=*/false, &candidate, &verdict)) {
    out->reason = ContainerPrefix(c) + OneNodeReason(state_, index, r, verdict);
    NodeCandidate empty_candidate;
    NodeVerdict empty_verdict;
    const bool if_empty = FitNode(state_, index, r, /*ignore_usage=*/true, &empty_candidate, &empty_verdict);
    out->kind = if_empty ? NodeFit::Kind::kWait : NodeFit::Kind::kNeverFits;
    return false;
  }
  std::vector<int> chosen;
  if (!policy.Score(state_, r, candidate, rng_, score, &chosen) || !ValidDeviceChoice(state_, r, candidate, chosen)) {
    out->kind = NodeFit::Kind::kWait;
    out->reason = ContainerPrefix(c) + DescribeReason(FitReason::kPolicyVeto, "", r);
    return false;
  }
  *a = MakeAllocation(state_, r, index, chosen);
  return true;
}

NodeFit KubeCluster::FitLocked(const PodDemand& demand, int index, bool commit, std::vector<Allocation>* applied,
                               std::vector<Allocation>* per_container) {
  NodeFit out;
  Result<PlacementPolicy*> policy = PolicyLocked(demand.policy);
  if (!policy.ok()) {
    out.reason = policy.status().message();
    return out;
  }
  const size_t n = demand.containers.size();
  std::vector<Allocation> per(n);
  std::vector<Allocation> done;  // applied to state_, in order
  std::vector<size_t> app;       // indexes of app containers (their devices are free while init containers run)
  out.kind = NodeFit::Kind::kFits;
  // 1. App containers and sidecars: all at the same time.
  for (size_t i = 0; i < n && out.kind == NodeFit::Kind::kFits; ++i) {
    const ContainerDemand& c = demand.containers[i];
    if (c.phase == ContainerPhase::kInit) continue;
    int64_t score = 0;
    if (!PlaceContainerLocked(c, index, **policy, &per[i], &score, &out)) break;
    if (Status s = state_.Apply(per[i]); !s.ok()) {
      out.kind = NodeFit::Kind::kWait;
      out.reason = ContainerPrefix(c) + s.message();
      break;
    }
    done.push_back(per[i]);
    if (c.phase == ContainerPhase::kApp) app.push_back(i);
    out.score += score;
  }
  // 2. Init containers, one at a time before the app containers start: each may use the app containers' share.
  std::vector<const Allocation*> inits;
  if (out.kind == NodeFit::Kind::kFits) {
    std::vector<std::string> app_uuids;  // init containers go on these devices first: nothing extra to hold
    for (size_t i : app) {
      for (const DeviceGrant& g : per[i].devices) app_uuids.push_back(state_.node(index).devices[g.device].uuid);
    }
    for (auto i = app.rbegin(); i != app.rend(); ++i)
      CheckOk(state_.Release(per[*i]), "the app containers' grants just applied");
    for (size_t i = 0; i < n && out.kind == NodeFit::Kind::kFits; ++i) {
      const ContainerDemand& c = demand.containers[i];
      if (c.phase != ContainerPhase::kInit) continue;
      int64_t score = 0;
      ContainerDemand on_app_devices = c;
      if (c.request.uuid_include.empty()) on_app_devices.request.uuid_include = app_uuids;
      NodeFit ignored;
      if ((!app_uuids.empty() && PlaceContainerLocked(on_app_devices, index, **policy, &per[i], &score, &ignored)) ||
          PlaceContainerLocked(c, index, **policy, &per[i], &score, &out)) {
        inits.push_back(&per[i]);
      }
    }
    for (size_t i : app) CheckOk(state_.Apply(per[i]), "re-applying what was just released");
  }
  // 3. What the init containers need beyond the app containers' devices is held for the pod's lifetime.
  if (out.kind == NodeFit::Kind::kFits && !inits.empty()) {
    std::vector<const Allocation*> held;
    for (size_t i : app) held.push_back(&per[i]);
    Allocation excess = InitExcess(index, held, inits);
    if (!excess.devices.empty()) {
      if (Status s = state_.Apply(excess); !s.ok()) {
        out.kind = NodeFit::Kind::kWait;
        out.reason = "the init containers need more than is free beside the app containers: " + s.message();
      } else {
        done.push_back(std::move(excess));
      }
    }
  }
  if (out.kind == NodeFit::Kind::kFits && commit) {
    for (size_t i : app) (*policy)->OnPlaced(state_, demand.containers[i].request, per[i]);
    *applied = std::move(done);
    *per_container = std::move(per);
  } else {
    // Only asked, or a container failed: undo the tentative grants in reverse order.
    for (auto a = done.rbegin(); a != done.rend(); ++a) CheckOk(state_.Release(*a), "releasing what was just applied");
  }
  return out;
}

NodeFit KubeCluster::NodeFitLocked(const PodDemand& demand, const std::string& node, bool commit,
                                   std::vector<Allocation>* applied, std::vector<Allocation>* per_container) {
  NodeFit out;
  auto error = node_errors_.find(node);
  if (error != node_errors_.end()) {
    out.reason = "node's " + std::string(kNodeDevicesAnnotation) + " annotation is invalid: " + error->second;
    return out;
  }
  auto it = index_.find(node);
  if (it == index_.end()) {
    out.kind = NodeFit::Kind::kWait;
    out.reason = "node " + node + " is not known to xpool yet (not seen from the API server)";
    return out;
  }
  if (state_.node(it->second).devices.empty()) {
    out.reason = "no xpool devices on this node (no " + std::string(kNodeDevicesAnnotation) +
                 " annotation: is the xpool device plugin running there?)";
    return out;
  }
  return FitLocked(demand, it->second, commit, applied, per_container);
}

std::vector<NodeFit> KubeCluster::Evaluate(const std::string& pod_uid, const PodDemand& demand,
                                           const std::vector<std::string>& nodes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!pod_uid.empty() && arrived_.insert(pod_uid).second) {
    Result<PlacementPolicy*> policy = PolicyLocked(demand.policy);
    if (policy.ok()) {
      for (const ContainerDemand& c : demand.containers) (*policy)->OnArrival(c.request);
    }
  }
  std::vector<NodeFit> out;
  out.reserve(nodes.size());
  for (const std::string& n : nodes) out.push_back(NodeFitLocked(demand, n, /*commit=*/false, nullptr, nullptr));
  return out;
}

NodeFit KubeCluster::EvaluateWithout(const PodDemand& demand, const std::string& node,
                                     const std::vector<std::string>& victims) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(node);
  std::vector<const Allocation*> freed;
  if (it != index_.end()) {
    for (const std::string& uid : victims) {
      auto b = bookings_.find(uid);
      if (b == bookings_.end() || b->second.index != it->second) continue;
      for (auto a = b->second.allocations.rbegin(); a != b->second.allocations.rend(); ++a) {
        if (state_.Release(*a).ok()) freed.push_back(&*a);
      }
    }
  }
  NodeFit out = NodeFitLocked(demand, node, /*commit=*/false, nullptr, nullptr);
  for (auto a = freed.rbegin(); a != freed.rend(); ++a)
    CheckOk(state_.Apply(**a), "re-applying what was just released");
  return out;
}

PodAssignment KubeCluster::AssignmentLocked(const PodDemand& demand, int index,
                                            const std::vector<Allocation>& allocs) const {
  PodAssignment out;
  for (const auto& [name, i] : index_) {
    if (i == index) out.node = name;
  }
  const Node& node = state_.node(index);
  for (size_t i = 0; i < allocs.size(); ++i) {
    ContainerAssignment c;
    c.name = demand.containers[i].container;
    c.init = demand.containers[i].phase == ContainerPhase::kInit;
    c.sidecar = demand.containers[i].phase == ContainerPhase::kSidecar;
    for (const DeviceGrant& g : allocs[i].devices) {
      const Device& d = node.devices[g.device];
      c.devices.push_back({d.uuid, d.index, d.vendor, g.memory_mib, g.compute_milli});
    }
    out.containers.push_back(std::move(c));
  }
  return out;
}

Result<PodAssignment> KubeCluster::Reserve(const std::string& pod_uid, const PodDemand& demand,
                                           const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  auto booked = bookings_.find(pod_uid);
  if (booked != bookings_.end()) {
    if (booked->second.node == node) return booked->second.assignment;
    return AlreadyExistsError("pod already holds devices on node " + booked->second.node);
  }
  std::vector<Allocation> applied, per_container;
  NodeFit fit = NodeFitLocked(demand, node, /*commit=*/true, &applied, &per_container);
  if (fit.kind != NodeFit::Kind::kFits) {
    ++counters_.reserve_refused;
    return ResourceExhaustedError("node " + node + " cannot take the pod now: " + fit.reason);
  }
  ++counters_.reserve_ok;
  Booking b;
  b.node = node;
  b.index = index_.at(node);
  b.assignment = AssignmentLocked(demand, b.index, per_container);
  b.allocations = std::move(applied);
  b.reserved_at = clock_->NowMicros();
  PodAssignment out = b.assignment;
  bookings_.emplace(pod_uid, std::move(b));
  arrived_.erase(pod_uid);
  return out;
}

Status KubeCluster::Unreserve(const std::string& pod_uid) {
  std::lock_guard<std::mutex> lock(mu_);
  if (bookings_.count(pod_uid) == 0) return NotFoundError("pod " + pod_uid + " holds no devices");
  ReleaseLocked(pod_uid);
  return Status::Ok();
}

KubeClusterStats KubeCluster::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  KubeClusterStats s = counters_;
  s.nodes = static_cast<int>(index_.size());
  s.bookings = static_cast<int>(bookings_.size());
  s.unconfirmed = 0;
  for (const auto& [uid, b] : bookings_) s.unconfirmed += b.confirmed ? 0 : 1;
  return s;
}

std::vector<DeviceBooking> KubeCluster::Devices() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<DeviceBooking> out;
  std::map<std::string, int> sorted(index_.begin(), index_.end());
  for (const auto& [name, index] : sorted) {
    const Node& node = state_.node(index);
    const NodeUsage& usage = state_.usage(index);
    for (size_t d = 0; d < node.devices.size(); ++d) {
      const Device& dev = node.devices[d];
      const DeviceUsage& u = usage.devices[d];
      out.push_back({name, dev.uuid, dev.model, dev.index, dev.memory_mib, u.memory_mib, u.compute_milli, u.sharers});
    }
  }
  return out;
}

std::vector<ContainerBooking> KubeCluster::Containers() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ContainerBooking> out;
  std::map<std::string, const Booking*> sorted;
  for (const auto& [uid, b] : bookings_) sorted[uid] = &b;
  for (const auto& [uid, b] : sorted) {
    for (const ContainerAssignment& c : b->assignment.containers) {
      for (const AssignedDevice& d : c.devices) {
        out.push_back({uid, b->pod_key, b->node, c.name, d.uuid, d.memory_mib, d.compute_milli});
      }
    }
  }
  return out;
}

Status KubeCluster::CheckInvariants() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.CheckInvariants();
}

int64_t KubeCluster::FreeDeviceMemory(const std::string& node) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(node);
  if (it == index_.end()) return -1;
  int64_t free = 0;
  for (size_t d = 0; d < state_.node(it->second).devices.size(); ++d) {
    free += state_.FreeDeviceMemory(it->second, static_cast<int>(d));
  }
  return free;
}

}  // namespace xpool::k8s
