#pragma once
// JobPlacer: how a scheduling pass asks where a whole job (every replica: a gang) would go, without
// booking it.
//
// The pass and the victim search only ever *ask*; they book the answer in their own scratch
// ClusterState. The server's loop and the simulator hand in the same adapter over the scheduler's
// Schedule() and their PlacementPolicy, so both run the same placement; tests may hand in a small
// stub. An implementation may keep state between calls (a policy's caches), so one object serves
// one pass at a time: not thread-safe.
#include <string>
#include <vector>

#include "model/cluster_state.h"
#include "model/task_request.h"
#include "scheduler/schedule.h"

namespace xpool {

struct JobPlacement {
  OutcomeKind kind = OutcomeKind::kNeverFits;
  std::vector<Allocation> allocations;  // kPlaced: one per replica, valid together against the state asked
  std::string reason;                   // kWait / kNeverFits: readable
};

class JobPlacer {
 public:
  virtual ~JobPlacer() = default;
  // All `replicas` replicas of `request` together, or nothing (kWait / kNeverFits with the reason).
  // May change `state` while it works (a gang is tried replica by replica) but leaves its usage
  // exactly as found: nothing is booked.
  virtual JobPlacement Place(ClusterState& state, const TaskRequest& request, int replicas) = 0;
  // As Place, but a not-placed answer may come without its reason (victim searches only need yes or
  // no, and a reason can cost a scan of every node).
  virtual JobPlacement Probe(ClusterState& state, const TaskRequest& request, int replicas) {
    return Place(state, request, replicas);
  }
  // Told after the caller booked a placement in `state` (learning policies use it).
  virtual void OnBooked(const ClusterState& /*state*/, const TaskRequest& /*request*/,
                        const std::vector<Allocation>& /*allocations*/) {}
};

}  // namespace xpool
