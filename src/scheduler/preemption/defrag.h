#pragma once
// Defragmentation by moves (issue 7, point 6): a waiting job that fits no node now may fit a node once a few
// running jobs there move to other nodes. A move is a suspension followed at once by a restart elsewhere: the
// moved job loses its checkpoint cost but never waits in the queue. This is what opens a whole 8-GPU node for
// an 8-GPU job while a few small jobs are spread over the 8-GPU nodes and GPUs sit idle on smaller nodes.
//
// PlanMoves, as implemented, for a single-replica job (gangs are left to preemption):
//   1. Candidate nodes: those that could take the job if empty and hold at least one movable job, least GPU
//      held first; at most `max_nodes` of them are tried.
//   2. On a candidate node, movable jobs leave one by one — most GPU first (fewest moves), then least work
//      lost (shortest time since the last start), then id — until the job fits there (FitNode). Then each one
//      that left is put back, smallest first, if the job still fits without its leaving.
//   3. The job is placed by the JobPlacer (the policy's own choice, which must be that node or another that
//      fits), then each moved job, most GPU first, by the JobPlacer too, anywhere it fits. If one finds no room
//      the node is given up.
//   4. The plan with the fewest moves wins, then the least GPU moved, then the earliest node tried.
// Which running jobs are movable is the caller's rule (see PassOptions::moves): movable jobs must run with one
// allocation. Pure; `state` is borrowed as scratch and left as found. Single-threaded.
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "model/cluster_state.h"
#include "scheduler/queue/job_placer.h"
#include "scheduler/queue/queue_types.h"

namespace xpool {

struct MovePlan {
  bool found = false;
  int node = -1;                                 // the node opened for the job
  std::vector<int> moved;                        // indices into jobs, in the order they were re-placed
  std::vector<std::vector<Allocation>> move_to;  // per moved job: where it restarts
  std::vector<Allocation> allocations;           // the waiting job's, valid once the moves are done
  int64_t moved_gpu_milli = 0;
};

// `movable`: indices of running jobs the rules allow to move for `job` (each booked in `state` with exactly one
// allocation). Fails (Internal) only when a movable job's allocation is not booked in `state`.
Result<MovePlan> PlanMoves(ClusterState& state, const std::vector<QueueJob>& jobs,
                           const std::vector<int>& movable, const QueueJob& job, JobPlacer& placer,
                           int max_nodes = 8);

}  // namespace xpool
