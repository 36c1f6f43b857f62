// PlanMigGeometry: the steps are listed in geometry_planner.h. Step 2 is greedy per demand unit; step 3 searches
// every geometry of one GPU (depth-first over its start slots: at most 8 slots, so a few thousand leaves).
#include "scheduler/mig/geometry_planner.h"

#include <algorithm>
#include <tuple>

namespace xpool {
namespace {

// An instance while planning.
struct Working {
  MigPlacement placement;
  bool busy = false;
  bool reused = false;   // serves demand as it is (step 1)
  bool created = false;  // made by this plan
  bool destroyed = false;
};

struct WorkingGpu {
  const MigModel* model = nullptr;
  std::vector<Working> instances;

  bool InUse() const {
    return std::any_of(instances.begin(), instances.end(), [](const Working& w) { return w.busy || w.reused; });
  }
  std::vector<MigPlacement> Live() const {
    std::vector<MigPlacement> live;
    for (const Working& w : instances) {
      if (!w.destroyed) live.push_back(w.placement);
    }
    return live;
  }
};

bool Overlaps(const MigModel& model, const MigPlacement& a, const MigPlacement& b) {
  const int a_end = a.start + model.profiles[static_cast<size_t>(a.profile)].memory_slices;
  const int b_end = b.start + model.profiles[static_cast<size_t>(b.profile)].memory_slices;
  return a.start < b_end && b.start < a_end;
}

// How many placements (any profile, any start) that fit next to `live` no longer fit once `added` is there: the
// fragmentation one more instance causes.
int PlacementsLost(const MigModel& model, const std::vector<MigPlacement>& live, const MigPlacement& added) {
  std::vector<MigPlacement> after = live;
  after.push_back(added);
  int lost = 0;
  for (size_t q = 0; q < model.profiles.size(); ++q) {
    for (int t : model.profiles[q].starts) {
      const int qi = static_cast<int>(q);
      if (MigPlacementFits(model, live, qi, t) && !MigPlacementFits(model, after, qi, t)) ++lost;
    }
  }
  return lost;
}

// Where one unit of a profile goes on a GPU in use: the cost orders candidates (fewest destroyed, then fewest
// placements lost, then GPU and start order).
struct Candidate {
  int gpu = -1;
  MigPlacement placement;
  std::vector<int> victims;  // indexes into WorkingGpu::instances
  std::tuple<size_t, int, int, int> cost;
};

// The best candidate for one unit of `demand` on GPU `g`, if better than `best`.
void ConsiderGpu(const WorkingGpu& gpu, int g, const MigDemand& demand, Candidate* best) {
  const MigModel& model = *gpu.model;
  const int p = MigDemandProfile(model, demand);
  if (p < 0) return;
  for (int s : model.profiles[static_cast<size_t>(p)].starts) {
    const MigPlacement want{p, s};
    std::vector<int> victims;
    bool blocked = false;
    for (size_t i = 0; i < gpu.instances.size() && !blocked; ++i) {
      const Working& w = gpu.instances[i];
      if (w.destroyed || !Overlaps(model, w.placement, want)) continue;
      if (w.busy || w.reused || w.created) blocked = true;
      victims.push_back(static_cast<int>(i));
    }
    if (blocked) continue;
    std::vector<MigPlacement> rest;
    for (size_t i = 0; i < gpu.instances.size(); ++i) {
      const Working& w = gpu.instances[i];
      if (!w.destroyed && std::find(victims.begin(), victims.end(), static_cast<int>(i)) == victims.end()) {
        rest.push_back(w.placement);
      }
    }
    if (!MigPlacementFits(model, rest, p, s)) continue;
    const auto cost = std::make_tuple(victims.size(), PlacementsLost(model, rest, want), g, s);
    if (best->gpu < 0 || cost < best->cost) *best = Candidate{g, want, std::move(victims), cost};
  }
}

// Step 1.
void Reuse(std::vector<WorkingGpu>& gpus, std::span<const MigDemand> demand, std::vector<int>& left, MigPlan* plan) {
  for (size_t g = 0; g < gpus.size(); ++g) {
    for (Working& w : gpus[g].instances) {
      if (w.busy) continue;
      for (size_t i = 0; i < demand.size(); ++i) {
        if (left[i] > 0 && MigDemandProfile(*gpus[g].model, demand[i]) == w.placement.profile) {
          --left[i];
          w.reused = true;
          plan->reuse.push_back({static_cast<int>(g), w.placement});
          break;
        }
      }
    }
  }
}

// Step 2.
void FillGpusInUse(std::vector<WorkingGpu>& gpus, std::span<const MigDemand> demand, std::vector<int>& left,
                   MigPlan* plan) {
  std::vector<bool> in_use(gpus.size());
  for (size_t g = 0; g < gpus.size(); ++g) in_use[g] = gpus[g].InUse();
  for (size_t i = 0; i < demand.size(); ++i) {
    while (left[i] > 0) {
      Candidate best;
      for (size_t g = 0; g < gpus.size(); ++g) {
        if (in_use[g]) ConsiderGpu(gpus[g], static_cast<int>(g), demand[i], &best);
      }
      if (best.gpu < 0) break;
      WorkingGpu& gpu = gpus[static_cast<size_t>(best.gpu)];
      for (int v : best.victims) {
        gpu.instances[static_cast<size_t>(v)].destroyed = true;
        plan->destroy.push_back({best.gpu, gpu.instances[static_cast<size_t>(v)].placement});
      }
      gpu.instances.push_back(Working{best.placement, false, false, true, false});
      plan->create.push_back({best.gpu, best.placement});
      --left[i];
    }
  }
}

// Step 3's search over one GPU's geometries: depth-first over the start slots, each slot kept empty, given to an
// existing instance that starts there, or to a demanded profile. Refers to its inputs, which outlive it; one
// Run() per object; not thread-safe.
class GeometrySearch {
 public:
  GeometrySearch(const WorkingGpu& gpu, std::span<const MigDemand> demand, const std::vector<int>& left)
      : gpu_(gpu), model_(*gpu.model), demand_(demand), left_(left), served_(demand.size(), 0) {
    for (const MigDemand& d : demand) profile_.push_back(MigDemandProfile(model_, d));
    keep_.assign(gpu.instances.size(), false);
  }

