#include "sim/mig_fill.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>

#include "scheduler/fit.h"
#include "scheduler/mig/geometry_planner.h"
#include "sim/internal/fill_points.h"

namespace xpool::sim {
namespace {

constexpr int kMaxProfiles = 32;

// One GPU in MIG mode during a run: its instances and, per profile of the model, whether one more fits.
struct GpuSlices {
  std::vector<MigPlacement> geometry;
  int free_compute = 0;
  std::array<bool, kMaxProfiles> fits{};
};

struct NodeSlices {
  int64_t cpu_free = 0;
  int64_t memory_free = 0;
  std::vector<GpuSlices> gpus;
};

void RefreshFits(const MigModel& model, GpuSlices* gpu) {
  for (size_t p = 0; p < model.profiles.size(); ++p) {
    bool fits = false;
    for (int start : model.profiles[p].starts) {
      fits = fits || MigPlacementFits(model, gpu->geometry, static_cast<int>(p), start);
    }
    gpu->fits[p] = fits;
  }
}

// The GPUs of `node` a pod would take (`count` of them where `profile` fits): partitioned GPUs before empty ones,
// fewest free compute slices left first. Empty when fewer than `count` fit. *key: (empty GPUs taken, free compute
// slices left on the chosen GPUs), smaller is better.
std::vector<int> ChooseGpus(const MigModel& model, const NodeSlices& node, int profile, int count,
                            std::pair<int, int>* key) {
  std::vector<std::tuple<bool, int, int>> fitting;  // (empty, free compute after, gpu)
  const int compute = model.profiles[static_cast<size_t>(profile)].compute_slices;
  for (size_t g = 0; g < node.gpus.size(); ++g) {
    const GpuSlices& gpu = node.gpus[g];
    if (gpu.fits[static_cast<size_t>(profile)]) {
      fitting.emplace_back(gpu.geometry.empty(), gpu.free_compute - compute, static_cast<int>(g));
    }
  }
  if (static_cast<int>(fitting.size()) < count) return {};
  std::partial_sort(fitting.begin(), fitting.begin() + count, fitting.end());
  std::vector<int> chosen;
  *key = {0, 0};
  for (int i = 0; i < count; ++i) {
    const auto& [empty, free_after, g] = fitting[static_cast<size_t>(i)];
    key->first += empty ? 1 : 0;
    key->second += free_after;
    chosen.push_back(g);
  }
  return chosen;
}

// Creates one instance of `profile` on `gpu` where the geometry planner puts it.
Status CreateInstance(const MigModel& model, int profile, GpuSlices* gpu) {
  MigGpu planned{&model, {}};
  for (const MigPlacement& p : gpu->geometry) planned.instances.push_back({p, /*busy=*/true});
  const MigDemand demand{std::string(model.profiles[static_cast<size_t>(profile)].name), 1};
  ASSIGN_OR_RETURN(MigPlan plan, PlanMigGeometry(std::span<const MigGpu>(&planned, 1), {&demand, 1}));
  if (plan.create.size() != 1 || !plan.unmet.empty()) {
    return InternalError("the planner found no room for a profile the GPU's fit table allows");
  }
  gpu->geometry.push_back(plan.create.front().placement);
  gpu->free_compute -= model.profiles[static_cast<size_t>(profile)].compute_slices;
  RefreshFits(model, gpu);
  return Status::Ok();
}

// The run's state: every node's free CPU and memory and its GPUs' geometries.
class MigCluster {
 public:
  MigCluster(const ClusterState& state, const MigModel& model) : state_(state), model_(model) {
    GpuSlices empty;
    empty.free_compute = model.compute_slices;
    RefreshFits(model, &empty);
    for (int n = 0; n < state.node_count(); ++n) {
      const Node& node = state.node(n);
      nodes_.push_back({node.cpu_milli, node.memory_mib, std::vector<GpuSlices>(node.devices.size(), empty)});
    }
  }

  // Places one pod; the node it went to, -1 when it fits nowhere. *held_milli: the compute its instances hold.
  Result<int> Place(const TracePod& pod, int64_t* held_milli) {
    *held_milli = 0;
    if (pod.num_gpu == 0) return PlaceCpuOnly(pod);
    const MigProfile* profile = SmallestCoveringMigProfile(model_, 0, pod.gpu_milli);
    if (profile == nullptr) return -1;
    const int p = MigProfileIndex(model_, profile->name);
    TaskRequest selectors;  // the pod's GPU selectors only, matched against the node list's model
    selectors.type_include = pod.gpu_spec;
    int best = -1;
    std::pair<int, int> best_key;
    std::vector<int> best_gpus;
    for (int n = 0; n < static_cast<int>(nodes_.size()); ++n) {
      const NodeSlices& node = nodes_[static_cast<size_t>(n)];
      if (node.cpu_free < pod.cpu_milli || node.memory_free < pod.memory_mib) continue;
      if (static_cast<int>(node.gpus.size()) < pod.num_gpu) continue;
      if (FitDevice(state_.node(n).devices.front(), nullptr, selectors) != FitReason::kFits) continue;
      std::pair<int, int> key;
      std::vector<int> gpus = ChooseGpus(model_, node, p, pod.num_gpu, &key);
      if (gpus.empty() || (best >= 0 && key >= best_key)) continue;
      best = n;
      best_key = key;
      best_gpus = std::move(gpus);
    }
    if (best < 0) return -1;
    NodeSlices& node = nodes_[static_cast<size_t>(best)];
    node.cpu_free -= pod.cpu_milli;
    node.memory_free -= pod.memory_mib;
    for (int g : best_gpus) RETURN_IF_ERROR(CreateInstance(model_, p, &node.gpus[static_cast<size_t>(g)]));
    *held_milli = MigComputeMilli(model_, *profile) * pod.num_gpu;
    return best;
  }

