#pragma once
// Topology-aware placement: choose the devices of a multi-device replica so they talk over the best links.
//
//   1. N ≥ 2 devices: among the node's fitting devices, the N-subset with the largest sum of pair link scores
//      (Node::links; NVLink pairs score high, PCIe low). Exhaustive when C(fitting, N) ≤ 4096 subsets, else
//      greedy (best pair, then the device adding the most). NUMA binding restricts subsets to one NUMA node.
//   2. N = 1: the fitting device least connected to the other idle devices, so well-connected groups stay free
//      for multi-device replicas (the NVIDIA device plugin's and Kubernetes topology manager's idea).
//   3. Node score: link sum × 10^7 + node binpack usage (ppm, see binpack_spread.h): best links first, then the
//      fuller node. Ties: the first node. Nodes without a link table score 0 links.
//
// Stateless; thread-compatible; cacheable.
#include <cstdint>
#include <string_view>
#include <vector>

#include "scheduler/policy.h"

namespace xpool {

// The best N-subset of `devices` by pair link sum (step 1) and its sum; false when no subset exists.
bool BestLinkedSubset(const Node& node, const std::vector<int>& devices, int n, bool numa_bind,
                      std::vector<int>* chosen, int64_t* link_sum);

class TopologyPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "topology"; }
  bool Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate, Rng& rng,
             int64_t* score, std::vector<int>* chosen_devices) override;
  ScoringTraits traits() const override { return {.cacheable = true}; }
};

}  // namespace xpool
