#include "scheduler/policy/fgd.h"

#include <cmath>

#include "scheduler/policy/share_choice.h"

namespace xpool {

int64_t FragmentationDelta(NodeFree* node, const TaskRequest& request, const std::vector<int>& devices,
                           FragmentMeter* meter, int64_t before_weighted) {
  node->cpu_milli -= request.cpu_milli;
  for (int d : devices) node->gpu_milli[d] -= request.device_compute_milli;
  const int64_t after = meter->Weighted(*node);
  node->cpu_milli += request.cpu_milli;
  for (int d : devices) node->gpu_milli[d] += request.device_compute_milli;
  return before_weighted - after;
}

// 100 · sigmoid(Δ/1000) truncated, Δ = weighted_delta / total (milli-GPU). The published score is a float
// formula; computing it in double here is the one place these policies leave integers.
int64_t FgdSigmoidScore(int64_t weighted_delta, int64_t total) {
  if (total <= 0) return 50;
  const double delta = static_cast<double>(weighted_delta) / static_cast<double>(total);
  return static_cast<int64_t>(100.0 / (1.0 + std::exp(-delta / 1000.0)));
}

void FragmentationPolicyBase::OnArrival(const TaskRequest& request) {
  if (!learn_) return;
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
    next_rebuild_ = arrivals_ < rebuild_step_ ? arrivals_ * 2 : arrivals_ + rebuild_step_;
    target_ = TargetWorkload::FromCounts(seen_);
    meter_.Reset(&target_);
    ++target_rebuilds_;
    before_.clear();
  }
}

int64_t FragmentationPolicyBase::WeightedBefore(const ClusterState& state, int node) {
  if (static_cast<size_t>(node) >= before_.size()) before_.resize(node + 1);
  Before& b = before_[node];
  const size_t devices = scratch_.gpu_milli.size();
  bool same = b.valid && b.cpu_milli == scratch_.cpu_milli && b.gpu_milli == scratch_.gpu_milli;
  if (same && (b.models_identity != state.identity() || b.models_version != state.description_version())) {
    for (size_t i = 0; same && i < devices; ++i) same = b.gpu_model[i] == scratch_.gpu_model[i];
    if (same) {
      b.models_identity = state.identity();
      b.models_version = state.description_version();
    }
  }
  if (same) return b.weighted;
  b.valid = true;
  b.cpu_milli = scratch_.cpu_milli;
  b.gpu_milli = scratch_.gpu_milli;
  b.gpu_model.resize(devices);
  for (size_t i = 0; i < devices; ++i) b.gpu_model[i].assign(scratch_.gpu_model[i]);
  b.models_identity = state.identity();
  b.models_version = state.description_version();
  b.weighted = meter_.Weighted(scratch_);
  return b.weighted;
}

int64_t FragmentationPolicyBase::NodeWeightedBefore(const ClusterState& state, int node) {
  ReadNodeFree(state, node, &scratch_);
  return WeightedBefore(state, node);
}

bool FragmentationPolicyBase::Score(const ClusterState& state, const TaskRequest& request,
                                    const NodeCandidate& candidate, Rng& /*rng*/, int64_t* score,
                                    std::vector<int>* chosen_devices) {
  const int node = candidate.node;
  const bool sharing = IsSharingRequest(request);
  ReadNodeFree(state, node, &scratch_);
  const int64_t before = uses_weighted_before() ? WeightedBefore(state, node) : 0;
  if (sharing) {
    int best = -1;
    int64_t best_score = 0;
    std::vector<int>& one = one_device_;
    one.resize(1);
    const auto& fitting = candidate.fitting_devices;
    for (size_t i = 0; i < fitting.size(); ++i) {
      const int d = fitting[i];
      // A device with the same free compute and model as an earlier one scores the same and cannot win (see
      // PreferOnTie): skip it.
      bool seen = false;
      for (size_t j = 0; j < i && !seen; ++j) {
        seen = scratch_.gpu_milli[fitting[j]] == scratch_.gpu_milli[d] &&
               scratch_.gpu_model[fitting[j]] == scratch_.gpu_model[d];
      }
      if (seen) continue;
      one[0] = d;
      const int64_t s = Evaluate(state, request, node, one, before);
      if (best < 0 || s > best_score || (s == best_score && PreferOnTie(state, node, d, best))) {
        best = d;
        best_score = s;
      }
    }
    chosen_devices->assign(1, best);
    *score = best_score;
  } else {
    ChooseBestFitDevices(state, request, candidate, chosen_devices);
    *score = Evaluate(state, request, node, *chosen_devices, before);
  }
  return true;
}

int64_t FgdPolicy::Evaluate(const ClusterState& /*state*/, const TaskRequest& request, int /*node*/,
                            const std::vector<int>& devices, int64_t before) {
  return FgdSigmoidScore(FragmentationDelta(&scratch(), request, devices, &meter(), before), target().total_count());
}

int64_t FgdPolicy::ScoreBound(const ClusterState& state, int node) {
  for (const Device& d : state.node(node).devices) {
    if (d.compute_milli < kWholeDeviceMilli) return kNoScoreBound;
  }
  return FgdSigmoidScore(NodeWeightedBefore(state, node), target().total_count());
}

// Per shape m of the target, F_n(m) − F'_n(m) ≤ k · d: a shape that fitted neither before nor after loses the
// idle compute taken (k · d); one that fitted before only, at most that (F = unusable ≤ idle, F' = idle − k · d);
// one that fits both, at most d per chosen device that was already unusable to it (usable ones add g − d ≥ 0).
int64_t FgdPolicy::RequestScoreBound(const TaskRequest& request) const {
  const int64_t total = target().total_count();
  return FgdSigmoidScore(total * request.device_count * request.device_compute_milli, total);
}

}  // namespace xpool
