#pragma once
// A scheduling pass run on the control plane's own ClusterState rather than on a copy of it: the pass books and
// releases in that state, and UndoPass then takes back exactly what it left there, so the state again shows only
// what is booked for real; the control plane carries the decisions out afterwards. A copy per pass cost every
// node's description (names, labels, devices) and gave the scheduler a state it had never seen.
// Pure functions; thread-compatible (the caller holds the state's lock).
#include <vector>

#include "model/cluster_state.h"
#include "scheduler/queue/scheduling_pass.h"

namespace xpool::server::internal {

// Takes back what RunSchedulingPass left in `state` for `result` (its contract: placements and moves booked,
// victims released): placements and moves released first, then the victims' allocations booked again, so each
// step fits. `jobs` are the pass's jobs. Afterwards `state` holds what it held before the pass.
void UndoPass(ClusterState& state, const std::vector<QueueJob>& jobs, const PassResult& result);

// The first node whose usage differs between two states of the same nodes (per node cpu and memory, per device
// memory, compute, sharers, exclusivity and MPS user; descriptions and generations aside), or -1 when none does.
int FirstUsageDifference(const ClusterState& a, const ClusterState& b);

}  // namespace xpool::server::internal
