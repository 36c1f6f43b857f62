#include "scheduler/policy/dot_product.h"

#include <algorithm>

#include "scheduler/policy/share_choice.h"

namespace xpool {

bool DotProductPolicy::Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate,
                             Rng& /*rng*/, int64_t* score, std::vector<int>* chosen_devices) {
  const double max_cpu = static_cast<double>(std::max<int64_t>(1, state.totals().max_node_cpu_milli));
  const double max_gpu = static_cast<double>(std::max<int64_t>(1, state.totals().max_node_device_compute_milli));
  const int node = candidate.node;
  // Each vector normalised first, then multiplied, in the published order: the truncation below makes the
  // rounding of exact-looking values (75.0 vs 74.999…) decide ties.
  const double cpu_term = (static_cast<double>(state.FreeCpu(node)) / max_cpu) *
                          (static_cast<double>(request.cpu_milli) / max_cpu);
  const double request_gpu = static_cast<double>(request.device_count) *
                             static_cast<double>(request.device_compute_milli) / max_gpu;
  // The exact (float) score of one choice: device choices compare these; the node's score is its truncation.
  auto exact = [&](int64_t gpu_free) {
    return 1.0 - (cpu_term + static_cast<double>(gpu_free) / max_gpu * request_gpu) / 2.0;
  };
  auto to_score = [](double e) { return static_cast<int64_t>(100.0 * e); };
  // The idle fitting devices (nobody holds them) together form one choice.
  int64_t idle_compute = 0;
  int idle_count = 0;
  int first_idle = -1;
  const NodeUsage& usage = state.usage(node);
  for (int d : candidate.fitting_devices) {
    if (usage.devices[d].sharers != 0) continue;
    idle_compute += state.FreeDeviceCompute(node, d);
    if (idle_count++ == 0) first_idle = d;
  }
  if (IsSharingRequest(request)) {
    int best = -1;
    double best_exact = 0;
    for (int d : candidate.fitting_devices) {
      if (usage.devices[d].sharers == 0) continue;  // idle devices: the group below
      const double e = exact(state.FreeDeviceCompute(node, d));
      if (best < 0 || e > best_exact) {
        best = d;
        best_exact = e;
      }
    }
    if (first_idle >= 0) {
      const double e = exact(idle_compute);
      if (best < 0 || e > best_exact) {
        best = first_idle;
        best_exact = e;
      }
    }
    chosen_devices->assign(1, best);
    *score = to_score(best_exact);
    return best >= 0;
  }
  ChooseBestFitDevices(state, request, candidate, chosen_devices);
  // A CPU-only request has no GPU term; a whole-device request is scored against the idle group.
  *score = to_score(exact(request.wants_devices() ? idle_compute : 0));
  return true;
}

}  // namespace xpool
