// KubeCluster's time-sharing half: victim search over the booked pods with the server's rules, and the views the
// time-sharing loop reads (pending pods, node names). See kube_cluster.h.
#include <algorithm>

#include "k8s/kube_cluster.h"

namespace xpool::k8s {

// The preemptor as a JobPlacer: the whole pod (every container, init containers included) on the first of the
// candidate nodes where it fits, against KubeCluster::state_ as the victim search leaves it. The placement names
// the node only (an Allocation without devices): the devices are chosen at bind, against the state then.
// Used with KubeCluster::mu_ held; one search, one thread.
class PodPlacer final : public JobPlacer {
 public:
  PodPlacer(KubeCluster& cluster, const PodDemand& demand, const std::vector<int>& indices)
      : cluster_(cluster), demand_(demand), indices_(indices) {}

  JobPlacement Place(ClusterState& state, const TaskRequest& /*request*/, int /*replicas*/) override {
    CheckOk(&state == &cluster_.state_ ? Status::Ok() : InternalError("a PodPlacer places on its cluster's state"),
            "ChooseVictims hands the placer the state it was given");
    JobPlacement out;
    out.kind = OutcomeKind::kWait;
    out.reason = "does not fit";
    for (int index : indices_) {
      if (cluster_.FitLocked(demand_, index, /*commit=*/false, nullptr, nullptr).kind != NodeFit::Kind::kFits) {
        continue;
      }
      out.kind = OutcomeKind::kPlaced;
      Allocation a;
      a.node = index;
      out.allocations.push_back(a);
      break;
    }
    return out;
  }