 private:
  int PlaceCpuOnly(const TracePod& pod) {
    for (size_t n = 0; n < nodes_.size(); ++n) {
      NodeSlices& node = nodes_[n];
      if (node.cpu_free < pod.cpu_milli || node.memory_free < pod.memory_mib) continue;
      node.cpu_free -= pod.cpu_milli;
      node.memory_free -= pod.memory_mib;
      return static_cast<int>(n);
    }
    return -1;
  }

  const ClusterState& state_;
  const MigModel& model_;
  std::vector<NodeSlices> nodes_;
};

}  // namespace

bool IsMigFillPolicy(std::string_view policy) { return policy == "mig" || policy.starts_with("mig:"); }

Result<const MigModel*> MigFillModel(std::string_view policy) {
  if (!IsMigFillPolicy(policy)) return InvalidArgumentError("\"" + std::string(policy) + "\" is not mig[:MODEL]");
  const std::string_view name = policy == "mig" ? std::string_view("A100-80GB") : policy.substr(4);
  const MigModel* model = MigModelNamed(name);
  if (model == nullptr) {
    std::string known;
    for (const MigModel& m : AllMigModels()) known += (known.empty() ? "" : ", ") + std::string(m.name);
    return InvalidArgumentError("policy \"" + std::string(policy) + "\": no MIG table for \"" + std::string(name) +
                                "\" (one of " + known + ")");
  }
  if (model->profiles.size() > static_cast<size_t>(kMaxProfiles)) return InternalError("too many MIG profiles");
  return model;
}

Result<FillCurve> RunMigFill(const ClusterState& cluster, const std::vector<TracePod>& pods,
                             const FillOptions& options) {
  ASSIGN_OR_RETURN(const MigModel* model, MigFillModel(options.policy));
  if (options.tune_percent <= 0 || options.tune_percent > 1000) {
    return InvalidArgumentError("tune must be between 1 and 1000 percent");
  }
  const ClusterState state = OrderNodes(cluster, options.node_order, options.seed);
  FillCurve curve;
  curve.gpu_capacity_milli = state.totals().device_compute_capacity_milli;
  if (curve.gpu_capacity_milli <= 0) return InvalidArgumentError("the cluster has no GPU");
  const std::vector<const TracePod*> sample =
      SamplePods(pods, curve.gpu_capacity_milli, options.tune_percent, options.seed, options.composition);
  if (sample.empty()) return InvalidArgumentError("the workload has no pod asking for a GPU");

  MigCluster slices(state, *model);
  const int points = options.tune_percent + 1;
  const double capacity = static_cast<double>(curve.gpu_capacity_milli);
  int64_t allocated = 0, held = 0;
  auto record = [&] {
    const double unasked = capacity - static_cast<double>(allocated);  // idle, or held by rounding up
    const double rounded = static_cast<double>(held - allocated);
    curve.allocation_pct.push_back(100.0 * static_cast<double>(allocated) / capacity);
    curve.frag_pct.push_back(100.0 * rounded / capacity);
    curve.frag_ratio_pct.push_back(unasked > 0 ? 100.0 * rounded / unasked : 0.0);
  };
  record();  // arrived 0 %
  int64_t arrived_milli = 0;
  for (const TracePod* pod : sample) {
    const int64_t arrived_after = arrived_milli + PodGpuMilli(*pod);
    internal::RecordPassedPoints(curve, points, arrived_after, record);
    arrived_milli = arrived_after;
    int64_t pod_held = 0;
    ASSIGN_OR_RETURN(const int node, slices.Place(*pod, &pod_held));
    ++curve.pods_arrived;
    if (node >= 0) {
      ++curve.pods_placed;
      allocated += PodGpuMilli(*pod);
      held += pod_held;
    } else {
      ++curve.pods_skipped;
    }
    if (options.record_placements) {  // the node only: a MIG instance is not a device of the node list
      curve.placements.push_back({.pod = pod->name, .node = node >= 0 ? state.node(node).name : "", .devices = {}});
    }
  }
  while (static_cast<int>(curve.allocation_pct.size()) < points) record();
  return curve;
}

}  // namespace xpool::sim