  void Run() { Visit(0); }

  bool Serves() const {
    return std::any_of(best_served_.begin(), best_served_.end(), [](int n) { return n > 0; });
  }
  const std::vector<int>& served() const { return best_served_; }
  const std::vector<bool>& keep() const { return best_keep_; }
  const std::vector<MigPlacement>& created() const { return best_created_; }

 private:
  void Visit(int slot) {
    if (slot >= model_.slots) {
      Evaluate();
      return;
    }
    // Keep an existing instance that starts here.
    for (size_t k = 0; k < gpu_.instances.size(); ++k) {
      const MigPlacement& e = gpu_.instances[k].placement;
      if (e.start != slot || !MigPlacementFits(model_, geometry_, e.profile, e.start)) continue;
      keep_[k] = true;
      geometry_.push_back(e);
      Visit(slot + model_.profiles[static_cast<size_t>(e.profile)].memory_slices);
      geometry_.pop_back();
      keep_[k] = false;
    }
    // Start a demanded profile here: a unit of the earliest entry of that profile with demand left.
    for (size_t i = 0; i < demand_.size(); ++i) {
      const int p = profile_[i];
      if (p < 0 || served_[i] >= left_[i] || FirstOpenEntry(p) != i) continue;
      if (!MigPlacementFits(model_, geometry_, p, slot)) continue;
      ++served_[i];
      geometry_.push_back({p, slot});
      created_.push_back({p, slot});
      Visit(slot + model_.profiles[static_cast<size_t>(p)].memory_slices);
      created_.pop_back();
      geometry_.pop_back();
      --served_[i];
    }
    Visit(slot + 1);  // leave the slot empty
  }

