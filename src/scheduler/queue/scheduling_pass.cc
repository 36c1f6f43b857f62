#include "scheduler/queue/scheduling_pass.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "scheduler/fit.h"
#include "scheduler/preemption/defrag.h"
#include "scheduler/queue/internal/shape_table.h"
#include "scheduler/queue/internal/unfit_frontier.h"
#include "scheduler/queue/queue_order.h"
#include "scheduler/queue/tenant_ledger.h"

namespace xpool {
namespace {

// What the pass remembers about a request shape (see the header: answers stay true until the next
// suspension, which bumps the epoch). Laid out so that what a waiting job reads on the common path
// (demand, epochs and flags, the remembered reason) shares its first cache line: the walk meets
// thousands of shapes in no particular order. Texts are views into the result's arena, which outlives
// the pass and never moves a text, so equal views (same data and size) are the same text.
struct alignas(64) ShapeMemo {
  // What the shape is (filled by Setup): its demand, a job of that shape (its request and replicas
  // stand for all of them), whether the unfit frontier may answer it.
  ResourceAmounts demand;
  int64_t wait_epoch = -1;  // placement answered kWait at this room epoch
  int job = -1;
  bool request_ok = false;  // the shape's request and replicas are valid (else nothing below is filled)
  bool plain = false;
  bool never_fits = false;
  std::string_view wait_reason;
  internal::UnfitFrontier::Vec frontier_key{};  // when plain: the job's numbers (the walk reads no job)
  std::string_view never_reason;
  // The last wait text built with a tail (base + tail): the next job of the shape with the same base
  // and tail shares it.
  std::string_view joined_base;
  std::string_view joined_tail;
  std::string_view joined;
};
struct PreemptMemo {
  int64_t epoch = -1;
  int failed_priority = -1;  // the victim search failed at this priority or above: fails below too
  std::string_view reason;   // why, as appended to the job's wait reason ("; ..."), or empty
};

bool SameView(std::string_view a, std::string_view b) { return a.data() == b.data() && a.size() == b.size(); }

class Pass {
 public:
  Pass(const std::vector<QueueJob>& jobs, const std::vector<Tenant>& tenants, ClusterState& state, JobPlacer& placer,
       TimeMicros now, const PassOptions& options)
      : jobs_(jobs),
        state_(state),
        placer_(placer),
        now_(now),
        options_(options),
        ledger_(tenants),
        tenant_of_(jobs.size(), -1),
        info_(jobs.size()),
        taken_(jobs.size(), false),
        held_(jobs.size()) {}

  PassResult Run();

 private:
  std::vector<DrfQueue::Waiting> Setup();
  int ShapeOf(int j);
  struct JobInfo;
  void Consider(int j, const JobInfo& info);
  bool KnownUnfit(ShapeMemo& memo);
  bool TryPreempt(int j, int t, int shape, const ResourceAmounts& demand, std::string_view* tail) {
    // The early answers inline (nearly every waiting job of a long queue gets one); the search out of line.
    if (!options_.preemption) return false;
    const bool within = ledger_.WithinGuarantee(t, demand);
    if (current_priority_ <= min_victim_priority_ && !within) {
      if (current_priority_ > min_young_priority_) *tail = YoungVictims(j);
      return false;
    }
    if (result_.stats.victim_searches >= options_.max_victim_searches) {
      *tail = deferred_;
      return false;
    }
    return SearchVictims(j, t, shape, within, tail);
  }
  bool SearchVictims(int j, int t, int shape, bool within, std::string_view* tail);
  // MinRuntimeNote for job j, kept in the arena; the same text for jobs of one priority until a suspension.
  std::string_view YoungVictims(int j) {
    auto [it, inserted] = young_memo_.try_emplace(current_priority_, -1, std::string_view());
    if (it->second.first != epoch_) {
      it->second = {epoch_, Keep(MinRuntimeNote(jobs_, by_running_order_, taken_, jobs_[j], options_.rules, now_))};
    }
    return it->second.second;
  }
  bool TryMove(int j, int t, int shape);
  void CommitMoves(int j, int t, MovePlan plan);
  void RoomChanged(const std::vector<int>& nodes);
  void Commit(int j, int t, VictimChoice choice, bool within);
  std::string_view Joined(ShapeMemo& memo, std::string_view base, std::string_view tail);
  JobDecision& Decide(int j, DecisionKind kind, std::string_view reason);
  void Decide(int j, DecisionKind kind, std::string_view reason, std::vector<Allocation>&& allocations) {
    Decide(j, kind, reason).allocations = std::move(allocations);
  }
  std::string_view Keep(std::string_view a, std::string_view b = {}) { return result_.texts.Add(a, b); }
  const std::string& TenantName(int j) const { return ledger_.tenant(tenant_of_[j]).name; }

