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
//      fits), then each job that left by the JobPlacer too, anywhere it fits: first those that must find room,
//      then the `suspendable` ones, each most GPU first. One that finds no room gets a second hop: on another
//      node a movable job leaves so that it fits there, and that job finds room elsewhere (smallest job first; at
//      most 16 such pairs per search). Failing that, a suspendable job (one the rules let the waiting job preempt:
//      lower priority) is suspended instead — it waits in the queue keeping its place; any other gives the node
//      up (the state is restored).
//   4. The plan with the fewest suspensions wins, then the fewest moves, then the least GPU moved, then the
//      earliest node tried.
// Which running jobs are movable or suspendable is the caller's rule (see PassOptions::moves): movable jobs must
// run with one allocation, and suspendable ones are also movable. Pure; `state` is borrowed as scratch and left
// as found. Single-threaded.
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "model/cluster_state.h"
#include "scheduler/queue/job_placer.h"
#include "scheduler/queue/queue_types.h"

namespace xpool {

// Why the candidate nodes of a search gave no plan: counts over the nodes tried (for --explain and tests).
struct MoveMisses {
  int pinned = 0;          // the job still does not fit with every movable job gone (unmovable work holds room)
  int placer_refused = 0;  // it fits there, but the placer placed it nowhere (a policy veto)
  int no_room_whole = 0;   // a moved whole-GPU job found no room elsewhere
  int no_room_shared = 0;  // a moved fractional-GPU job found no room elsewhere
  int no_room_cpu = 0;     // a moved CPU-only job found no room elsewhere
  int total() const { return pinned + placer_refused + no_room_whole + no_room_shared + no_room_cpu; }
};

struct MovePlan {
  bool found = false;
  int node = -1;                                 // the node opened for the job
  std::vector<int> moved;                        // indices into jobs, in the order they were re-placed
  std::vector<int> suspended;                    // indices into jobs: suspendable jobs that found no room
  std::vector<std::vector<Allocation>> move_to;  // per moved job: where it restarts
  std::vector<Allocation> allocations;           // the waiting job's, valid once the moves are done
  int64_t moved_gpu_milli = 0;
  int candidates = 0;  // nodes tried
  MoveMisses misses;   // why the nodes tried gave no plan (those that did are not counted)
};

// `movable`: indices of running jobs the rules allow to move for `job` (each booked in `state` with exactly one
// allocation); `suspendable`: those of them that may be suspended for it when they find no room (step 3). Fails
// (Internal) only when a movable job's allocation is not booked in `state`.
Result<MovePlan> PlanMoves(ClusterState& state, const std::vector<QueueJob>& jobs, const std::vector<int>& movable,
                           const QueueJob& job, JobPlacer& placer, int max_nodes = 8,
                           const std::vector<int>& suspendable = {});

}  // namespace xpool
