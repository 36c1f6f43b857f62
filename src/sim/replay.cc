#include "sim/replay.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "common/text.h"
#include "common/units.h"
#include "model/job_spec.h"
#include "scheduler/fit.h"
#include "scheduler/fragmentation.h"
#include "scheduler/policy.h"
#include "scheduler/preemption/defrag.h"
#include "scheduler/queue/scheduler_job_placer.h"
#include "scheduler/queue/scheduling_pass.h"
#include "sim/fill.h"
#include "sim/replay_analysis.h"

namespace xpool::sim {
namespace {

constexpr TimeMicros kNever = std::numeric_limits<TimeMicros>::max();
constexpr TimeMicros kHour = 3600 * kMicrosPerSecond;
constexpr const char* kQosNames[] = {"LS", "Guaranteed", "Burstable", "BE", "unknown"};

// What the replay keeps per pod besides its QueueJob.
struct PodRun {
  TimeMicros arrival = 0;
  TimeMicros remaining = 0;  // work still to do
  TimeMicros first_start = -1;
  int priority = kPriorityNormal;
  int64_t requested_milli = 0;           // GPU the pod asked for (num_gpu × gpu_milli)
  int64_t held_milli = 0;                // GPU it holds while running (whole GPUs when sharing is off)
  uint32_t starts = 0;                   // bumped on each suspension: older departure events are stale
  int slot = -1;                         // index in jobs_, -1 when not in the queue or running
  std::vector<TimeMicros> suspended_at;  // within the last hour
  std::string wait_cause;                // explain: why it waited, at the first pass it waited through
};

struct Departure {
  TimeMicros time;
  int pod;
  uint32_t starts;
  bool operator>(const Departure& o) const { return std::tie(time, pod) > std::tie(o.time, o.pod); }
};

// One step of the allocation-over-time series: the state from `time` until the next step.
struct Step {
  TimeMicros time;
  int64_t allocated_milli;
  int64_t requested_milli;
  int64_t waiting;
};

class Replayer {
 public:
  Replayer(const ClusterState& cluster, const std::vector<TracePod>& pods, const ReplayOptions& options,
           std::unique_ptr<PlacementPolicy> policy)
      : options_(options),
        pods_(pods),
        state_(cluster),
        policy_(std::move(policy)),
        rng_(options.seed),
        placer_(state_, *policy_, rng_, SchedulerOptions{.explain = false}) {
    Tenant tenant;  // one tenant, no quota: the trace has no tenants
    tenant.id = TenantId(1);
    tenant.name = "trace";
    tenants_.push_back(std::move(tenant));
    pass_options_.preemption = options.preemption;
    pass_options_.moves = options.moves;
    pass_options_.rules.min_runtime = options.min_runtime_s * kMicrosPerSecond;
    pass_options_.rules.max_suspensions_per_hour = options.max_suspensions_per_hour;
  }

  Result<ReplayResult> Run();

 private:
  Status Prepare();
  void Arrive(int pod);
  bool CouldEverFit(const TaskRequest& request);
  void Depart(int pod);
  Status Schedule(TimeMicros now);
  void Start(int slot, std::vector<Allocation> allocations, TimeMicros now);
  void Suspend(int slot, TimeMicros now);
  void Remove(int slot);
  void NextWake(TimeMicros now);
  void Accumulate(TimeMicros from, TimeMicros to);
  void Finish(TimeMicros end);
  void Explain(TimeMicros now);
  std::string ExplainMoves(int head, TimeMicros now);
  void FinishExplain(TimeMicros end);
  std::string ShapeLabel(int pod) const;

  const ReplayOptions& options_;
  const std::vector<TracePod>& pods_;
  ClusterState state_;
  std::unique_ptr<PlacementPolicy> policy_;
  Rng rng_;
  SchedulerJobPlacer placer_;
  PassOptions pass_options_;
  std::vector<Tenant> tenants_;

