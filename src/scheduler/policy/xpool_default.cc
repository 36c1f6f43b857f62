#include "scheduler/policy/xpool_default.h"

#include <algorithm>

#include "scheduler/policy/fgd.h"
#include "scheduler/policy/share_choice.h"

namespace xpool {
namespace {
constexpr int64_t kTieBits = 20;  // the best-fit term lives below Δ in the low 20 bits
}  // namespace

int64_t DefaultPolicy::Evaluate(const ClusterState& state, const TaskRequest& request, int node,
                                const std::vector<int>& devices, int64_t before) {
  // FGD's bounded score of Δ: ⌊100·sigmoid(Δ/1000)⌋ (Δ in milli-GPU of expected fragment).
  const int64_t weighted = FragmentationDelta(&scratch(), request, devices, target(), before);
  const int64_t delta = FgdSigmoidScore(weighted, std::max<int64_t>(1, target().total_count()));
  // Best fit below Δ: the least free GPU left on the node, then the least free CPU (each scaled to 0..1023).
  const int64_t max_gpu = std::max<int64_t>(1, state.totals().max_node_device_compute_milli);
  const int64_t max_cpu = std::max<int64_t>(1, state.totals().max_node_cpu_milli);
  int64_t gpu_after = 0;
  for (int64_t g : scratch().gpu_milli) gpu_after += g;
  gpu_after -= static_cast<int64_t>(devices.size()) * request.device_compute_milli;
  const int64_t cpu_after = scratch().cpu_milli - request.cpu_milli;
  const int64_t gpu_term = std::clamp<int64_t>((max_gpu - gpu_after) * 1023 / max_gpu, 0, 1023);
  const int64_t cpu_term = std::clamp<int64_t>((max_cpu - cpu_after) * 1023 / max_cpu, 0, 1023);
  (void)node;
  return delta * (int64_t{1} << kTieBits) + gpu_term * 1024 + cpu_term;
}

}  // namespace xpool
