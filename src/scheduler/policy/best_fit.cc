#include "scheduler/policy/best_fit.h"

#include "scheduler/device_choice.h"

namespace xpool {

int64_t BestFitScore(int64_t free_cpu, int64_t free_gpu, int64_t req_cpu, int64_t req_gpu, int64_t max_cpu,
                     int64_t max_gpu) {
  // The one place the scheduler uses floating point: the reference computes this in float64 and truncates, and
  // reproducing its rounding (not the exact rational value) is what makes our ties match the paper's. The double
  // never leaves this function; inputs and output are integers. Same operation order as the Go code.
  double s = 0;
  if (max_cpu > 0) s += static_cast<double>(free_cpu - req_cpu) / static_cast<double>(max_cpu) * 0.5;
  if (max_gpu > 0) s += static_cast<double>(free_gpu - req_gpu) / static_cast<double>(max_gpu) * 0.5;
  s = (1.0 - s) * 100.0;
  return static_cast<int64_t>(s);
}

int64_t BestFitPolicy::NodeOrderKey(const ClusterState& state, int node) const {
  const Node& n = state.node(node);
  int64_t free_gpu = 0;
  for (int d = 0; d < static_cast<int>(n.devices.size()); ++d) free_gpu += state.FreeDeviceCompute(node, d);
  const ClusterTotals& t = state.totals();
  // Exact order of (free_cpu / max_cpu + free_gpu / max_gpu); a missing dimension weighs nothing, as in Score.
  const int64_t cpu_scale = t.max_node_device_compute_milli > 0 ? t.max_node_device_compute_milli : 1;
  const int64_t gpu_scale = t.max_node_cpu_milli > 0 ? t.max_node_cpu_milli : 1;
  return (t.max_node_cpu_milli > 0 ? state.FreeCpu(node) * cpu_scale : 0) +
         (t.max_node_device_compute_milli > 0 ? free_gpu * gpu_scale : 0);
}

bool BestFitPolicy::Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate,
                          Rng& /*rng*/, int64_t* score, std::vector<int>* chosen_devices) {
  const int node = candidate.node;
  const Node& n = state.node(node);
  if (!TakeDevicesByKey(
          state, request, candidate, [&](int d) { return state.FreeDeviceCompute(node, d); }, chosen_devices)) {
    return false;
  }
  int64_t free_gpu = 0;
  for (int d = 0; d < static_cast<int>(n.devices.size()); ++d) free_gpu += state.FreeDeviceCompute(node, d);
  // The pod's request, as the reference (not the grant, which for exclusive-mode devices is the whole device):
  // this keeps the score a function of NodeOrderKey for every request.
  const int64_t req_gpu = request.device_compute_milli * request.device_count;
  const ClusterTotals& t = state.totals();
  *score = BestFitScore(state.FreeCpu(node), free_gpu, request.cpu_milli, req_gpu, t.max_node_cpu_milli,
                        t.max_node_device_compute_milli);
  return true;
}

}  // namespace xpool
