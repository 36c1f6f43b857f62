#include "scheduler/policy/xpool_default.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "scheduler/policy/share_choice.h"

namespace xpool {
namespace {
constexpr int64_t kTieBits = 20;         // the best-fit term lives below the score in the low 20 bits
constexpr int64_t kMemoryRefresh = 256;  // placements between refreshes of the per-shape mean memory
// Step 2: the memory asked per GPU, relative to the cluster's, at which GPU stranded by memory counts in full.
constexpr double kMemoryPivot = 0.75;
}  // namespace

int64_t DefaultPolicy::MemoryStrandPercent(double memory_per_gpu_ratio) {
  const double x = memory_per_gpu_ratio / kMemoryPivot;
  return static_cast<int64_t>(100.0 * std::clamp(x * x, 0.5, 1.25));
}

int64_t DefaultPolicy::CpuStrandedGpu(const NodeFree& node, double cpu_per_gpu_milli) {
  if (cpu_per_gpu_milli <= 0) return 0;
  int64_t idle = 0;
  for (int64_t g : node.gpu_milli) idle += g;
  const double fed = static_cast<double>(std::max<int64_t>(0, node.cpu_milli)) / cpu_per_gpu_milli;
  return std::max<int64_t>(0, idle - static_cast<int64_t>(fed));
}

int64_t DefaultPolicy::ResourceFragment(const NodeFree& node, int64_t memory_mib, const TargetWorkload& target,
                                        const std::vector<int64_t>& shape_memory_mib, int64_t strand_percent) {
  int64_t idle = 0;
  for (int64_t g : node.gpu_milli) idle += g;
  int64_t sum = 0;
  const std::vector<WeightedShape>& shapes = target.shapes();
  for (size_t m = 0; m < shapes.size(); ++m) {
    const PodShape& shape = shapes[m].shape;
    int64_t fragment = idle;
    if (shape.gpu_count > 0 && shape.gpu_milli > 0 && node.cpu_milli >= shape.cpu_milli) {
      int usable = 0;
      int64_t pods_gpu = 0;  // m-pods the usable devices could host
      int64_t usable_milli = 0;
      int64_t unusable_milli = 0;
      std::string_view model;
      bool allowed = false;
      for (size_t i = 0; i < node.gpu_milli.size(); ++i) {
        const int64_t g = node.gpu_milli[i];
        if (i == 0 || node.gpu_model[i] != model) {
          model = node.gpu_model[i];
          allowed = ShapeAllowsModel(shape, model);
        }
        if (allowed && g >= shape.gpu_milli) {
          ++usable;
          usable_milli += g;
          if (shape.gpu_count == 1) pods_gpu += g / shape.gpu_milli;
        } else {
          unusable_milli += g;
        }
      }
      if (shape.gpu_count > 1) pods_gpu = usable / shape.gpu_count;
      if (usable >= shape.gpu_count) {
        int64_t pods_res = pods_gpu;  // m-pods the free memory can feed, at most pods_gpu
        const int64_t mem = m < shape_memory_mib.size() ? shape_memory_mib[m] : 0;
        if (mem > 0) pods_res = std::min(pods_res, memory_mib / mem);
        if (pods_res <= 0) {
          fragment = idle;
        } else {
          fragment = unusable_milli + usable_milli * (pods_gpu - pods_res) / pods_gpu * strand_percent / 100;
        }
      }
    }
    sum += shapes[m].count * fragment;
  }
  return sum;
}

void DefaultPolicy::OnPlaced(const ClusterState& state, const TaskRequest& request,
                             const Allocation& /*allocation*/) {
  if (state.totals().device_compute_capacity_milli != cluster_gpu_milli_ ||
      state.totals().cpu_capacity_milli != cluster_cpu_milli_) {  // the cluster's memory and CPU per GPU
    cluster_gpu_milli_ = state.totals().device_compute_capacity_milli;
    cluster_memory_mib_ = 0;
    for (int n = 0; n < state.node_count(); ++n) cluster_memory_mib_ += state.node(n).memory_mib;
    cluster_cpu_milli_ = state.totals().cpu_capacity_milli;
  }
  // The per-shape memory is refreshed here, not when next scored, so that it does not depend on which nodes a
  // caller happens to score (cached or not): a target rebuilt since the last score, then every kMemoryRefresh.
  const bool caught_up = placed_at_refresh_ >= 0 && RefreshShapeMemory();
  ++placed_;
  PodShape s = ShapeOf(request);
  bool found = false;
  for (ShapeMemory& m : memory_seen_) {
    if (m.shape == s) {
      m.sum_mib += request.memory_mib;
      ++m.count;
      found = true;
      break;
    }
  }
  if (!found) memory_seen_.push_back({std::move(s), request.memory_mib, 1});
  if ((placed_at_refresh_ >= 0 && RefreshShapeMemory()) || caught_up) {
    ++memory_refreshes_;
    ClearScoreCache();
  }
}

bool DefaultPolicy::RefreshShapeMemory() {
  const std::vector<WeightedShape>& shapes = target().shapes();
  const WeightedShape* key = shapes.empty() ? nullptr : shapes.data();
  const bool target_changed = key != target_key_ || target().total_count() != target_total_;
  if (!target_changed && placed_at_refresh_ >= 0 && placed_ - placed_at_refresh_ < kMemoryRefresh) return false;
  target_key_ = key;
  target_total_ = target().total_count();
  placed_at_refresh_ = placed_;
  std::vector<int64_t> memory(shapes.size(), 0);
  for (size_t m = 0; m < shapes.size(); ++m) {
    for (const ShapeMemory& seen : memory_seen_) {
      if (seen.shape == shapes[m].shape) {
        memory[m] = seen.sum_mib / seen.count;
        break;
      }
    }
  }
  // Step 2's weight: the target's memory per GPU (learned means) against the cluster's. Step 3's CPU per GPU.
  double asked_mib = 0, gpu = 0, cpu_all = 0, cpu_gpu_shapes = 0;
  for (size_t m = 0; m < shapes.size(); ++m) {
    const double count = static_cast<double>(shapes[m].count);
    const double shape_gpu = static_cast<double>(shapes[m].shape.gpu_count * shapes[m].shape.gpu_milli);
    asked_mib += count * static_cast<double>(memory[m]);
    gpu += count * shape_gpu;
    cpu_all += count * static_cast<double>(shapes[m].shape.cpu_milli);
    if (shape_gpu > 0) cpu_gpu_shapes += count * static_cast<double>(shapes[m].shape.cpu_milli);
  }
  // Step 3: the CPU binds when the target asks at least the cluster's CPU per GPU.
  const bool cpu_binds = gpu > 0 && cluster_gpu_milli_ > 0 &&
                         cpu_all / gpu >= static_cast<double>(cluster_cpu_milli_) /
                                              static_cast<double>(cluster_gpu_milli_);
  const double cpu_per_gpu = gpu > 0 ? (cpu_binds ? cpu_all : cpu_gpu_shapes) / gpu : 0.0;
  int64_t strand_percent = 100;
  if (gpu > 0 && cluster_gpu_milli_ > 0 && cluster_memory_mib_ > 0) {
    strand_percent = MemoryStrandPercent((asked_mib / gpu) / (static_cast<double>(cluster_memory_mib_) /
                                                               static_cast<double>(cluster_gpu_milli_)));
  }
  // Means (and a weight) that came out the same leave the measure, and so every cached score, as it was.
  if (!target_changed && memory == shape_memory_ && strand_percent == strand_percent_ &&
      cpu_binds == cpu_binds_ && cpu_per_gpu == cpu_per_gpu_) {
    return false;
  }
  shape_memory_ = std::move(memory);
  strand_percent_ = strand_percent;
  cpu_binds_ = cpu_binds;
  cpu_per_gpu_ = cpu_per_gpu;
  last_node_ = -1;  // the measure changed
  return true;
}

void DefaultPolicy::MemoryRange(const ClusterState& state, int node, const TaskRequest& request, int64_t* lo,
                                int64_t* hi) {
  RefreshShapeMemory();  // as Evaluate: the means the score was computed with
  const int64_t memory = state.FreeMemory(node);
  const int64_t left = memory - request.memory_mib;  // x: the memory left after placement
  *lo = *hi = request.memory_mib;
  if (left < 0) return;  // does not fit: only this memory
  // x enters step 2 only as P_res(m) = min(P_gpu(m), ⌊x / mem_m⌋) for the shapes with a known memory. P_gpu after
  // any placement is at most P_gpu on the free devices now (placing only takes compute away, and counting every
  // model only adds), `cap`: ⌊x / mem_m⌋ ≥ cap keeps P_res = P_gpu, else ⌊x / mem_m⌋ itself must stay.
  int64_t x_lo = 0;
  int64_t x_hi = std::numeric_limits<int64_t>::max();
  const std::vector<WeightedShape>& shapes = target().shapes();
  std::vector<int64_t>& gpu = range_gpu_;  // the node's free compute per usable device (as ReadNodeFree)
  gpu.clear();
  for (size_t m = 0; m < shapes.size() && m < shape_memory_.size(); ++m) {
    const PodShape& shape = shapes[m].shape;
    const int64_t mem = shape_memory_[m];
    if (mem <= 0 || shape.gpu_count <= 0 || shape.gpu_milli <= 0) continue;
    if (gpu.empty()) {
      const Node& n = state.node(node);
      for (size_t d = 0; d < n.devices.size(); ++d) {
        const Device& dev = n.devices[d];
        if (dev.healthy && !dev.cordoned && !state.usage(node).devices[d].exclusive) {
          gpu.push_back(state.FreeDeviceCompute(node, static_cast<int>(d)));
        }
      }
      if (gpu.empty()) break;  // no device: P_gpu = 0 for every shape, memory does not count
    }
    int64_t cap = 0;
    int usable = 0;
    for (int64_t g : gpu) {
      if (g < shape.gpu_milli) continue;
      ++usable;
      cap += g / shape.gpu_milli;
    }
    if (shape.gpu_count > 1) cap = usable / shape.gpu_count;
    const int64_t q = left / mem;
    if (q >= cap) {
      x_lo = std::max(x_lo, cap * mem);
    } else {
      x_lo = std::max(x_lo, q * mem);
      x_hi = std::min(x_hi, (q + 1) * mem - 1);
    }
  }
  *lo = x_hi >= memory ? 0 : memory - x_hi;
  *hi = memory - x_lo;
}

int64_t DefaultPolicy::Evaluate(const ClusterState& state, const TaskRequest& request, int node,
                                const std::vector<int>& devices, int64_t /*before*/) {
  RefreshShapeMemory();
  NodeFree& free = scratch();
  const int64_t memory = state.FreeMemory(node);
  if (node != last_node_ || state.generation(node) != last_generation_ || state.identity() != last_identity_) {
    last_node_ = node;
    last_generation_ = state.generation(node);
    last_identity_ = state.identity();
    last_before_ = ResourceFragment(free, memory, target(), shape_memory_, strand_percent_);
  }
  // Step 3: GPU the node's CPU cannot feed, counted for every target shape (so × Σcount); a CPU-only request
  // is scored on it only when the CPU binds.
  const bool count_cpu = cpu_per_gpu_ > 0 && (cpu_binds_ || request.device_count > 0);
  const int64_t total = target().total_count();
  const int64_t cpu_before = count_cpu ? total * CpuStrandedGpu(free, cpu_per_gpu_) : 0;
  free.cpu_milli -= request.cpu_milli;
  for (int d : devices) free.gpu_milli[d] -= request.device_compute_milli;
  const int64_t after =
      ResourceFragment(free, memory - request.memory_mib, target(), shape_memory_, strand_percent_) +
      (count_cpu ? total * CpuStrandedGpu(free, cpu_per_gpu_) : 0);
  free.cpu_milli += request.cpu_milli;
  for (int d : devices) free.gpu_milli[d] += request.device_compute_milli;
  const int64_t max_gpu = std::max<int64_t>(1, state.totals().max_node_device_compute_milli);
  const int64_t max_cpu = std::max<int64_t>(1, state.totals().max_node_cpu_milli);
  int64_t gpu_after = 0;
  for (int64_t g : free.gpu_milli) gpu_after += g;
  gpu_after -= static_cast<int64_t>(devices.size()) * request.device_compute_milli;
  const int64_t cpu_after = free.cpu_milli - request.cpu_milli;

  // Step 4 + 5 (Δ and score): FGD's bounded score of Δ.
  const int64_t score = FgdSigmoidScore(last_before_ + cpu_before - after, total);

  // Ties below the score: the least free GPU left on the node, then the least free CPU (each 0..1023).
  const int64_t gpu_term = std::clamp<int64_t>((max_gpu - gpu_after) * 1023 / max_gpu, 0, 1023);
  const int64_t cpu_term = std::clamp<int64_t>((max_cpu - cpu_after) * 1023 / max_cpu, 0, 1023);
  return score * (int64_t{1} << kTieBits) + gpu_term * 1024 + cpu_term;
}

}  // namespace xpool