  std::vector<PodRun> run_;
  std::vector<int> arrival_order_;
  std::priority_queue<Departure, std::vector<Departure>, std::greater<>> departures_;
  std::vector<QueueJob> jobs_;  // waiting and running pods, in no particular order (ties break by id)
  std::vector<int> pod_of_;     // pod of jobs_[i]
  int64_t waiting_ = 0;
  int64_t requested_running_milli_ = 0;
  TimeMicros wake_ = kNever;                         // when a waiting pod may find a victim old enough
  std::unordered_map<std::string, bool> could_fit_;  // by request shape

  // Integrals over time (milli × µs).
  double allocated_area_ = 0, requested_area_ = 0, allocated_area_q_ = 0, requested_area_q_ = 0;
  TimeMicros queued_time_ = 0;
  std::vector<Step> steps_;
  // explain: the queue head's cause now, and idle GPU (milli × µs) and time per cause.
  std::string head_cause_;
  int64_t unusable_idle_milli_ = 0;  // idle GPU on nodes no waiting pod could ever use
  double unusable_area_ = 0;
  std::map<std::string, std::pair<double, TimeMicros>> cause_area_;
  ReplayResult result_;
};

Status Replayer::Prepare() {
  const int n = static_cast<int>(pods_.size());
  run_.resize(n);
  for (int i = 0; i < n; ++i) {
    const TracePod& p = pods_[i];
    if (!p.has_times) {
      return InvalidArgumentError("pod " + p.name +
                                  " has no times (this pod list has only the first 5 columns; replay needs "
                                  "creation_time, deletion_time and scheduled_time — use an 11-column list)");
    }
    PodRun& r = run_[i];
    r.arrival = p.creation_time * kMicrosPerSecond / options_.speedup;
    const bool scheduled =
        p.scheduled_time && *p.scheduled_time >= p.creation_time && *p.scheduled_time <= p.deletion_time;
    const int64_t start = scheduled ? *p.scheduled_time : p.creation_time;
    r.remaining = (p.deletion_time - start) * kMicrosPerSecond;
    r.priority = options_.queue == QueueMode::kFifo ? kPriorityNormal : options_.qos_priority[static_cast<int>(p.qos)];
    r.requested_milli = PodGpuMilli(p);
    r.held_milli = options_.share ? r.requested_milli : int64_t{1000} * p.num_gpu;
  }
  arrival_order_.resize(n);
  for (int i = 0; i < n; ++i) arrival_order_[i] = i;
  std::stable_sort(arrival_order_.begin(), arrival_order_.end(),
                   [&](int a, int b) { return run_[a].arrival < run_[b].arrival; });
  result_.pods = n;
  result_.gpu_capacity_milli = state_.totals().device_compute_capacity_milli;
  if (result_.gpu_capacity_milli <= 0) return InvalidArgumentError("the cluster has no GPU");
  return Status::Ok();
}

void Replayer::Arrive(int pod) {
  const TracePod& p = pods_[pod];
  QueueJob job;
  job.id = JobId(pod + 1);
  job.tenant = TenantId(1);
  job.priority = run_[pod].priority;
  job.first_submit = run_[pod].arrival;
  job.request = PodRequest(p);
  if (!options_.share && job.request.device_count > 0) job.request.device_compute_milli = 1000;
  job.state = QueueJobState::kPending;
  ++result_.events;
  policy_->OnArrival(job.request);
  if (!CouldEverFit(job.request)) {  // never queued: it would count as waiting until a pass asked the placer
    ++result_.never_fits;
    return;
  }
  run_[pod].slot = static_cast<int>(jobs_.size());
  jobs_.push_back(std::move(job));
  pod_of_.push_back(pod);
  ++waiting_;
}

// Whether some node, empty, could take the request (FitNode ignoring usage). Requests the pass would reject say
// yes here: the pass rejects them with the reason.
bool Replayer::CouldEverFit(const TaskRequest& r) {
  if (!ValidateTaskRequest(r).ok()) return true;
  std::string key = std::to_string(r.cpu_milli) + "/" + std::to_string(r.memory_mib) + "/" +
                    std::to_string(r.device_count) + "/" + std::to_string(r.device_compute_milli) + "/" +
                    std::to_string(r.device_memory_mib) + "/" + std::to_string(r.device_memory_percent);
  for (const std::string& t : r.type_include) key += "|" + t;
  auto [it, inserted] = could_fit_.try_emplace(key, false);
  if (!inserted) return it->second;
  NodeCandidate candidate;
  NodeVerdict verdict;
  for (int n = 0; n < state_.node_count() && !it->second; ++n) {
    it->second = FitNode(state_, n, r, /*ignore_usage=*/true, &candidate, &verdict);
  }
  return it->second;
}

void Replayer::Depart(int pod) {
  const int slot = run_[pod].slot;
  for (const Allocation& a : jobs_[slot].allocations) CheckOk(state_.Release(a), "a running pod's booked allocation");
  requested_running_milli_ -= run_[pod].requested_milli;
  Remove(slot);
  ++result_.events;
}

// Swap-and-pop: order in jobs_ does not matter (the pass breaks ties by id).
void Replayer::Remove(int slot) {
  const int pod = pod_of_[slot];
  const int last = static_cast<int>(jobs_.size()) - 1;
  if (slot != last) {
    jobs_[slot] = std::move(jobs_[last]);
    pod_of_[slot] = pod_of_[last];
    run_[pod_of_[slot]].slot = slot;
  }
  jobs_.pop_back();
  pod_of_.pop_back();
  run_[pod].slot = -1;
}

void Replayer::Start(int slot, std::vector<Allocation> allocations, TimeMicros now) {
  QueueJob& job = jobs_[slot];
  PodRun& r = run_[pod_of_[slot]];
  job.state = QueueJobState::kRunning;
  job.allocations = std::move(allocations);
  job.last_start = now;
  if (r.first_start < 0) {
    r.first_start = now;
    ++result_.placed;
  }
  --waiting_;
  requested_running_milli_ += r.requested_milli;
  departures_.push({now + r.remaining, pod_of_[slot], r.starts});
}

void Replayer::Suspend(int slot, TimeMicros now) {
  QueueJob& job = jobs_[slot];
  PodRun& r = run_[pod_of_[slot]];
  const TimeMicros worked = now - job.last_start;
  const TimeMicros lost = std::min(worked, options_.checkpoint_cost_s * kMicrosPerSecond);
  r.remaining = r.remaining - worked + lost;
  result_.gpu_hours_lost += static_cast<double>(lost) / kHour * static_cast<double>(r.held_milli) / 1000.0;
  job.state = QueueJobState::kSuspended;
  job.allocations.clear();  // the pass released them in state_
  ++r.starts;
  r.suspended_at.push_back(now);
  requested_running_milli_ -= r.requested_milli;
  ++waiting_;
  ++result_.suspensions;
  ++result_.events;
}

Status Replayer::Schedule(TimeMicros now) {
  for (size_t j = 0; j < jobs_.size(); ++j) {
    std::vector<TimeMicros>& s = run_[pod_of_[j]].suspended_at;
    if (s.empty()) continue;
    s.erase(s.begin(), std::upper_bound(s.begin(), s.end(), now - kHour));
    jobs_[j].suspensions_last_hour = static_cast<int>(s.size());
  }
  // A pass that preempted and ran out of victim searches leaves entitled pods for the next pass: run it now.
  for (int round = 0; round < 1000; ++round) {
    PassResult pass = RunSchedulingPass(jobs_, tenants_, state_, placer_, now, pass_options_);
    ++result_.passes;
    for (SuspendDecision& s : pass.suspensions) {
      Suspend(s.job, now);
      if (!s.move_to.empty()) {  // a move: restarts at once where the pass booked it
        Start(s.job, std::move(s.move_to), now);
        ++result_.moves;
      }
    }
    std::vector<int> gone;
    for (JobDecision& d : pass.decisions) {
      switch (d.kind) {
        case DecisionKind::kPlace:
        case DecisionKind::kPreempt:
          Start(d.job, std::move(d.allocations), now);
          break;
        case DecisionKind::kNeverFits:
          ++result_.never_fits;
          gone.push_back(d.job);
          break;
        case DecisionKind::kRejected:
          if (result_.rejected++ == 0) result_.first_reject_reason = d.reason;
          gone.push_back(d.job);
          break;
        case DecisionKind::kWait:
          break;
      }
    }
    std::sort(gone.rbegin(), gone.rend());  // highest slot first: swap-and-pop keeps the others valid
    for (int slot : gone) {
      Remove(slot);
      --waiting_;
    }
    const bool deferred = pass.stats.victim_searches >= pass_options_.max_victim_searches ||
                          pass.stats.move_searches >= pass_options_.max_move_searches;
    if (!deferred || pass.stats.preempting == 0 || waiting_ == 0) break;
  }
  NextWake(now);
  return Status::Ok();
}

// When preemption or moves are on and some pod waits, the earliest time a running pod of lower priority (any
// priority, for moves of any) becomes a possible victim or move (old enough, or below the suspension cap again):
// a pass runs then even with no other event.
void Replayer::NextWake(TimeMicros now) {
  wake_ = kNever;
  if ((!options_.preemption && options_.moves == MoveRule::kOff) || waiting_ == 0) return;
  int top = -1;
  for (const QueueJob& j : jobs_) {
    if (j.state != QueueJobState::kRunning) top = std::max(top, j.priority);
  }
  for (size_t i = 0; i < jobs_.size(); ++i) {
    const QueueJob& j = jobs_[i];
    if (j.state != QueueJobState::kRunning || !j.preemptible) continue;
    if (j.priority >= top && options_.moves != MoveRule::kAnyPriority) continue;
    TimeMicros when = now;
    const TimeMicros old_enough = j.last_start + pass_options_.rules.min_runtime;
    if (old_enough > now) when = old_enough;
    const std::vector<TimeMicros>& s = run_[pod_of_[i]].suspended_at;
    const int cap = pass_options_.rules.max_suspensions_per_hour;
    if (static_cast<int>(s.size()) >= cap && cap > 0) {
      when = std::max(when, s[s.size() - cap] + kHour + 1);
    }
    if (when > now) wake_ = std::min(wake_, when);
  }
}

void Replayer::Accumulate(TimeMicros from, TimeMicros to) {
  const TimeMicros dt = to - from;
  if (dt <= 0) return;
  const double alloc = static_cast<double>(state_.totals().device_compute_allocated_milli);
  const double req = static_cast<double>(requested_running_milli_);
  allocated_area_ += alloc * static_cast<double>(dt);
  requested_area_ += req * static_cast<double>(dt);
  if (waiting_ > 0) {
    if (options_.explain) {
      auto& [idle, time] = cause_area_[head_cause_];
      idle += (static_cast<double>(result_.gpu_capacity_milli) - alloc) * static_cast<double>(dt);
      time += dt;
      unusable_area_ += static_cast<double>(unusable_idle_milli_) * static_cast<double>(dt);
    }
    queued_time_ += dt;
    allocated_area_q_ += alloc * static_cast<double>(dt);
    requested_area_q_ += req * static_cast<double>(dt);
  }
}

Result<ReplayResult> Replayer::Run() {
  RETURN_IF_ERROR(Prepare());
  size_t next = 0;
  const TimeMicros origin = arrival_order_.empty() ? 0 : run_[arrival_order_[0]].arrival;
  TimeMicros now = origin;
  while (true) {
    TimeMicros t = kNever;
    if (next < arrival_order_.size()) t = run_[arrival_order_[next]].arrival;
    while (!departures_.empty() && departures_.top().starts != run_[departures_.top().pod].starts) {
      departures_.pop();  // stale: the pod was suspended after this departure was planned
    }
    if (!departures_.empty()) t = std::min(t, departures_.top().time);
    if (wake_ != kNever) t = std::min(t, wake_);
    if (t == kNever) break;
    Accumulate(now, t);
    now = t;
    bool changed = wake_ == t;
    while (!departures_.empty() && departures_.top().time == t) {
      const Departure d = departures_.top();
      departures_.pop();
      if (d.starts != run_[d.pod].starts) continue;
      Depart(d.pod);
      changed = true;
    }
    while (next < arrival_order_.size() && run_[arrival_order_[next]].arrival == t) {
      Arrive(arrival_order_[next++]);
      changed = true;
    }
    wake_ = kNever;
    if (changed && waiting_ > 0) RETURN_IF_ERROR(Schedule(now));
    if (options_.explain && waiting_ > 0) Explain(now);
    steps_.push_back(
        {now - origin, state_.totals().device_compute_allocated_milli, requested_running_milli_, waiting_});
  }
  result_.never_placed = result_.pods - result_.placed;
  result_.makespan_s = (now - origin) / kMicrosPerSecond;
  Finish(now - origin);
  if (options_.explain) FinishExplain(now);
  return std::move(result_);
}

std::string Replayer::ShapeLabel(int pod) const {
  const TracePod& p = pods_[pod];
  std::string s = std::string(QosName(p.qos)) + " " + std::to_string(p.num_gpu);
  if (p.num_gpu > 0 && p.gpu_milli < 1000) s += "x" + std::to_string(p.gpu_milli) + "m";
  s += " GPU";
  if (p.cpu_milli >= 32000) s += " (" + std::to_string(p.cpu_milli / 1000) + " CPU)";
  return s;
}

// The cause of the queue head's wait (for the idle GPU from now to the next event), and a first cause for every
// pod seen waiting for the first time.
void Replayer::Explain(TimeMicros now) {
  std::vector<const QueueJob*> running;
  int head = -1;
  for (size_t j = 0; j < jobs_.size(); ++j) {
    const QueueJob& job = jobs_[j];
    if (job.state == QueueJobState::kRunning) {
      running.push_back(&job);
    } else if (head < 0 ||
               std::tie(jobs_[head].priority, job.first_submit) < std::tie(job.priority, jobs_[head].first_submit)) {
      head = static_cast<int>(j);
    }
  }
  std::vector<bool> usable(state_.node_count(), false);
  NodeCandidate candidate;
  NodeVerdict verdict;
  for (const QueueJob& job : jobs_) {
    if (job.state == QueueJobState::kRunning || !ValidateTaskRequest(job.request).ok()) continue;
    for (int n = 0; n < state_.node_count(); ++n) {
      usable[n] = usable[n] || FitNode(state_, n, job.request, /*ignore_usage=*/true, &candidate, &verdict);
    }
  }
  unusable_idle_milli_ = 0;
  for (int n = 0; n < state_.node_count(); ++n) {
    if (usable[n]) continue;
    const Node& node = state_.node(n);
    for (size_t d = 0; d < node.devices.size(); ++d) {
      unusable_idle_milli_ += node.devices[d].compute_milli - state_.usage(n).devices[d].compute_milli;
    }
  }
  for (size_t j = 0; j < jobs_.size(); ++j) {
    PodRun& r = run_[pod_of_[j]];
    const bool is_head = static_cast<int>(j) == head;
    if (jobs_[j].state == QueueJobState::kRunning || (!r.wait_cause.empty() && !is_head)) continue;
    WaitCause c = DiagnoseWait(state_, jobs_[j].request, running);
    if (r.wait_cause.empty()) r.wait_cause = DescribeWaitCause(c);
    if (is_head) {
      c.candidate_nodes = 0;  // keep the label coarse
      std::string d = DescribeWaitCause(c);
      head_cause_ = ShapeLabel(pod_of_[j]) + ": " + d.substr(0, d.rfind(" ("));
      if (options_.moves != MoveRule::kOff && c.block != WaitBlock::kFits)
        head_cause_ += "; " + ExplainMoves(head, now);
    }
  }
}

// Why no move (or move-and-suspend, preemption/defrag.h) opened a node for the queue head `head`: the cluster
// lacks the room even counting what lower-priority work holds, the rules (min-runtime, the suspension cap) pin
// the jobs that would have to leave, or no plan exists even if every job could leave — with the stage where the
// candidate nodes failed. Runs PlanMoves on state_ (left as found) with the pass's rules for the head.
std::string Replayer::ExplainMoves(int head, TimeMicros now) {
  const QueueJob& job = jobs_[head];
  if (job.replicas != 1) return "moves: a gang";
  std::vector<int> movable, suspendable, any, any_suspendable;
  int64_t room = 0;
  for (int v = 0; v < static_cast<int>(jobs_.size()); ++v) {
    const QueueJob& r = jobs_[v];
    if (r.state != QueueJobState::kRunning || !r.preemptible || r.allocations.size() != 1) continue;
    if (options_.moves == MoveRule::kLowerPriority && r.priority >= job.priority) continue;
    const bool lower = options_.preemption && r.priority < job.priority;
    any.push_back(v);
    if (lower) any_suspendable.push_back(v);
    if (now - r.last_start < pass_options_.rules.min_runtime ||
        r.suspensions_last_hour >= pass_options_.rules.max_suspensions_per_hour) {
      continue;
    }
    movable.push_back(v);
    if (!lower) continue;
    suspendable.push_back(v);
    for (const DeviceGrant& g : r.allocations.front().devices) room += g.compute_milli;
  }
  const ClusterTotals& totals = state_.totals();
  const TaskRequest& q = job.request;
  if (totals.device_compute_capacity_milli - totals.device_compute_allocated_milli + room <
      q.device_count * std::min<int64_t>(q.device_compute_milli, 1000)) {
    return "moves: cluster lacks free GPU";
  }
  const int max_nodes = pass_options_.max_move_nodes;
  Result<MovePlan> ruled = PlanMoves(state_, jobs_, movable, job, placer_, max_nodes, suspendable);
  if (ruled.ok() && ruled->found) return "moves: a plan exists (not searched in this pass)";
  Result<MovePlan> free = PlanMoves(state_, jobs_, any, job, placer_, max_nodes, any_suspendable);
  if (!free.ok()) return "moves: " + free.status().message();
  if (free->found) return "moves: min-runtime/cap pin the jobs to move";
  const MoveMisses& m = free->misses;
  std::string s = "moves: no plan even unpinned (" + std::to_string(free->candidates) + " nodes:";
  auto add = [&](int n, const char* what) {
    if (n > 0) s += " " + std::to_string(n) + " " + what;
  };
  add(m.pinned, "unmovable work");
  add(m.placer_refused, "policy veto");
  add(m.no_room_whole, "no room for a moved whole-GPU job");
  add(m.no_room_shared, "no room for a moved fractional job");
  add(m.no_room_cpu, "no room for a moved CPU job");
  return s + ")";
}

void Replayer::FinishExplain(TimeMicros end) {
  for (const auto& [cause, area] : cause_area_) {
    result_.wait_causes.push_back(
        {cause, static_cast<double>(area.second) / kMicrosPerSecond, area.first / 1000.0 / static_cast<double>(kHour)});
  }
  std::sort(result_.wait_causes.begin(), result_.wait_causes.end(), [](const WaitCauseRow& a, const WaitCauseRow& b) {
    return std::tie(a.idle_gpu_hours, a.queued_s) > std::tie(b.idle_gpu_hours, b.queued_s);
  });
  result_.unusable_idle_gpu_hours = unusable_area_ / 1000.0 / static_cast<double>(kHour);
  if (queued_time_ > 0) {
    result_.allocated_pct_queued_bound =
        100.0 -
        100.0 * unusable_area_ / (static_cast<double>(result_.gpu_capacity_milli) * static_cast<double>(queued_time_));
  }
  std::vector<WaitedPod> waits;
  for (size_t i = 0; i < pods_.size(); ++i) {
    const PodRun& r = run_[i];
    if (r.wait_cause.empty()) continue;
    const TracePod& p = pods_[i];
    const TimeMicros until = r.first_start >= 0 ? r.first_start : end;
    waits.push_back({p.name, std::string(QosName(p.qos)), p.num_gpu, p.gpu_milli, p.cpu_milli,
                     static_cast<double>(until - r.arrival) / kMicrosPerSecond, r.first_start >= 0, r.wait_cause});
  }
  std::stable_sort(waits.begin(), waits.end(),
                   [](const WaitedPod& a, const WaitedPod& b) { return a.delay_s > b.delay_s; });
  if (waits.size() > 15) waits.resize(15);
  result_.longest_waits = std::move(waits);
}

DelayStats Stats(std::vector<double> delays, int64_t pods) {
  std::sort(delays.begin(), delays.end());
  DelayStats s;
  s.pods = pods;
  s.placed = static_cast<int64_t>(delays.size());
  s.p50_s = Percentile(delays, 50);
  s.p95_s = Percentile(delays, 95);
  s.p99_s = Percentile(delays, 99);
  s.max_s = delays.empty() ? 0 : delays.back();
  return s;
}

// Averages the steps into at most max_timeline_points buckets of equal width.
std::vector<TimelinePoint> Downsample(const std::vector<Step>& steps, TimeMicros end, int64_t capacity,
                                      int max_points) {
  std::vector<TimelinePoint> out;
  if (steps.empty() || end <= 0 || max_points < 1) return out;
  const int buckets = static_cast<int>(std::min<int64_t>(max_points, end));
  const double width = static_cast<double>(end) / buckets;
  out.resize(buckets);
  const double cap = static_cast<double>(capacity);
  for (size_t i = 0; i < steps.size(); ++i) {
    const double from = static_cast<double>(steps[i].time);
    const double to = i + 1 < steps.size() ? static_cast<double>(steps[i + 1].time) : static_cast<double>(end);
    int b = std::min(buckets - 1, static_cast<int>(from / width));
    for (double t = from; b < buckets; ++b) {
      const double bucket_end = (b + 1) * width;
      const double piece = std::min(to, bucket_end) - t;
      if (piece > 0) {
        out[b].allocated_pct += 100.0 * static_cast<double>(steps[i].allocated_milli) / cap * piece / width;
        out[b].requested_pct += 100.0 * static_cast<double>(steps[i].requested_milli) / cap * piece / width;
      }
      if (piece > 0 || from == to) out[b].waiting = std::max(out[b].waiting, steps[i].waiting);
      if (to <= bucket_end) break;
      t = bucket_end;
    }
  }
  for (int b = 0; b < buckets; ++b) out[b].time_s = b * width / kMicrosPerSecond;
  return out;
}

void Replayer::Finish(TimeMicros span) {
  ReplayResult& r = result_;
  const double cap = static_cast<double>(r.gpu_capacity_milli);
  if (span > 0) {
    r.allocated_pct = 100.0 * allocated_area_ / (cap * static_cast<double>(span));
    r.requested_pct = 100.0 * requested_area_ / (cap * static_cast<double>(span));
  }
  r.gpu_hours_allocated = allocated_area_ / 1000.0 / kHour;
  r.queued_s = static_cast<double>(queued_time_) / kMicrosPerSecond;
  if (queued_time_ > 0) {
    r.allocated_pct_queued = 100.0 * allocated_area_q_ / (cap * static_cast<double>(queued_time_));
    r.requested_pct_queued = 100.0 * requested_area_q_ / (cap * static_cast<double>(queued_time_));
  }
  std::vector<std::vector<double>> by_qos(5);
  std::vector<int64_t> qos_pods(5, 0);
  std::map<int, std::pair<std::vector<double>, int64_t>, std::greater<>> by_priority;
  for (size_t i = 0; i < pods_.size(); ++i) {
    const int q = static_cast<int>(pods_[i].qos);
    auto& [delays, count] = by_priority[run_[i].priority];
    ++qos_pods[q];
    ++count;
    if (run_[i].first_start < 0) continue;
    const double d = static_cast<double>(run_[i].first_start - run_[i].arrival) / kMicrosPerSecond;
    by_qos[q].push_back(d);
    delays.push_back(d);
  }
  for (int q = 0; q < 5; ++q) {
    if (qos_pods[q] > 0) r.by_qos.push_back({kQosNames[q], Stats(std::move(by_qos[q]), qos_pods[q])});
  }
  for (auto& [priority, entry] : by_priority) {
    r.by_priority.push_back({"priority " + std::to_string(priority), Stats(std::move(entry.first), entry.second)});
  }
  r.timeline = Downsample(steps_, span, r.gpu_capacity_milli, options_.max_timeline_points);
}

}  // namespace

Result<QosPriorities> ParseQosPriorities(std::string_view text, QosPriorities base) {
  QosPriorities out = base;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view part = text.substr(start, comma - start);
    start = comma + 1;
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    const std::string_view name = part.substr(0, std::min(eq, part.size()));
    int q = -1;
    for (int i = 0; i < 4; ++i) {
      if (EqualsIgnoreCase(name, kQosNames[i])) q = i;
    }
    if (q < 0) {
      return InvalidArgumentError("--qos-priority: unknown qos class \"" + std::string(name) +
                                  "\" (LS, Guaranteed, Burstable, BE)");
    }
    Result<int64_t> v =
        eq == std::string_view::npos ? InvalidArgumentError("no value") : ParseNonNegativeInt(part.substr(eq + 1));
    if (!v.ok() || *v > kMaxPriority) {
      return InvalidArgumentError("--qos-priority: \"" + std::string(part) + "\" needs a priority 0..100, as LS=90");
    }
    out[q] = static_cast<int>(*v);
  }
  return out;
}

