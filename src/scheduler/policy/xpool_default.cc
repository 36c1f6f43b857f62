#include "scheduler/policy/xpool_default.h"

#include <algorithm>
#include <cmath>

#include "scheduler/policy/fgd.h"
#include "scheduler/policy/share_choice.h"

namespace xpool {
namespace {
constexpr int64_t kTieBits = 20;  // the best-fit term lives below Δ in the low 20 bits
}  // namespace

void DefaultPolicy::OnArrival(const TaskRequest& request) {
  PodShape s = ShapeOf(request);
  bool found = false;
  for (WeightedShape& w : seen_) {
    if (w.shape == s) {
      ++w.count;
      found = true;
      break;
    }
  }
  if (!found) seen_.push_back({std::move(s), 1});
  ++arrivals_;
  if (arrivals_ >= next_rebuild_) {
    next_rebuild_ = arrivals_ < 256 ? arrivals_ * 2 : arrivals_ + 256;
    target_ = TargetWorkload::FromCounts(seen_);
    for (auto& per_shape : cache_) per_shape.clear();
  }
}

int64_t DefaultPolicy::Evaluate(const ClusterState& state, const TaskRequest& request, int node,
                                const std::vector<int>& devices, int64_t before) {
  // FGD's bounded score of Δ: ⌊100·sigmoid(Δ/1000)⌋ (Δ in milli-GPU of expected fragment).
  const int64_t weighted = FragmentationDelta(&scratch_, request, devices, target_, before);
  const int64_t total = std::max<int64_t>(1, target_.total_count());
  const double x = static_cast<double>(weighted) / static_cast<double>(total) / 1000.0;
  const int64_t delta = static_cast<int64_t>(100.0 / (1.0 + std::exp(-x)));
  // Best fit below Δ: the least free GPU left on the node, then the least free CPU (each scaled to 0..1023).
  const int64_t max_gpu = std::max<int64_t>(1, state.totals().max_node_device_compute_milli);
  const int64_t max_cpu = std::max<int64_t>(1, state.totals().max_node_cpu_milli);
  int64_t gpu_after = 0;
  for (int64_t g : scratch_.gpu_milli) gpu_after += g;
  gpu_after -= static_cast<int64_t>(devices.size()) * request.device_compute_milli;
  const int64_t cpu_after = scratch_.cpu_milli - request.cpu_milli;
  const int64_t gpu_term = std::clamp<int64_t>((max_gpu - gpu_after) * 1023 / max_gpu, 0, 1023);
  const int64_t cpu_term = std::clamp<int64_t>((max_cpu - cpu_after) * 1023 / max_cpu, 0, 1023);
  (void)node;
  return delta * (int64_t{1} << kTieBits) + gpu_term * 1024 + cpu_term;
}

bool DefaultPolicy::Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate,
                          Rng& /*rng*/, int64_t* score, std::vector<int>* chosen_devices) {
  const int node = candidate.node;
  const bool sharing = IsSharingRequest(request);
  const int shape = shapes_.Id(request);
  if (shape >= static_cast<int>(cache_.size())) cache_.resize(shape + 1);
  std::vector<Entry>& entries = cache_[shape];
  if (static_cast<int>(entries.size()) < state.node_count()) entries.resize(state.node_count());
  Entry& e = entries[node];
  if (e.generation == state.generation(node)) {
    *score = e.score;
    if (sharing) {
      chosen_devices->assign(1, e.device);
    } else {
      ChooseBestFitDevices(state, request, candidate, chosen_devices);
    }
    return true;
  }
  ReadNodeFree(state, node, &scratch_);
  const int64_t before = WeightedNodeFragment(scratch_, target_);
  if (sharing) {
    int best = -1;
    int64_t best_score = 0;
    std::vector<int> one(1);
    for (int d : candidate.fitting_devices) {
      one[0] = d;
      const int64_t s = Evaluate(state, request, node, one, before);
      // Equal Δ: the tighter device (less free) keeps the larger holes whole.
      if (best < 0 || s > best_score ||
          (s == best_score && state.FreeDeviceCompute(node, d) < state.FreeDeviceCompute(node, best))) {
        best = d;
        best_score = s;
      }
    }
    chosen_devices->assign(1, best);
    e.device = best;
    e.score = best_score;
  } else {
    ChooseBestFitDevices(state, request, candidate, chosen_devices);
    e.score = Evaluate(state, request, node, *chosen_devices, before);
  }
  e.generation = state.generation(node);
  *score = e.score;
  return true;
}

}  // namespace xpool
