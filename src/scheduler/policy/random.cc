#include "scheduler/policy/random.h"

#include "scheduler/policy/share_choice.h"

namespace xpool {

bool RandomPolicy::Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate,
                         Rng& rng, int64_t* score, std::vector<int>* chosen_devices) {
  *score = 0;
  if (IsSharingRequest(request) && !candidate.fitting_devices.empty()) {
    std::uniform_int_distribution<size_t> pick(0, candidate.fitting_devices.size() - 1);
    chosen_devices->assign(1, candidate.fitting_devices[pick(rng)]);
    return true;
  }
  ChooseBestFitDevices(state, request, candidate, chosen_devices);
  return true;
}

}  // namespace xpool
