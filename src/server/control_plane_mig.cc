// ControlPlane's dynamic MIG (docs/mig.md, "Dynamic geometry"): the MIG demand a pass leaves waiting is planned
// onto the GPUs of nodes whose agents let the server repartition them (around the instances in use, where the
// agent offers its GPUs by slot; idle nodes only otherwise), and sent to those agents.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "model/mig_label.h"
#include "scheduler/mig/geometry_planner.h"
#include "scheduler/mig/node_geometry.h"
#include "server/control_plane.h"

namespace xpool::server {
namespace {

// How long an agent has to apply a plan and register again before the node gets its old description back, and
// how long a node waits after a plan before it is planned for again (a plan its agent could not apply is not
// resent at once).
constexpr TimeMicros kMigPlanTimeout = 60 * kMicrosPerSecond;
constexpr TimeMicros kMigReplanDelay = 30 * kMicrosPerSecond;

// Each GPU's geometry once the plan is applied, instances by start (as the agent's label lists them).
std::vector<MigGpuGeometry> GeometriesAfter(const std::vector<MigGpuGeometry>& gpus, const std::vector<MigGpu>& planned,
                                            const MigPlan& plan) {
  std::vector<MigGpuGeometry> out;
  for (size_t g = 0; g < gpus.size(); ++g) {
    MigGpuGeometry& after = out.emplace_back(MigGpuGeometry{gpus[g].gpu, gpus[g].model, {}, gpus[g].first_device});
    for (const MigInstance& m : InstancesAfter(planned[g], static_cast<int>(g), plan)) {
      after.instances.push_back(m.placement);
    }
    std::sort(after.instances.begin(), after.instances.end(),
              [](const MigPlacement& a, const MigPlacement& b) { return a.start < b.start; });
  }
  return out;
}

// The node while a plan is out: nothing new is placed on the devices of the GPUs it changes (every device, unless
// the node's GPUs are offered by slots) until its agent registers the new ones; the instances in use stay in use.
Node CordonedFor(const Node& node, const std::vector<MigGpuGeometry>& changed, bool slotted) {
  Node out = node;
  for (const MigGpuGeometry& g : changed) {
    const int slots = static_cast<int>(MigStartSlots(*g.model).size());
    for (int d = g.first_device; slotted && d < g.first_device + slots; ++d) {
      out.devices[static_cast<size_t>(d)].cordoned = true;
    }
  }
  for (Device& d : out.devices) d.cordoned = d.cordoned || !slotted;
  return out;
}

// What a unit of demand asks for: its profile, or its memory and compute.
std::string DemandKey(const MigDemand& d) {
  if (!d.profile.empty()) return d.profile;
  return std::to_string(d.memory_mib) + " MiB/" + std::to_string(d.compute_milli) + " milli";
}

// The dynamic-MIG demand of a waiting job, or nullopt for none: a `mig:` request asks for its profile; a request by
// size (AsksDynamicMigBySize) asks, per device, for MigProfileForRequest's profile on each GPU's model.
std::optional<MigDemand> MigDemandOf(const TaskRequest& r, int replicas) {
  if (!r.mig_profile.empty()) return MigDemand{r.mig_profile, replicas};
  if (!AsksDynamicMigBySize(r)) return std::nullopt;
  return MigDemand{"", replicas * r.device_count, r.device_memory_mib, r.device_compute_milli};
}

// Takes `served` off `demand` (by DemandKey, first entries first).
void TakeServed(const std::map<std::string, int>& served, std::vector<MigDemand>* demand) {
  for (const auto& [key, count] : served) {
    int left = count;
    for (MigDemand& d : *demand) {
      if (DemandKey(d) != key || left == 0) continue;
      const int take = std::min(left, d.count);
      d.count -= take;
      left -= take;
    }
  }
  std::erase_if(*demand, [](const MigDemand& d) { return d.count == 0; });
}

}  // namespace

std::string ControlPlane::WantedMigGeometry(std::string_view node) const {
  if (mig_plans_out_.load(std::memory_order_relaxed) == 0) return "";
  std::lock_guard lock(mu_);
  auto it = mig_plans_.find(std::string(node));
  return it == mig_plans_.end() ? "" : it->second.geometry;
}

void ControlPlane::PlanMigGeometryLocked(const std::vector<JobId>& waiting, TimeMicros now) {
  // Plans whose agent did not come back in time: the node takes its old description again.
  for (auto it = mig_plans_.begin(); it != mig_plans_.end();) {
    const int index = state_.FindNode(it->first);
    if (now < it->second.expires && index >= 0) {
      ++it;
      continue;
    }
    if (index >= 0) {
      std::fprintf(
          stderr, "xpool server: node %s did not take MIG geometry %s within %llds; its old description is back\n",
          it->first.c_str(), it->second.geometry.c_str(), static_cast<long long>(kMigPlanTimeout / kMicrosPerSecond));
      CheckOk(state_.UpdateNode(index, std::move(it->second.before)), "the node's description before the plan");
    }
    it = mig_plans_.erase(it);
  }
  mig_plans_out_.store(mig_plans_.size(), std::memory_order_relaxed);
  // The waiting demand in queue order, less what the plans out already serve.
  std::vector<MigDemand> demand;
  for (JobId id : waiting) {
    auto q = queued_.find(id);
    if (q == queued_.end() || awaiting_.contains(id)) continue;
    std::optional<MigDemand> wanted = MigDemandOf(q->second.request, q->second.replicas);
    if (!wanted) continue;
    const std::string key = DemandKey(*wanted);
    auto same = std::find_if(demand.begin(), demand.end(), [&](const MigDemand& d) { return DemandKey(d) == key; });
    if (same == demand.end()) {
      demand.push_back(*wanted);
    } else {
      same->count += wanted->count;
    }
  }
  for (const auto& [name, plan] : mig_plans_) TakeServed(plan.served, &demand);
  // Slices beside the instances in use first, on every node; then GPUs nothing runs on, so a GPU stays whole
  // while demand fits elsewhere (the planner does the same among one node's GPUs).
  for (bool fill_only : {true, false}) {
    for (int i = 0; i < state_.node_count() && !demand.empty(); ++i) PlanNodeLocked(i, fill_only, now, &demand);
  }
}

void ControlPlane::PlanNodeLocked(int index, bool fill_only, TimeMicros now, std::vector<MigDemand>* demand) {
  const Node& node = state_.node(index);
  if (!node.ready || node.cordoned || mig_plans_.contains(node.name)) return;
  if (auto next = mig_next_plan_.find(node.name); next != mig_next_plan_.end() && now < next->second) return;
  std::optional<ReplannableMig> mig = ReplannableMigOf(node, state_.usage(index));
  if (!mig) return;
  auto plan = PlanMigGeometry(mig->gpus, *demand, fill_only);
  if (!plan.ok() || plan->create.empty()) return;
  const std::vector<MigGpuGeometry> after = GeometriesAfter(mig->geometries, mig->gpus, *plan);
  std::vector<MigGpuGeometry> changed;
  for (size_t g = 0; g < after.size(); ++g) {
    if (std::any_of(plan->create.begin(), plan->create.end(),
                    [&](const MigInstanceRef& r) { return r.gpu == static_cast<int>(g); })) {
      changed.push_back(after[g]);
    }
  }
  MigPlanOut out;
  out.label_after = FormatMigDynamicLabel(after);
  for (size_t d = 0; d < demand->size(); ++d) {
    if (plan->served[d] > 0) out.served[DemandKey((*demand)[d])] += plan->served[d];
  }
  out.geometry = FormatMigGeometryText(changed);
  out.before = node;
  out.expires = now + kMigPlanTimeout;
  std::fprintf(stderr, "xpool server: node %s: MIG geometry %s for the waiting demand\n", node.name.c_str(),
               out.geometry.c_str());
  CheckOk(state_.UpdateNode(index, CordonedFor(node, changed, mig->slotted)), "the same node with devices cordoned");
  *demand = plan->unmet;
  mig_next_plan_[out.before.name] = now + kMigReplanDelay;
  changes_.Bump(out.before.name);  // the agent hears at once
  mig_plans_.emplace(out.before.name, std::move(out));
  mig_plans_out_.store(mig_plans_.size(), std::memory_order_relaxed);
}

}  // namespace xpool::server
