#include "scheduler/policy/gpu_clustering.h"

#include <algorithm>

#include "scheduler/policy/share_choice.h"

namespace xpool {
namespace {
constexpr int64_t kMaxSpecGpu = 8000;  // the paper simulator's largest node: 8 GPUs

// The paper simulator's affinity tag: every GPU-sharing pod is one class ("share"), whole-GPU pods are classed by
// their GPU count ("1-gpu", "2-gpu", …).
int64_t AffinityTag(const TaskRequest& r) {
  return (r.device_count == 1 && r.device_compute_milli < 1000) ? 0 : r.device_count;
}
}  // namespace

bool GpuClusteringPolicy::Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate,
                                Rng& /*rng*/, int64_t* score, std::vector<int>* chosen_devices) {
  ChooseBestFitDevices(state, request, candidate, chosen_devices);
  if (request.device_count <= 0) {
    *score = 0;
    return true;
  }
  const int node = candidate.node;
  const int64_t within = 25 * (kMaxSpecGpu - NodeFreeCompute(state, node)) / kMaxSpecGpu;
  static const std::vector<std::pair<int64_t, int>> kNone;
  const auto& shares = node < static_cast<int>(shares_.size()) ? shares_[node] : kNone;
  bool has_same = false;
  for (const auto& [share, pods] : shares) has_same |= (share == AffinityTag(request) && pods > 0);
  int64_t band = 0;
  if (has_same) {
    band = shares.size() == 1 ? 75 : 50;
  } else if (shares.empty()) {
    band = 25;
  }
  *score = band + within;
  return true;
}

uint64_t GpuClusteringPolicy::NodeTag(const ClusterState& /*state*/, int node) const {
  if (node >= static_cast<int>(shares_.size())) return 0;
  uint64_t tag = 0;
  for (const auto& [share, pods] : shares_[node]) {
    if (pods > 0) tag |= uint64_t{1} << std::min<int64_t>(share, 63);
  }
  return tag;
}

void GpuClusteringPolicy::OnPlaced(const ClusterState& state, const TaskRequest& request,
                                   const Allocation& allocation) {
  if (request.device_count <= 0 || allocation.node < 0) return;
  if (static_cast<int>(shares_.size()) < state.node_count()) shares_.resize(state.node_count());
  auto& shares = shares_[allocation.node];
  for (auto& [share, pods] : shares) {
    if (share == AffinityTag(request)) {
      ++pods;
      return;
    }
  }
  shares.emplace_back(AffinityTag(request), 1);
}

}  // namespace xpool
