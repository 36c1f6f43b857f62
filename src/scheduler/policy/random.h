#pragma once
// RandomPolicy ("random"): the FGD paper's Random baseline.
//   1. Every feasible node scores the same (0); Schedule() breaks the tie uniformly at random with the caller's
//      seeded Rng, so the pick is a uniformly random feasible node.
//   2. A GPU-sharing request takes a uniformly random fitting device; whole-device requests take the first
//      fitting devices.
// Cacheable: a Scheduler draws once for the node among the feasible ones, then once for the device.
// Stateless; thread-compatible.
#include "scheduler/policy.h"

namespace xpool {

class RandomPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "random"; }
  bool Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate, Rng& rng,
             int64_t* score, std::vector<int>* chosen_devices) override;
  TieBreak tie_break() const override { return TieBreak::kRandom; }
  // The score (0) depends on nothing; only the device choice draws, and a Scheduler asks for it on the winner.
  ScoringTraits traits() const override {
    return {.cacheable = true, .ignores_request_memory = true, .uniform_score = true};
  }
};

}  // namespace xpool
