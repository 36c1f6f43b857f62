#pragma once
// RunSchedulingPass: one pass of the time-sharing scheduler over every waiting job — queue order,
// tenant quotas, placement (all replicas or none) and preemption decisions — as a pure function of
// plain structs, an injected `now` and a JobPlacer. The server's scheduling loop and the
// simulator's replay both call it (issue 7).
//
// For each waiting job in DrfQueue order (see queue_order.h):
//   1. limits: if the job would take its tenant past a limit (or a per-priority limit) it waits
//   with the
//      reason, e.g. "tenant a at its gpu limit (8000/8000 milli)";
//   2. placement: the JobPlacer is asked for all replicas at once; placed → booked in `state` and
//   the ledger;
//      never fits → said so;
//   3. preemption: when it waits and a lower-priority job, or (its tenant staying within its
//   guarantee) an
//      equal-priority job of a tenant above its guarantee, could make room, ChooseVictims picks the
//      fewest victims by the rules in preemption/victim_selection.h; the victims' allocations are
//      released and the job's booked in `state`; both sides get a reason.
//   Before 3, with PassOptions::moves on: defragmentation — if moving a few running jobs to other nodes opens a
//   node for the job (PlanMoves), they move and the job is booked there: a kPreempt decision whose victims are
//   the moved jobs, each with a SuspendDecision carrying `move_to` (where it restarts at once). With preemption
//   on, a lower-priority job on that node that finds no room elsewhere is suspended instead (a victim without
//   `move_to`), so moves and preemption combine on one node. A caller that
//   cannot restart at once may treat it as a plain suspension: the job returns to the queue keeping its place.
//   Only while no job of higher priority was left waiting in this pass. Move searches have their own budget per pass
//   (PassOptions::max_move_searches); a failed one is not repeated for the same shape, nor (moves of any priority) for
//   a plain request at least as large, until a suspension.
// Within a pass the state only fills up except where victims leave, so a request shape that did not
// fit stays unfit until a suspension frees room, and then only if it fits one of the nodes that
// suspension touched (checked with FitNode): such answers are remembered per shape, which keeps a
// pass over 100,000 jobs cheap. Victim searches are bounded per pass
// (PassOptions::max_victim_searches), spent from the head of the queue. Suspended victims return to
// the queue in a later pass (the caller changes their state).
//
// Not thread-safe; pure (no I/O, no clock, no globals); deterministic for a deterministic
// JobPlacer.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "model/cluster_state.h"
#include "scheduler/preemption/victim_selection.h"
#include "scheduler/queue/job_placer.h"
#include "scheduler/queue/queue_types.h"
#include "scheduler/queue/text_arena.h"

namespace xpool {

// Which running jobs a waiting job may have moved (suspended and restarted at once on another node, see
// preemption/defrag.h) when it fits nowhere: none, those of lower priority, or any (a move never makes the moved
// job wait; it loses its checkpoint cost). min-runtime and the suspension cap apply to moves as to victims.
enum class MoveRule : uint8_t { kOff, kLowerPriority, kAnyPriority };

struct PassOptions {
  bool preemption = true;
  MoveRule moves = MoveRule::kOff;
  int max_move_nodes = 8;     // candidate nodes tried per move search
  int max_move_searches = 8;  // move searches per pass, spent from the head of the queue
  PreemptionRules rules;
  // Victim searches per pass, spent on the head of the queue (highest priority first); entitled
  // jobs after that wait for the next pass ("preemption deferred"). Bounds a pass's cost when a
  // large backlog outranks much running work; each search costs a few placements.
  int max_victim_searches = 32;
};

enum class DecisionKind : uint8_t {
  kPlace,      // runs now at `allocations`
  kPreempt,    // runs at `allocations` once `victims` are suspended
  kWait,       // stays in the queue: `reason` (a limit, or no room and no preemption allowed / possible)
  kNeverFits,  // no node could ever take it as asked
  kRejected,   // bad input: unknown tenant, priority out of range, invalid request
};
std::string_view DecisionKindName(DecisionKind kind);

struct JobDecision {
  int job = -1;  // index into the pass's jobs
  DecisionKind kind = DecisionKind::kWait;
  std::vector<Allocation> allocations;  // kPlace / kPreempt: one per replica
  std::vector<int> victims;             // kPreempt: indices of the running jobs to suspend
  // Readable, for the job's events. Points into the PassResult's `texts` (or static storage): valid while the
  // result lives, so copy it (std::string(reason)) to keep it longer. Jobs waiting for the same reason share
  // one text — most of a long queue waits for one of a few thousand.
  std::string_view reason;
};

struct SuspendDecision {
  int job = -1;                     // the running job to suspend
  int for_job = -1;                 // the waiting job it makes room for
  std::string reason;               // its own text (a few per pass, each naming the job it makes room for)
  std::vector<Allocation> move_to;  // a move: restarts at once here (booked in the returned state); empty: waits
};

struct PassStats {
  int placed = 0;
  int preempting = 0;
  int suspended = 0;  // victims and moved jobs
  int moved = 0;
  int waiting = 0;
  int never_fits = 0;
  int rejected = 0;
  int64_t placer_calls = 0;
  int victim_searches = 0;
  int move_searches = 0;
};

// Movable, not copyable: the decisions' reasons point into `texts`, which a copy would not own.
struct PassResult {
  // Every job that was not running, once: waiting jobs in the order considered, then rejected ones.
  std::vector<JobDecision> decisions;
  std::vector<SuspendDecision> suspensions;
  PassStats stats;
  TextArena texts;  // what the decisions' reasons point into
};

// `state` holds the allocations of every running job in `jobs`; the pass books and releases in it. On
// return it shows the cluster as it will be once the decisions are carried out: placements (and
// moves) booked, victims released (the server takes exactly that back: server/internal/pass_undo.h). `now` is the
// pass's time (nothing reads a clock).
PassResult RunSchedulingPass(const std::vector<QueueJob>& jobs, const std::vector<Tenant>& tenants, ClusterState& state,
                             JobPlacer& placer, TimeMicros now, const PassOptions& options = {});

}  // namespace xpool
