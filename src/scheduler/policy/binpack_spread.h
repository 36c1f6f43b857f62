#pragma once
// Binpack / spread, with HAMi's meanings (HAMi pkg/scheduler/policy: node_policy.go, gpu_policy.go), as one
// policy class parameterised by a node mode and a device mode:
//
//   1. Node usage u(node) = used/total + used_cores/total_cores + used_memory/total_memory over the node's
//      devices (used = tasks holding a device, total = Σ max sharers), in parts per million, on the usage
//      *before* placement, as HAMi computes it. A node without devices uses CPU and memory fractions instead.
//   2. Node binpack prefers the most used node (score = u), node spread the least used (score = −u).
//      Ties: the first node.
//   3. Device usage v(device) = used/max_sharers + used_compute/compute + used_memory/memory, in ppm.
//      Device binpack takes the most used fitting devices first, device spread the least used; ties: lower index.
//      NUMA binding keeps the choice on one NUMA node.
//
// Stateless; thread-compatible; cacheable, and the node ranking does not depend on the request (NodeOrderKey).
#include <cstdint>
#include <string_view>
#include <vector>

#include "scheduler/policy.h"

namespace xpool {

enum class PackMode : uint8_t { kBinpack, kSpread };

// Node usage in ppm (step 1) and device usage in ppm (step 3). Exposed for tests and other policies.
int64_t NodeUsagePpm(const ClusterState& state, int node);
int64_t DeviceUsagePpm(const ClusterState& state, int node, int device);

class BinpackSpreadPolicy final : public PlacementPolicy {
 public:
  // `name` must outlive the policy (a registry literal).
  BinpackSpreadPolicy(std::string_view name, PackMode node_mode, PackMode device_mode)
      : name_(name), node_mode_(node_mode), device_mode_(device_mode) {}
  std::string_view name() const override { return name_; }
  bool Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate, Rng& rng,
             int64_t* score, std::vector<int>* chosen_devices) override;
  ScoringTraits traits() const override { return {.cacheable = true, .node_order_key = true}; }
  int64_t NodeOrderKey(const ClusterState& state, int node) const override;

 private:
  std::string_view name_;
  PackMode node_mode_;
  PackMode device_mode_;
};

}  // namespace xpool