ReplayOptions WholeGpuFifo(ReplayOptions base) {
  base.share = false;
  base.preemption = false;
  base.moves = MoveRule::kOff;
  base.queue = QueueMode::kFifo;
  return base;
}

std::vector<TraceNode> SpreadNodes(const std::vector<TraceNode>& nodes, int count) {
  const size_t n = nodes.size();
  if (count <= 0 || static_cast<size_t>(count) >= n) return nodes;
  std::vector<TraceNode> out;
  out.reserve(count);
  for (size_t i = 0; i < static_cast<size_t>(count); ++i) out.push_back(nodes[i * n / count]);
  return out;
}

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(q / 100.0 * static_cast<double>(sorted.size()));
  const size_t i = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(sorted.size()))) - 1;
  return sorted[i];
}

Result<ReplayResult> RunReplay(const ClusterState& cluster, const std::vector<TracePod>& pods,
                               const ReplayOptions& options) {
  if (options.speedup < 1) return InvalidArgumentError("speedup must be at least 1");
  if (options.min_runtime_s < 0) return InvalidArgumentError("min-runtime must not be negative");
  if (options.checkpoint_cost_s < 0) return InvalidArgumentError("checkpoint-cost must not be negative");
  if (options.max_suspensions_per_hour < 0) return InvalidArgumentError("the suspension cap must not be negative");
  for (int p : options.qos_priority) {
    if (p < 0 || p > kMaxPriority) return InvalidArgumentError("qos priorities must be 0..100");
  }
  TargetWorkload target;
  if (options.policy == "fgd" || options.policy.rfind("fgd@", 0) == 0) {
    std::vector<TaskRequest> requests;
    requests.reserve(pods.size());
    for (const TracePod& p : pods) requests.push_back(PodRequest(p));
    target = TargetWorkload::FromRequests(requests);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<PlacementPolicy> policy, MakeFillPolicy(options.policy, target));
  auto replayer = std::make_unique<Replayer>(cluster, pods, options, std::move(policy));
  return replayer->Run();
}

std::string TimelineCsv(const ReplayResult& result) {
  std::string out = "time_s,allocated_pct,requested_pct,waiting\n";
  char line[128];
  for (const TimelinePoint& p : result.timeline) {
    std::snprintf(line, sizeof line, "%.0f,%.3f,%.3f,%lld\n", p.time_s, p.allocated_pct, p.requested_pct,
                  static_cast<long long>(p.waiting));
    out += line;
  }
  return out;
}

}  // namespace xpool::sim