  const std::vector<QueueJob>& jobs_;
  ClusterState& state_;
  JobPlacer& placer_;
  const TimeMicros now_;
  const PassOptions& options_;
  TenantLedger ledger_;
  std::vector<int> tenant_of_;
  // Per job, filled by Setup's one sequential sweep over the jobs, so that the queue walk (in DRF
  // order, all over memory) reads one small record per job instead of the job.
  struct JobInfo {
    int tenant = -1;
    int shape = -1;  // waiting jobs only
    int priority = 0;
  };
  std::vector<JobInfo> info_;
  int current_priority_ = 0;           // of the job being considered
  std::vector<bool> taken_;            // running jobs chosen as victims in this pass
  std::vector<ResourceAmounts> held_;  // per running job: HeldBy (victim ranking reads it often)
  std::vector<int> by_running_order_;
  int min_victim_priority_ = std::numeric_limits<int>::max();
  // Lowest priority of a preemptible running job still inside its min-runtime (a victim later, not now).
  int min_young_priority_ = std::numeric_limits<int>::max();
  std::unordered_map<int, std::pair<int64_t, std::string_view>> young_memo_;  // priority → (epoch, note)
  int64_t largest_device_memory_ = 0;
  internal::ShapeTable shapes_;
  std::vector<ShapeMemo> shape_memo_;
  internal::UnfitFrontier frontier_;  // cleared when room appears
  std::unordered_map<int64_t, PreemptMemo> preempt_memo_;
  std::unordered_map<int, int64_t> move_memo_;  // shape → epoch at which a move search failed
  internal::UnfitFrontier move_frontier_;       // kAnyPriority: plain requests no move opened room for
  int64_t move_frontier_epoch_ = -1;
  int top_waiting_priority_ = -1;  // highest priority among jobs this pass left waiting
  // Room epoch: bumped by each suspension (the only way room appears within a pass); the nodes it
  // touched are kept, so a shape that did not fit is re-asked only when it fits one of them
  // (FitNode, cheap).
  int64_t room_epoch_ = 0;
  std::vector<std::pair<int64_t, int>> touched_;  // (room epoch, node), epochs ascending
  // Victim epoch: bumped by each suspension and whenever a tenant crosses its guarantee (victims
  // change).
  int64_t epoch_ = 0;
  bool rerank_ = false;
  const std::string deferred_ = "; preemption deferred to the next pass (this pass's " +
                                std::to_string(options_.max_victim_searches) + " victim searches are spent)";
  PassResult result_;
};

// Validates, books running jobs in the ledger, and returns the waiting jobs.
std::vector<DrfQueue::Waiting> Pass::Setup() {
  std::vector<DrfQueue::Waiting> waiting;
  waiting.reserve(jobs_.size());  // nearly every job waits on a long queue: no regrowth copies
  std::vector<int> running;
  largest_device_memory_ = state_.totals().max_device_memory_mib;
  for (int j = 0; j < static_cast<int>(jobs_.size()); ++j) {
    const QueueJob& job = jobs_[j];
    info_[j].priority = job.priority;
    const int t = ledger_.IndexOf(job.tenant);
    const bool waits = job.state != QueueJobState::kRunning;
    // A waiting job's request and replicas are checked once per shape (equal requests, equal answer); with
    // its priority in range too, ValidateQueueJob has nothing left to refuse.
    const int shape = waits ? ShapeOf(j) : -1;
    const bool valid =
        waits && shape_memo_[shape].request_ok && job.priority >= kMinPriority && job.priority <= kMaxPriority;
    Status bad = valid ? Status::Ok() : ValidateQueueJob(job);
    if (bad.ok() && t < 0)
      bad = InvalidArgumentError("job " + job.id.ToString() + ": unknown tenant " + job.tenant.ToString());
    if (bad.ok() && !ledger_.error(t).ok()) bad = ledger_.error(t).WithContext("job " + job.id.ToString());
    if (!bad.ok()) {
      if (job.state != QueueJobState::kRunning) Decide(j, DecisionKind::kRejected, Keep(bad.message()));
      continue;  // a bad running job holds what it holds, but is not counted, ordered or suspended
    }
    tenant_of_[j] = t;
    if (job.state == QueueJobState::kRunning) {
      held_[j] = HeldBy(job);
      ledger_.Add(t, job.priority, held_[j]);
      running.push_back(j);
      if (job.preemptible && job.suspensions_last_hour < options_.rules.max_suspensions_per_hour) {
        int& lowest = now_ - job.last_start >= options_.rules.min_runtime ? min_victim_priority_ : min_young_priority_;
        lowest = std::min(lowest, job.priority);
      }
    } else {
      waiting.push_back({j, job.priority, job.first_submit, job.id.value()});
      info_[j].tenant = t;
      info_[j].shape = shape;
    }
  }
  by_running_order_ = SortRunningForPreemption(jobs_, running, now_);
  return waiting;
}

// The shape of waiting job j; a new shape gets its memo, filled from j (any job of the shape stands for all).
int Pass::ShapeOf(int j) {
  const QueueJob& job = jobs_[j];
  const int shape = shapes_.IdOf(job.request, job.replicas);
  if (shape == static_cast<int>(shape_memo_.size())) {
    ShapeMemo& memo = shape_memo_.emplace_back();
    memo.job = j;
    memo.request_ok = job.replicas >= 1 && ValidateTaskRequest(job.request).ok();
    if (memo.request_ok) {  // its jobs are rejected otherwise: nothing reads the rest
      memo.demand = DemandOf(job, largest_device_memory_);
      memo.plain = internal::UnfitFrontier::Eligible(job.request);
      memo.frontier_key = internal::UnfitFrontier::ToVec(job.request, job.replicas);
    }
  }
  return shape;
}

PassResult Pass::Run() {
  std::vector<DrfQueue::Waiting> waiting = Setup();
  std::vector<JobDecision> rejected = std::move(result_.decisions);
  result_.decisions.clear();
  result_.decisions.reserve(waiting.size() + rejected.size());
  DrfQueue queue(waiting, tenant_of_, ledger_, state_.totals());
  // The records in queue order, gathered in one tight loop (its cache misses overlap) rather than
  // one by one as the walk reaches each job.
  const std::vector<int>& order = queue.order();
  std::vector<JobInfo> info_in_order(order.size());
  for (size_t k = 0; k < order.size(); ++k) info_in_order[k] = info_[order[k]];
  for (int k = queue.NextPosition(); k >= 0; k = queue.NextPosition()) {
    Consider(order[k], info_in_order[k]);
    if (rerank_) {
      queue.RerankAll();
      rerank_ = false;
    }
  }
  for (JobDecision& d : rejected) result_.decisions.push_back(std::move(d));
  return std::move(result_);
}

void Pass::Consider(int j, const JobInfo& info) {
  const QueueJob& job = jobs_[j];  // read only to place it: the shape's job stands for it otherwise
  current_priority_ = info.priority;
  const int t = info.tenant;
  const int shape = info.shape;
  ShapeMemo& memo = shape_memo_[shape];
  const ResourceAmounts& demand = memo.demand;
  if (std::string limit = ledger_.LimitReason(t, info.priority, demand); !limit.empty()) {
    Decide(j, DecisionKind::kWait, Keep(limit));
    return;
  }
  if (memo.never_fits) {
    Decide(j, DecisionKind::kNeverFits, memo.never_reason);
    return;
  }
  // The wait reason: a remembered one or the placer's.
  const std::string_view* reason = nullptr;
  const bool plain = memo.plain;
  if (KnownUnfit(memo)) {
    reason = &memo.wait_reason;
  } else if (plain) {
    reason = frontier_.Covering(memo.frontier_key);  // the shape's request and replicas
  }
  if (reason == nullptr) {
    ++result_.stats.placer_calls;
    JobPlacement p = placer_.Place(state_, job.request, job.replicas);
    if (p.kind == OutcomeKind::kPlaced) {
      for (const Allocation& a : p.allocations) {
        if (Status s = state_.Apply(a); !s.ok()) {  // a placer bug: say so on the job, keep the state whole
          for (const Allocation& b : p.allocations) {
            if (&b == &a) break;
            CheckOk(state_.Release(b), "releasing what was just applied");
          }
          Decide(j, DecisionKind::kWait, Keep("placement could not be booked: ", s.message()));
          return;
        }
      }
      placer_.OnBooked(state_, job.request, p.allocations);  // as for kPreempt (learning policies)
      const bool was_above = ledger_.AboveGuarantee(t);
      ledger_.Add(t, job.priority, AmountsOf(p.allocations));
      if (ledger_.AboveGuarantee(t) != was_above) ++epoch_;
      Decide(j, DecisionKind::kPlace, "placed", std::move(p.allocations));
      return;
    }
    if (p.kind == OutcomeKind::kNeverFits) {
      memo.never_fits = true;
      memo.never_reason = Keep(p.reason);
      Decide(j, DecisionKind::kNeverFits, memo.never_reason);
      return;
    }
    memo.wait_epoch = room_epoch_;
    memo.wait_reason = Keep(p.reason);
    if (plain) frontier_.Add(job.request, job.replicas, memo.wait_reason);
    reason = &memo.wait_reason;
  }
  const std::string_view base = *reason;
  if (options_.moves != MoveRule::kOff && TryMove(j, t, shape)) return;
  std::string_view tail;
  if (TryPreempt(j, t, shape, demand, &tail)) return;
  Decide(j, DecisionKind::kWait, Joined(memo, base, tail));
}

// base + tail, kept in the result's arena, shared with the shape's previous job when it had the same
// (100,000 waiting jobs, a few thousand texts).
std::string_view Pass::Joined(ShapeMemo& memo, std::string_view base, std::string_view tail) {
  if (tail.empty()) return base;
  if (!SameView(memo.joined_base, base) || !SameView(memo.joined_tail, tail)) {
    memo.joined = Keep(base, tail);
    memo.joined_base = base;
    memo.joined_tail = tail;
  }
  return memo.joined;
}

bool Pass::KnownUnfit(ShapeMemo& memo) {
  if (memo.wait_epoch < 0) return false;
  if (memo.wait_epoch == room_epoch_) return true;
  // Room appeared only on nodes touched since: if no replica fits any of them, nothing changed for
  // this shape.
  auto it = std::upper_bound(touched_.begin(), touched_.end(),
                             std::make_pair(memo.wait_epoch, std::numeric_limits<int>::max()));
  const TaskRequest& request = jobs_[memo.job].request;
  NodeCandidate candidate;
  NodeVerdict verdict;
  for (; it != touched_.end(); ++it) {
    if (FitNode(state_, it->second, request, false, &candidate, &verdict)) return false;
  }
  memo.wait_epoch = room_epoch_;
  return true;
}

// True when the job preempts (decided); otherwise `tail` is what its wait reason gets appended.
bool Pass::SearchVictims(int j, int t, int shape, bool within, std::string_view* tail) {
  const QueueJob& job = jobs_[j];
  const int64_t key = (static_cast<int64_t>(shape) << 32) | (within ? t + 1 : 0);
  PreemptMemo& memo = preempt_memo_[key];
  if (memo.epoch == epoch_ && memo.failed_priority >= current_priority_) {
    *tail = memo.reason;
    return false;
  }
  // Ranked only as far as the search reads.
  VictimRanking ranking(jobs_, by_running_order_, tenant_of_, taken_, job, within, ledger_, options_.rules, now_,
                        &held_);
  VictimChoice choice;
  choice.reason = "no running job may be suspended for it";
  if (ranking.RankUntil(1) > 0) {
    ++result_.stats.victim_searches;
    Result<VictimChoice> r = ChooseVictims(state_, jobs_, ranking, job, placer_);
    if (r.ok()) {
      choice = std::move(r).value();
    } else {
      choice.reason = r.status().message();
    }
  }
  if (!choice.found) {
    const std::string young = current_priority_ > min_young_priority_
                                  ? MinRuntimeNote(jobs_, by_running_order_, taken_, job, options_.rules, now_)
                                  : "";
    memo = {epoch_, job.priority, choice.reason.empty() ? Keep(young) : Keep("; " + choice.reason, young)};
    *tail = memo.reason;
    return false;
  }
  Commit(j, t, std::move(choice), within);
  return true;
}

bool Pass::TryMove(int j, int t, int shape) {
  const QueueJob& job = jobs_[j];
  if (options_.moves == MoveRule::kOff || job.replicas != 1) return false;
  // Moves never let a job past a higher-priority one left waiting: the room they open is not its to take.
  if (top_waiting_priority_ > job.priority) return false;
  if (result_.stats.move_searches >= options_.max_move_searches) return false;
  auto [memo, inserted] = move_memo_.try_emplace(shape, -1);
  if (memo->second == epoch_) return false;
  if (move_frontier_epoch_ != epoch_) {
    move_frontier_.Clear();
    move_frontier_epoch_ = epoch_;
  }
  // With moves of any priority every waiting job may move the same jobs, and a larger plain request needs at
  // least as much to move: it is not searched again until a suspension changes the running set.
  const bool frontier = options_.moves == MoveRule::kAnyPriority && internal::UnfitFrontier::Eligible(job.request);
  if (frontier && move_frontier_.Covering(job.request, 1) != nullptr) return false;
  std::vector<int> movable;
  std::vector<int> suspendable;        // lower priority: suspended instead when they find no room (preemption on)
  int64_t room_gpu = 0, room_cpu = 0;  // held by the suspendable jobs
  for (int v : by_running_order_) {
    const QueueJob& r = jobs_[v];
    if (taken_[v] || tenant_of_[v] < 0 || !r.preemptible || r.allocations.size() != 1 || r.replicas != 1) continue;
    if (now_ - r.last_start < options_.rules.min_runtime ||
        r.suspensions_last_hour >= options_.rules.max_suspensions_per_hour) {
      continue;
    }
    if (options_.moves == MoveRule::kLowerPriority && r.priority >= job.priority) continue;
    movable.push_back(v);
    if (options_.preemption && r.priority < job.priority) {
      suspendable.push_back(v);
      for (const DeviceGrant& g : r.allocations.front().devices) room_gpu += g.compute_milli;
      room_cpu += r.allocations.front().cpu_milli;
    }
  }
  // Moves only shuffle what runs: the cluster as a whole must have the room the job asks for, counting what the
  // suspendable jobs hold.
  const ClusterTotals& totals = state_.totals();
  const TaskRequest& q = job.request;
  if (totals.device_compute_capacity_milli - totals.device_compute_allocated_milli + room_gpu <
          q.device_count * std::min<int64_t>(q.device_compute_milli, 1000) ||
      totals.cpu_capacity_milli - totals.cpu_allocated_milli + room_cpu < q.cpu_milli) {
    memo->second = epoch_;
    return false;
  }
  if (movable.empty()) {
    memo->second = epoch_;
    return false;
  }
  ++result_.stats.move_searches;
  Result<MovePlan> plan = PlanMoves(state_, jobs_, movable, job, placer_, options_.max_move_nodes, suspendable);
  if (!plan.ok() || !plan->found) {
    memo->second = epoch_;
    if (frontier) move_frontier_.Add(job.request, 1, "");
    return false;
  }
  CommitMoves(j, t, std::move(plan).value());
  return true;
}

void Pass::CommitMoves(int j, int t, MovePlan plan) {
  const QueueJob& job = jobs_[j];
  for (int v : plan.moved) CheckOk(state_.Release(jobs_[v].allocations.front()), "PlanMoves checked it is booked");
  for (int v : plan.suspended) CheckOk(state_.Release(jobs_[v].allocations.front()), "PlanMoves checked it is booked");
  for (const Allocation& a : plan.allocations) CheckOk(state_.Apply(a), "PlanMoves placed it against this state");
  placer_.OnBooked(state_, job.request, plan.allocations);
  std::string reason;
  std::vector<int> touched;
  for (size_t i = 0; i < plan.moved.size(); ++i) {
    const int v = plan.moved[i];
    const QueueJob& moved = jobs_[v];
    for (const Allocation& a : plan.move_to[i]) CheckOk(state_.Apply(a), "PlanMoves placed it against this state");
    placer_.OnBooked(state_, moved.request, plan.move_to[i]);
    taken_[v] = true;
    const int from = moved.allocations.front().node;
    const std::string route =
        "from node " + state_.node(from).name + " to node " + state_.node(plan.move_to[i].front().node).name;
    if (!reason.empty()) reason += "; ";
    reason += "moves job " + moved.id.ToString() + " (tenant " + TenantName(v) + ", priority " +
              std::to_string(moved.priority) + ") " + route + " to open node " + state_.node(plan.node).name;
    result_.suspensions.push_back({v, j,
                                   "moved " + route + " to make room for job " + job.id.ToString() + " (tenant " +
                                       TenantName(j) + ", priority " + std::to_string(job.priority) + ")",
                                   std::move(plan.move_to[i])});
    touched.push_back(from);
  }
  for (int v : plan.suspended) {  // lower priority, no room elsewhere: a plain preemption
    const QueueJob& victim = jobs_[v];
    ledger_.Remove(tenant_of_[v], victim.priority, HeldBy(victim));
    taken_[v] = true;
    if (!reason.empty()) reason += "; ";
    reason += PreemptorReason(victim, TenantName(v), VictimVerdict::kByPriority, job, TenantName(j));
    result_.suspensions.push_back(
        {v, j, VictimReason(victim, TenantName(v), VictimVerdict::kByPriority, job, TenantName(j)), {}});
    touched.push_back(victim.allocations.front().node);
  }
  ledger_.Add(t, job.priority, AmountsOf(plan.allocations));
  rerank_ = true;
  ++epoch_;
  RoomChanged(touched);
  result_.stats.suspended += static_cast<int>(plan.moved.size() + plan.suspended.size());
  result_.stats.moved += static_cast<int>(plan.moved.size());
  Decide(j, DecisionKind::kPreempt, Keep(reason), std::move(plan.allocations));
  plan.moved.insert(plan.moved.end(), plan.suspended.begin(), plan.suspended.end());
  result_.decisions.back().victims = std::move(plan.moved);
}

// Room may have appeared on `nodes`: shapes known not to fit are asked again where it did.
void Pass::RoomChanged(const std::vector<int>& nodes) {
  ++room_epoch_;
  frontier_.Clear();
  for (int n : nodes) touched_.push_back({room_epoch_, n});
}

void Pass::Commit(int j, int t, VictimChoice choice, bool within) {
  const QueueJob& job = jobs_[j];
  std::string reason;
  for (int v : choice.victims) {
    const QueueJob& victim = jobs_[v];
    for (const Allocation& a : victim.allocations) CheckOk(state_.Release(a), "ChooseVictims checked it is booked");
    const bool above = ledger_.AboveGuarantee(tenant_of_[v]);
    const VictimVerdict why =
        JudgeVictim(job, within, victim, above, options_.rules, now_) == VictimVerdict::kByPriority
            ? VictimVerdict::kByPriority
            : VictimVerdict::kByGuarantee;
    ledger_.Remove(tenant_of_[v], victim.priority, HeldBy(victim));
    taken_[v] = true;
    if (!reason.empty()) reason += "; ";
    reason += PreemptorReason(victim, TenantName(v), why, job, TenantName(j));
    result_.suspensions.push_back({v, j, VictimReason(victim, TenantName(v), why, job, TenantName(j)), {}});
  }
  for (const Allocation& a : choice.allocations) {
    CheckOk(state_.Apply(a), "ChooseVictims placed it against the state the victims leave");
  }
  placer_.OnBooked(state_, job.request, choice.allocations);
  ledger_.Add(t, job.priority, AmountsOf(choice.allocations));
  ++epoch_;
  ++room_epoch_;
  frontier_.Clear();
  for (int v : choice.victims) {
    for (const Allocation& a : jobs_[v].allocations) touched_.push_back({room_epoch_, a.node});
  }
  rerank_ = true;
  result_.stats.suspended += static_cast<int>(choice.victims.size());
  Decide(j, DecisionKind::kPreempt, Keep(reason), std::move(choice.allocations));
  result_.decisions.back().victims = std::move(choice.victims);
}

// Most of a pass's 100,000 decisions are waits without allocations: built in place, nothing to move.
JobDecision& Pass::Decide(int j, DecisionKind kind, std::string_view reason) {
  PassStats& s = result_.stats;
  switch (kind) {
    case DecisionKind::kPlace:
      ++s.placed;
      break;
    case DecisionKind::kPreempt:
      ++s.preempting;
      break;
    case DecisionKind::kWait:
      ++s.waiting;
      top_waiting_priority_ = std::max(top_waiting_priority_, current_priority_);
      break;
    case DecisionKind::kNeverFits:
      ++s.never_fits;
      break;
    case DecisionKind::kRejected:
      ++s.rejected;
      break;
  }
  JobDecision& d = result_.decisions.emplace_back();
  d.job = j;
  d.kind = kind;
  d.reason = reason;
  return d;
}

}  // namespace

std::string_view DecisionKindName(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::kPlace:
      return "place";
    case DecisionKind::kPreempt:
      return "preempt";
    case DecisionKind::kWait:
      return "wait";
    case DecisionKind::kNeverFits:
      return "never fits";
    case DecisionKind::kRejected:
      return "rejected";
  }
  return "unknown";
}

PassResult RunSchedulingPass(const std::vector<QueueJob>& jobs, const std::vector<Tenant>& tenants, ClusterState& state,
                             JobPlacer& placer, TimeMicros now, const PassOptions& options) {
  return Pass(jobs, tenants, state, placer, now, options).Run();
}

}  // namespace xpool
