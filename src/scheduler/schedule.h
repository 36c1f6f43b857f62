#pragma once
// Schedule: one replica's placement. Filter (capacity, vendor, device fit, health, cordon, exclusivity, NUMA)
// → score (a PlacementPolicy) → choose devices on the best node.
// Stateless function over a const view; thread-compatible (the policy and rng are the caller's).
#include <string>
#include <vector>

#include "model/cluster_state.h"
#include "model/task_request.h"
#include "scheduler/fit.h"
#include "scheduler/policy.h"

namespace xpool {

enum class OutcomeKind : uint8_t {
  kPlaced,     // allocation is valid for `view` as it is now
  kWait,       // fits the cluster's capacity, but not with what is free now
  kNeverFits,  // no node could take it even if it were empty (or the request is invalid)
};

struct ScheduleOutcome {
  OutcomeKind kind = OutcomeKind::kNeverFits;
  Allocation allocation;  // set when kPlaced
  // For kWait / kNeverFits: a reason a user can read, aggregated over nodes, e.g.
  // "9 nodes: not enough GPU memory on any device; 3 nodes: type T4 excluded".
  std::string reason;
};

ScheduleOutcome Schedule(const ClusterState& view, const TaskRequest& request, PlacementPolicy& policy, Rng& rng);

// The allocation for one replica on `node` using `devices` (grants from GrantFor).
Allocation MakeAllocation(const ClusterState& view, const TaskRequest& request, int node,
                          const std::vector<int>& devices);

// True when `devices` is a valid choice for the candidate: exactly request.device_count distinct devices, all
// among candidate.fitting_devices, on one NUMA node when request.numa_bind. Guards against faulty policies.
bool ValidDeviceChoice(const ClusterState& view, const TaskRequest& request, const NodeCandidate& candidate,
                       const std::vector<int>& devices);

// The not-placed outcome once no node can take the request now: *wait* when some node could take it if it were
// empty and healthy (reason: `now`, the tally of why each node refused), else *never fits* (reason: why each
// node refuses even when empty).
ScheduleOutcome NotPlacedOutcome(const ClusterState& view, const TaskRequest& request, const ReasonTally& now);

}  // namespace xpool
