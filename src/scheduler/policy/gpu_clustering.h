#pragma once
// GpuClusteringPolicy ("gpu-clustering"): the FGD paper's GPU clustering baseline — keep pods of one GPU class
// together. Classes, as the paper's simulator tags them: every GPU-sharing pod is one class, whole-GPU pods are
// classed by GPU count. Scores on the 0–100 scale of the paper's simulator:
//   1. The node's running GPU pods are all of this pod's class: 75 + 25·used/8000 (band 75–100);
//   2. they are a mix that includes it: 50 + …;  3. the node runs no GPU pod: 25 + …;
//   4. it runs only other shares: 0 + …  — "…" being 25 × (8000 − free GPU milli) / 8000, so within a band the
//      node with the least free GPU wins.
//   5. A request without devices scores 0 everywhere. Devices: least free fitting device first.
// Remembers the shares it placed per node (OnPlaced); it is not told of releases, so it suits the fill
// experiment, where pods never leave. Cacheable: the classes on a node are its NodeTag (one bit per class).
// Not thread-safe (one object per scheduling loop).
#include <cstdint>
#include <utility>
#include <vector>

#include "scheduler/policy.h"

namespace xpool {

class GpuClusteringPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "gpu-clustering"; }
  bool Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate, Rng& rng,
             int64_t* score, std::vector<int>* chosen_devices) override;
  void OnPlaced(const ClusterState& state, const TaskRequest& request, const Allocation& allocation) override;
  // Score reads the node's usage and the set of classes placed there (NodeTag), which changes only in OnPlaced.
  ScoringTraits traits() const override {
    return {.cacheable = true, .ignores_request_memory = true, .node_tags = true};
  }
  uint64_t NodeTag(const ClusterState& state, int node) const override;

 private:
  // Per node: (class tag, pods) for the GPU pods placed there; tag 0 = sharing, k = k whole GPUs.
  std::vector<std::vector<std::pair<int64_t, int>>> shares_;
};

}  // namespace xpool