 private:
  KubeCluster& cluster_;
  const PodDemand& demand_;
  const std::vector<int>& indices_;
};

namespace {

// What the pod asks for across its app containers and sidecars (init containers run before them and are left
// out), for the guarantee rule.
ResourceAmounts PodAmounts(const PodDemand& demand, int64_t largest_device_memory_mib) {
  ResourceAmounts out;
  for (const ContainerDemand& c : demand.containers) {
    if (c.phase == ContainerPhase::kInit) continue;
    QueueJob one;
    one.request = c.request;
    out.Add(DemandOf(one, largest_device_memory_mib));
  }
  out.running_jobs = 1;
  return out;
}

std::string VictimText(const QueueJob& victim, VictimVerdict why, const QueueJob& preemptor,
                       const std::string& preemptor_key) {
  std::string out = "suspended for pod " + preemptor_key + " (priority " + std::to_string(preemptor.priority) +
                    "): " + std::string(VictimVerdictName(why));
  if (why == VictimVerdict::kByPriority) {
    out += " (" + std::to_string(victim.priority) + " < " + std::to_string(preemptor.priority) + ")";
  }
  return out;
}

}  // namespace

Result<VictimPlan> KubeCluster::ChooseVictims(const PodDemand& demand, const VictimSearch& search) {
  std::lock_guard<std::mutex> lock(mu_);
  VictimPlan plan;
  // 1. The candidate nodes, and whether the pod fits one of them as things are.
  std::vector<int> indices;
  std::map<int, std::string> name_of;
  int64_t largest_memory = 0;
  for (const std::string& n : search.nodes) {
    auto it = index_.find(n);
    if (it == index_.end() || node_errors_.count(n) != 0) continue;
    indices.push_back(it->second);
    name_of[it->second] = n;
    for (const Device& d : state_.node(it->second).devices) largest_memory = std::max(largest_memory, d.memory_mib);
  }
  if (indices.empty()) {
    plan.reason = "no candidate node is known to xpool";
    return plan;
  }
  PodPlacer placer(*this, demand, indices);
  JobPlacement now = placer.Place(state_, TaskRequest{}, 1);
  if (now.kind == OutcomeKind::kPlaced) {
    plan.fits_now = true;
    plan.node = name_of[now.allocations.front().node];
    return plan;
  }
  // 2. Tenants: the configured ones, then one per namespace seen without a configuration (no guarantee, no limit).
  std::vector<Tenant> tenants = search.tenants != nullptr ? search.tenants->tenants() : std::vector<Tenant>{};
  std::map<std::string, int> tenant_index;
  for (size_t t = 0; t < tenants.size(); ++t) tenant_index[tenants[t].name] = static_cast<int>(t);
  auto tenant_of_namespace = [&](const std::string& ns) {
    auto [it, added] = tenant_index.emplace(ns, static_cast<int>(tenants.size()));
    if (added) {
      Tenant t;
      t.id = TenantId(static_cast<int64_t>(tenants.size()) + 1);
      t.name = ns;
      tenants.push_back(std::move(t));
    }
    return it->second;
  };
  const int preemptor_tenant = tenant_of_namespace(search.preemptor.tenant);
  // 3. The running pods as the queue's jobs (by uid, for a deterministic order); what every tenant holds.
  std::map<std::string, const Booking*> sorted;
  for (const auto& [uid, b] : bookings_) {
    if (b.terms && !b.allocations.empty()) sorted.emplace(uid, &b);
  }
  std::vector<QueueJob> jobs;
  std::vector<int> tenant_of;
  std::vector<std::pair<const std::string*, const Booking*>> pods;
  const std::unordered_set<int> candidate_nodes(indices.begin(), indices.end());
  for (const auto& [uid, b] : sorted) {
    QueueJob j;
    j.id = JobId(static_cast<int64_t>(jobs.size()) + 1);
    j.priority = b->terms->priority;
    j.state = QueueJobState::kRunning;
    // A pod on another node cannot make room for one that goes on a single node; one already leaving is not
    // chosen twice.
    j.preemptible = b->terms->preemptible && candidate_nodes.count(b->index) != 0 && search.excluded.count(uid) == 0;
    j.last_start = b->started;
    auto count = search.suspensions_last_hour.find(b->queue_key);
    j.suspensions_last_hour = count == search.suspensions_last_hour.end() ? 0 : count->second;
    j.allocations = b->allocations;
    tenant_of.push_back(tenant_of_namespace(b->terms->tenant));
    jobs.push_back(std::move(j));
    pods.emplace_back(&uid, b);
  }
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].tenant = tenants[tenant_of[i]].id;
  TenantLedger ledger(tenants);
  for (size_t i = 0; i < jobs.size(); ++i) ledger.Add(tenant_of[i], jobs[i].priority, HeldBy(jobs[i]));
  QueueJob preemptor;
  preemptor.id = JobId(static_cast<int64_t>(jobs.size()) + 1);
  preemptor.tenant = tenants[preemptor_tenant].id;
  preemptor.priority = search.preemptor.priority;
  if (!demand.containers.empty()) preemptor.request = demand.containers.front().request;
  const ResourceAmounts wanted = PodAmounts(demand, largest_memory);
  if (std::string over = ledger.LimitReason(preemptor_tenant, search.preemptor.priority, wanted); !over.empty()) {
    plan.reason = over;  // a namespace at its limit waits; it does not suspend others' work to pass it
    return plan;
  }
  const bool within = ledger.WithinGuarantee(preemptor_tenant, wanted);
  // 4. The server's ranking and search.
  std::vector<int> running(jobs.size());
  for (size_t i = 0; i < running.size(); ++i) running[i] = static_cast<int>(i);
  const std::vector<int> order = SortRunningForPreemption(jobs, running, search.now);
  const std::vector<int> ranked =
      RankVictims(jobs, order, tenant_of, {}, preemptor, within, ledger, search.rules, search.now);
  if (ranked.empty()) {
    plan.reason = "no running pod may be suspended for it";
    return plan;
  }
  ASSIGN_OR_RETURN(VictimChoice choice, xpool::ChooseVictims(state_, jobs, ranked, preemptor, placer));
  if (!choice.found) {
    plan.reason = choice.reason;
    return plan;
  }
  plan.found = true;
  plan.node = name_of[choice.allocations.front().node];
  for (int v : choice.victims) {
    const Booking& b = *pods[v].second;
    const VictimVerdict why =
        JudgeVictim(preemptor, within, jobs[v], ledger.AboveGuarantee(tenant_of[v]), search.rules, search.now);
    plan.victims.push_back(
        {*pods[v].first, b.pod_key, b.node, b.queue_key, VictimText(jobs[v], why, preemptor, search.preemptor_key)});
  }
  return plan;
}

std::string KubeCluster::LimitReason(const std::string& pod_uid, const PodTerms& terms, const PodDemand& demand,
                                     const TenantConfig& tenants) const {
  const Tenant* configured = tenants.Find(terms.tenant);
  if (configured == nullptr) return "";
  std::lock_guard<std::mutex> lock(mu_);
  int64_t largest_memory = 0;
  for (const auto& [name, index] : index_) {
    for (const Device& d : state_.node(index).devices) largest_memory = std::max(largest_memory, d.memory_mib);
  }
  const std::vector<Tenant> one = {*configured};  // the ledger keeps pointers into it
  TenantLedger ledger(one);
  for (const auto& [uid, b] : bookings_) {
    if (uid == pod_uid || !b.terms || b.terms->tenant != terms.tenant) continue;
    ledger.Add(0, b.terms->priority, AmountsOf(b.allocations));
  }
  return ledger.LimitReason(0, terms.priority, PodAmounts(demand, largest_memory));
}

std::vector<PodInfo> KubeCluster::PendingPods() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PodInfo> out;
  out.reserve(pending_.size());
  for (const auto& [uid, pod] : pending_) out.push_back(pod);
  std::sort(out.begin(), out.end(), [](const PodInfo& a, const PodInfo& b) { return a.uid < b.uid; });
  return out;
}

std::vector<std::string> KubeCluster::NodeNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, index] : index_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

bool KubeCluster::Holds(const std::string& pod_uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  return bookings_.count(pod_uid) != 0;
}

}  // namespace xpool::k8s
