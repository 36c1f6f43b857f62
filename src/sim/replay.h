#pragma once
// `xpool sim replay`: a time-based, event-driven replay of a pod list with real times (issue 3 point 7,
// issue 7 point 6). Pods arrive at creation_time and leave once they have run their duration (deletion −
// scheduled time, or − creation time when not scheduled; a pod that starts late keeps its duration). A pod that
// does not fit waits. Every change (arrivals, departures, a victim growing old enough) runs one scheduling pass:
// the server's RunSchedulingPass over a SchedulerJobPlacer (queue order, quotas, placement, preemption — no
// copy). Suspended pods return to the queue keeping their first arrival and lose `checkpoint_cost` of work.
// Idle time is skipped (the clock jumps to the next event).
//
// Queue modes: kFifo puts every pod at one priority (order by arrival, then id — a pass still places any
// waiting pod that fits, i.e. backfills); kPriority maps each pod's qos to a priority (QosPriorities).
// share = false gives every GPU pod whole GPUs (a 0.5-GPU pod holds one GPU alone), as a cluster without GPU
// sharing does.
//
// Functions over value types; a run owns its ClusterState copy and policy, so runs may go in parallel threads.
// Pure: no clock, no I/O (the caller times the run for events/s).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "model/cluster_state.h"
#include "scheduler/queue/scheduling_pass.h"
#include "sim/trace.h"

namespace xpool::sim {

enum class QueueMode : uint8_t { kFifo, kPriority };

// Priority (0..100) per qos class, indexed by Qos (kLs, kGuaranteed, kBurstable, kBe, kUnknown).
using QosPriorities = std::array<int, 5>;
inline constexpr QosPriorities kDefaultQosPriorities = {90, 90, 50, 10, 50};
// "LS=90,Guaranteed=90,Burstable=50,BE=10" (any subset; names as in the trace, case-insensitive; the classes
// not named keep `base`). InvalidArgument naming the bad part.
Result<QosPriorities> ParseQosPriorities(std::string_view text, QosPriorities base = kDefaultQosPriorities);

struct ReplayOptions {
  std::string policy = "default";  // a MakeFillPolicy name ("fgd" gets the whole list's target workload)
  QueueMode queue = QueueMode::kPriority;
  QosPriorities qos_priority = kDefaultQosPriorities;
  bool share = true;       // false: whole GPUs only
  bool preemption = true;  // suspend lower-priority pods for higher ones (kPriority only has any)
  // Defragmentation: move running pods (suspend + restart at once elsewhere, paying checkpoint_cost) to open a
  // node for a pod that fits nowhere (PassOptions::moves).
  MoveRule moves = MoveRule::kOff;
  int64_t min_runtime_s = 600;
  int max_suspensions_per_hour = 3;
  int64_t checkpoint_cost_s = 0;  // work lost per suspension (at most what ran since the last start)
  int64_t speedup = 1;            // arrival times divided by this (durations kept): more load
  uint64_t seed = 42;
  int max_timeline_points = 2000;  // the allocation-over-time series is averaged into at most this many
  bool explain = false;            // fill ReplayResult::wait_causes and longest_waits (costs a scan per pass)
};

// The HAI Platform "before": whole GPUs, FIFO, no preemption; other fields from `base`.
ReplayOptions WholeGpuFifo(ReplayOptions base);

struct DelayStats {
  int64_t pods = 0;                                   // pods of the group
  int64_t placed = 0;                                 // that ever started (the percentiles are over these)
  double p50_s = 0, p95_s = 0, p99_s = 0, max_s = 0;  // first start − arrival
};

struct DelayGroup {
  std::string name;  // "LS", or "priority 90"
  DelayStats delay;
};

struct TimelinePoint {
  double time_s = 0;         // bucket start, seconds since the first arrival
  double allocated_pct = 0;  // time-weighted GPU allocated (held) / capacity in the bucket
  double requested_pct = 0;  // time-weighted GPU the running pods asked for / capacity
  int64_t waiting = 0;       // most pods waiting at once in the bucket
};

// Idle GPU while the queue is non-empty, attributed to why the queue's head (highest priority, then earliest)
// waits: "Burstable 8 GPU: GPU short, least-held candidate node runs priority 90".
struct WaitCauseRow {
  std::string cause;
  double queued_s = 0;
  double idle_gpu_hours = 0;
};

struct WaitedPod {
  std::string name;
  std::string qos;
  int num_gpu = 0;
  int64_t gpu_milli = 0;
  int64_t cpu_milli = 0;
  double delay_s = 0;  // first start − arrival (to the end of the replay when never started)
  bool started = false;
  std::string cause;  // why it waited, at the first pass it waited through
};

struct ReplayResult {
  int64_t pods = 0;
  int64_t placed = 0;        // started at least once
  int64_t never_fits = 0;    // no node could ever take them (as asked)
  int64_t never_placed = 0;  // never started: never_fits + those still waiting when nothing else could change
  int64_t rejected = 0;      // bad input the pass refused (included in never_placed)
  std::string first_reject_reason;
  int64_t suspensions = 0;    // including moves
  int64_t moves = 0;          // suspensions that restarted at once elsewhere
  double gpu_hours_lost = 0;  // checkpoint cost × GPUs held by the suspended pod
  double gpu_hours_allocated = 0;
  int64_t makespan_s = 0;           // first arrival → last departure
  double allocated_pct = 0;         // time-weighted GPU allocated / capacity, over the makespan
  double requested_pct = 0;         // the same for what the running pods asked for (differs with share = false)
  double queued_s = 0;              // time with at least one pod waiting
  double allocated_pct_queued = 0;  // time-weighted allocation while a pod waits (0 when none ever waited)
  double requested_pct_queued = 0;
  std::vector<DelayGroup> by_qos;       // LS, Guaranteed, Burstable, BE (groups with pods only)
  std::vector<DelayGroup> by_priority;  // high first
  int64_t events = 0;                   // arrivals + departures + suspensions
  int64_t passes = 0;                   // scheduling passes run
  int64_t gpu_capacity_milli = 0;
  std::vector<TimelinePoint> timeline;
  std::vector<WaitCauseRow> wait_causes;  // explain: most idle GPU-hours first
  // explain: GPU idle while a pod waits on nodes that none of the waiting pods could use even if the node were
  // empty (too few GPUs, wrong model, too little CPU): no scheduler could fill it with the pods waiting then.
  // 100 − this / (capacity × queued time) bounds allocated_pct_queued from above, for these pods on this cluster.
  double unusable_idle_gpu_hours = 0;
  double allocated_pct_queued_bound = 0;
  std::vector<WaitedPod> longest_waits;  // explain: the 15 longest waits
};

// One run. `cluster` is copied (it should be empty of allocations). Pods without times (the 5-column lists)
// are an InvalidArgument naming the first such pod.
Result<ReplayResult> RunReplay(const ClusterState& cluster, const std::vector<TracePod>& pods,
                               const ReplayOptions& options);

// The timeline as CSV: time_s,allocated_pct,requested_pct,waiting.
std::string TimelineCsv(const ReplayResult& result);

// `count` nodes spread evenly over the list (node i·size/count, in order), keeping its mix of models and sizes: a
// smaller cluster for the same pod list. All of them when count ≥ size or count ≤ 0.
std::vector<TraceNode> SpreadNodes(const std::vector<TraceNode>& nodes, int count);

// Nearest-rank percentile (0 < q ≤ 100) of `sorted` (ascending); 0 when empty.
double Percentile(const std::vector<double>& sorted, double q);

}  // namespace xpool::sim
