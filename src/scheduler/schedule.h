#pragma once
// Schedule: one replica's placement. Filter (capacity, vendor, device fit, health, cordon, exclusivity, NUMA)
// → score (a PlacementPolicy) → choose devices on the best node.
// Stateless function over a const view; thread-compatible (the policy and rng are the caller's).
#include <string>

#include "model/cluster_state.h"
#include "model/task_request.h"
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

ScheduleOutcome Schedule(const ClusterState& view, const TaskRequest& request, PlacementPolicy& policy,
                         Rng& rng);

}  // namespace xpool