  size_t FirstOpenEntry(int p) const {
    for (size_t i = 0; i < demand_.size(); ++i) {
      if (profile_[i] == p && served_[i] < left_[i]) return i;
    }
    return demand_.size();
  }

  void Evaluate() {
    const int destroyed = static_cast<int>(std::count(keep_.begin(), keep_.end(), false));
    if (found_ && (served_ < best_served_ || (served_ == best_served_ && destroyed >= best_destroyed_))) return;
    found_ = true;
    best_served_ = served_;
    best_destroyed_ = destroyed;
    best_keep_ = keep_;
    best_created_ = created_;
  }

  const WorkingGpu& gpu_;
  const MigModel& model_;
  std::span<const MigDemand> demand_;
  const std::vector<int>& left_;
  std::vector<int> profile_;  // per demand entry: its profile on this model, -1 = none
  std::vector<int> served_;
  std::vector<bool> keep_;
  std::vector<MigPlacement> geometry_, created_;
  bool found_ = false;
  std::vector<int> best_served_;
  int best_destroyed_ = 0;
  std::vector<bool> best_keep_;
  std::vector<MigPlacement> best_created_;
};

// True when some demand left has a profile on the model.
bool HasDemandFor(const MigModel& model, std::span<const MigDemand> demand, const std::vector<int>& left) {
  for (size_t i = 0; i < demand.size(); ++i) {
    if (left[i] > 0 && MigDemandProfile(model, demand[i]) >= 0) return true;
  }
  return false;
}

// Step 3.
void RepartitionFreeGpus(std::vector<WorkingGpu>& gpus, std::span<const MigDemand> demand, std::vector<int>& left,
                         MigPlan* plan) {
  for (size_t g = 0; g < gpus.size(); ++g) {
    WorkingGpu& gpu = gpus[g];
    if (gpu.InUse() || !HasDemandFor(*gpu.model, demand, left)) continue;
    GeometrySearch search(gpu, demand, left);
    search.Run();
    if (!search.Serves()) continue;
    for (size_t k = 0; k < gpu.instances.size(); ++k) {
      if (gpu.instances[k].destroyed || search.keep()[k]) continue;
      gpu.instances[k].destroyed = true;
      plan->destroy.push_back({static_cast<int>(g), gpu.instances[k].placement});
    }
    for (const MigPlacement& c : search.created()) {
      gpu.instances.push_back(Working{c, false, false, true, false});
      plan->create.push_back({static_cast<int>(g), c});
    }
    for (size_t i = 0; i < left.size(); ++i) left[i] -= search.served()[i];
  }
}

Status CheckInput(std::span<const MigGpu> gpus, std::span<const MigDemand> demand) {
  for (size_t g = 0; g < gpus.size(); ++g) {
    const std::string at = "gpu " + std::to_string(g);
    if (gpus[g].model == nullptr) return InvalidArgumentError(at + " has no MIG model");
    std::vector<MigPlacement> geometry;
    for (const MigInstance& i : gpus[g].instances) geometry.push_back(i.placement);
    RETURN_IF_ERROR(ValidateMigGeometry(*gpus[g].model, geometry).WithContext(at));
  }
  for (const MigDemand& d : demand) {
    const std::string what =
        d.profile.empty() ? std::to_string(d.memory_mib) + " MiB, " + std::to_string(d.compute_milli) + " milli-devices"
                          : d.profile;
    if (d.count < 0 || d.memory_mib < 0 || d.compute_milli < 0) {
      return InvalidArgumentError("demand for " + what + " is negative");
    }
  }
  return Status::Ok();
}

}  // namespace

int MigDemandProfile(const MigModel& model, const MigDemand& demand) {
  if (!demand.profile.empty()) return MigProfileIndex(model, demand.profile);
  const MigProfile* p = MigProfileForRequest(model, demand.memory_mib, demand.compute_milli);
  return p == nullptr ? -1 : static_cast<int>(p - model.profiles.data());
}

Result<MigPlan> PlanMigGeometry(std::span<const MigGpu> gpus, std::span<const MigDemand> demand, bool fill_only) {
  RETURN_IF_ERROR(CheckInput(gpus, demand));
  std::vector<WorkingGpu> work(gpus.size());
  for (size_t g = 0; g < gpus.size(); ++g) {
    work[g].model = gpus[g].model;
    for (const MigInstance& i : gpus[g].instances) work[g].instances.push_back(Working{i.placement, i.busy});
  }
  std::vector<int> left;
  for (const MigDemand& d : demand) left.push_back(d.count);
  MigPlan plan;
  Reuse(work, demand, left, &plan);
  FillGpusInUse(work, demand, left, &plan);
  if (!fill_only) RepartitionFreeGpus(work, demand, left, &plan);
  for (size_t i = 0; i < demand.size(); ++i) {
    plan.served.push_back(demand[i].count - left[i]);
    if (left[i] == 0) continue;
    plan.unmet.push_back(demand[i]);
    plan.unmet.back().count = left[i];
  }
  return plan;
}

std::vector<MigInstance> InstancesAfter(const MigGpu& gpu, int gpu_index, const MigPlan& plan) {
  std::vector<MigInstance> out;
  std::vector<MigInstanceRef> destroy;
  for (const MigInstanceRef& d : plan.destroy) {
    if (d.gpu == gpu_index) destroy.push_back(d);
  }
  for (const MigInstance& i : gpu.instances) {
    auto it = std::find(destroy.begin(), destroy.end(), MigInstanceRef{gpu_index, i.placement});
    if (it != destroy.end()) {
      destroy.erase(it);
      continue;
    }
    out.push_back(i);
  }
  for (const MigInstanceRef& c : plan.create) {
    if (c.gpu == gpu_index) out.push_back(MigInstance{c.placement, false});
  }
  return out;
}

Status ValidateMigPlan(std::span<const MigGpu> gpus, const MigPlan& plan) {
  const int n = static_cast<int>(gpus.size());
  for (size_t k = 0; k < plan.destroy.size(); ++k) {
    const MigInstanceRef& d = plan.destroy[k];
    const std::string at = "destroy " + std::to_string(k);
    if (d.gpu < 0 || d.gpu >= n) return InvalidArgumentError(at + ": no gpu " + std::to_string(d.gpu));
    const auto& instances = gpus[static_cast<size_t>(d.gpu)].instances;
    auto it = std::find_if(instances.begin(), instances.end(),
                           [&](const MigInstance& i) { return i.placement == d.placement; });
    if (it == instances.end()) return InvalidArgumentError(at + ": no such instance");
    if (it->busy) return InvalidArgumentError(at + ": the instance is busy");
    if (std::find(plan.destroy.begin(), plan.destroy.begin() + static_cast<std::ptrdiff_t>(k), d) !=
        plan.destroy.begin() + static_cast<std::ptrdiff_t>(k)) {
      return InvalidArgumentError(at + ": destroyed twice");
    }
    if (std::find(plan.reuse.begin(), plan.reuse.end(), d) != plan.reuse.end()) {
      return InvalidArgumentError(at + ": the instance is also reused");
    }
  }
  for (const MigInstanceRef& c : plan.create) {
    if (c.gpu < 0 || c.gpu >= n) return InvalidArgumentError("create on no gpu " + std::to_string(c.gpu));
  }
  for (int g = 0; g < n; ++g) {
    std::vector<MigPlacement> geometry;
    for (const MigInstance& i : InstancesAfter(gpus[static_cast<size_t>(g)], g, plan)) geometry.push_back(i.placement);
    RETURN_IF_ERROR(ValidateMigGeometry(*gpus[static_cast<size_t>(g)].model, geometry)
                        .WithContext("gpu " + std::to_string(g) + " after the plan"));
  }
  return Status::Ok();
}

}  // namespace xpool
