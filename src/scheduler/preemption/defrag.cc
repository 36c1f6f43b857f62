#include "scheduler/preemption/defrag.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "scheduler/fit.h"

namespace xpool {
namespace {

int64_t GpuMilli(const Allocation& a) {
  int64_t m = 0;
  for (const DeviceGrant& g : a.devices) m += g.compute_milli;
  return m;
}

int64_t HeldGpuMilli(const ClusterState& state, int node) {
  int64_t m = 0;
  for (const DeviceUsage& d : state.usage(node).devices) m += d.compute_milli;
  return m;
}

bool FitsOn(const ClusterState& state, int node, const TaskRequest& request) {
  NodeCandidate candidate;
  NodeVerdict verdict;
  return FitNode(state, node, request, /*ignore_usage=*/false, &candidate, &verdict);
}

// One node's attempt: books on `state` as it goes and undoes everything on destruction unless kept.
class Attempt {
 public:
  Attempt(ClusterState& state, const std::vector<QueueJob>& jobs) : state_(state), jobs_(jobs) {}
  Attempt(const Attempt&) = delete;
  Attempt& operator=(const Attempt&) = delete;
  ~Attempt() { Undo(); }

  Status Leave(int v) {
    const Allocation& a = jobs_[v].allocations.front();
    Status s = state_.Release(a);
    if (!s.ok()) {
      return InternalError("job " + jobs_[v].id.ToString() +
                           " is not booked in the cluster state as it claims: " + s.message());
    }
    left_.push_back(v);
    return Status::Ok();
  }
  void Return(int v) {  // undo Leave(v)
    CheckOk(state_.Apply(jobs_[v].allocations.front()), "re-applying what Leave released");
    left_.erase(std::find(left_.begin(), left_.end(), v));
  }
  bool Book(const std::vector<Allocation>& allocations) {
    for (size_t i = 0; i < allocations.size(); ++i) {
      if (!state_.Apply(allocations[i]).ok()) {
        for (size_t k = 0; k < i; ++k) CheckOk(state_.Release(allocations[k]), "releasing what was just applied");
        return false;
      }
    }
    booked_.push_back(allocations);
    return true;
  }
  void Undo() {
    for (auto it = booked_.rbegin(); it != booked_.rend(); ++it) {
      for (const Allocation& a : *it) CheckOk(state_.Release(a), "releasing what Book applied");
    }
    booked_.clear();
    for (auto it = left_.rbegin(); it != left_.rend(); ++it) {
      CheckOk(state_.Apply(jobs_[*it].allocations.front()), "re-applying what Leave released");
    }
    left_.clear();
  }
  void Unbook() {  // undo the last Book
    for (const Allocation& a : booked_.back()) CheckOk(state_.Release(a), "releasing what Book applied");
    booked_.pop_back();
  }
  const std::vector<int>& left() const { return left_; }
  bool HasLeft(int v) const { return std::find(left_.begin(), left_.end(), v) != left_.end(); }

 private:
  ClusterState& state_;
  const std::vector<QueueJob>& jobs_;
  std::vector<int> left_;
  std::vector<std::vector<Allocation>> booked_;
};

// Step 3's second hop for `v`, which found no room: on another node a movable job `w` leaves so that `v` fits
// there, and `w` finds room elsewhere (both by the placer). Nodes in order, their jobs least GPU first; such
// pairs (v fits once w leaves) are tried while `hops_left`, the search's budget, lasts. On success both are booked
// and added to `plan` (v, then w).
constexpr int kMaxHopsPerSearch = 16;
Status SecondHop(Attempt& attempt, ClusterState& state, const std::vector<QueueJob>& jobs,
                 const std::vector<std::vector<int>>& by_node, int opened, int v, JobPlacer& placer, MovePlan& plan,
                 int& hops_left, bool* done) {
  *done = false;
  for (int x = 0; x < static_cast<int>(by_node.size()) && hops_left > 0; ++x) {
    if (x == opened || x == jobs[v].allocations.front().node) continue;
    for (auto it = by_node[x].rbegin(); it != by_node[x].rend() && hops_left > 0; ++it) {  // least GPU first
      const int w = *it;
      if (attempt.HasLeft(w)) continue;
      RETURN_IF_ERROR(attempt.Leave(w));
      if (!FitsOn(state, x, jobs[v].request)) {
        attempt.Return(w);
        continue;
      }
      --hops_left;
      JobPlacement mv = placer.Probe(state, jobs[v].request, 1);
      if (mv.kind == OutcomeKind::kPlaced && attempt.Book(mv.allocations)) {
        JobPlacement mw = placer.Probe(state, jobs[w].request, 1);
        if (mw.kind == OutcomeKind::kPlaced && attempt.Book(mw.allocations)) {
          for (auto [job, to] : {std::pair{v, &mv}, std::pair{w, &mw}}) {
            plan.moved.push_back(job);
            plan.moved_gpu_milli += GpuMilli(jobs[job].allocations.front());
            plan.move_to.push_back(std::move(to->allocations));
          }
          *done = true;
          return Status::Ok();
        }
        attempt.Unbook();
      }
      attempt.Return(w);
    }
  }
  return Status::Ok();
}

// Steps 2 and 3 on one node; `on_node` is sorted in leaving order. Leaves `state` as found. A miss is counted
// in `misses`.
Result<MovePlan> TryNode(ClusterState& state, const std::vector<QueueJob>& jobs,
                         const std::vector<std::vector<int>>& by_node, int node, const QueueJob& job, JobPlacer& placer,
                         const std::vector<bool>& suspendable, int& hops_left, MoveMisses& misses) {
  const std::vector<int>& on_node = by_node[node];
  MovePlan plan;
  Attempt attempt(state, jobs);
  bool fits = false;
  for (int v : on_node) {
    RETURN_IF_ERROR(attempt.Leave(v));
    if ((fits = FitsOn(state, node, job.request))) break;
  }
  if (!fits) {
    ++misses.pinned;
    return plan;
  }
  // Put back, smallest first, each one whose leaving is not needed.
  const std::vector<int> out = attempt.left();
  for (auto it = out.rbegin(); it != out.rend(); ++it) {
    attempt.Return(*it);
    if (!FitsOn(state, node, job.request)) RETURN_IF_ERROR(attempt.Leave(*it));  // needed after all
  }
  JobPlacement p = placer.Probe(state, job.request, job.replicas);
  if (p.kind != OutcomeKind::kPlaced || !attempt.Book(p.allocations)) {
    ++misses.placer_refused;
    return plan;
  }
  plan.allocations = std::move(p.allocations);
  plan.node = plan.allocations.front().node;
  // Those that must find room first, then the suspendable ones; each group most GPU first (the leaving order).
  for (const bool second : {false, true}) {
    for (int v : on_node) {
      if (suspendable[v] != second ||
          std::find(attempt.left().begin(), attempt.left().end(), v) == attempt.left().end()) {
        continue;
      }
      JobPlacement m = placer.Probe(state, jobs[v].request, 1);
      if (m.kind == OutcomeKind::kPlaced && attempt.Book(m.allocations)) {
        plan.moved.push_back(v);
        plan.moved_gpu_milli += GpuMilli(jobs[v].allocations.front());
        plan.move_to.push_back(std::move(m.allocations));
        continue;
      }
      bool hopped = false;
      RETURN_IF_ERROR(SecondHop(attempt, state, jobs, by_node, node, v, placer, plan, hops_left, &hopped));
      if (hopped) continue;
      if (second) {
        plan.suspended.push_back(v);  // stays released: it waits in the queue
      } else {
        const TaskRequest& q = jobs[v].request;
        ++(q.device_count == 0 ? misses.no_room_cpu : q.exclusive() ? misses.no_room_whole : misses.no_room_shared);
        return MovePlan{};
      }
    }
  }
  plan.found = true;
  return plan;  // the Attempt undoes the bookings
}

}  // namespace

Result<MovePlan> PlanMoves(ClusterState& state, const std::vector<QueueJob>& jobs, const std::vector<int>& movable,
                           const QueueJob& job, JobPlacer& placer, int max_nodes, const std::vector<int>& suspendable) {
  MovePlan best;
  if (job.replicas != 1 || movable.empty() || max_nodes <= 0) return best;
  std::vector<bool> may_suspend(jobs.size(), false);
  for (int v : suspendable) {
    if (v >= 0 && v < static_cast<int>(jobs.size())) may_suspend[v] = true;
  }
  std::vector<std::vector<int>> by_node(state.node_count());
  for (int v : movable) {
    if (jobs[v].allocations.size() != 1) continue;
    const int n = jobs[v].allocations.front().node;
    if (n >= 0 && n < state.node_count()) by_node[n].push_back(v);
  }
  for (std::vector<int>& on_node : by_node) {  // the leaving order: most GPU first, then least work lost
    std::sort(on_node.begin(), on_node.end(), [&](int a, int b) {
      const QueueJob& x = jobs[a];
      const QueueJob& y = jobs[b];
      return std::make_tuple(-GpuMilli(x.allocations.front()), -x.last_start, x.id.value()) <
             std::make_tuple(-GpuMilli(y.allocations.front()), -y.last_start, y.id.value());
    });
  }
  std::vector<std::pair<int64_t, int>> candidates;  // (GPU held, node)
  NodeCandidate candidate;
  NodeVerdict verdict;
  for (int n = 0; n < state.node_count(); ++n) {
    if (by_node[n].empty() || !FitNode(state, n, job.request, /*ignore_usage=*/true, &candidate, &verdict)) {
      continue;
    }
    candidates.push_back({HeldGpuMilli(state, n), n});
  }
  std::sort(candidates.begin(), candidates.end());
  if (static_cast<int>(candidates.size()) > max_nodes) candidates.resize(max_nodes);
  MoveMisses misses;
  int hops_left = kMaxHopsPerSearch;
  for (const auto& [held, n] : candidates) {
    ASSIGN_OR_RETURN(MovePlan plan, TryNode(state, jobs, by_node, n, job, placer, may_suspend, hops_left, misses));
    if (!plan.found) continue;
    if (!best.found || std::make_tuple(plan.suspended.size(), plan.moved.size(), plan.moved_gpu_milli) <
                           std::make_tuple(best.suspended.size(), best.moved.size(), best.moved_gpu_milli)) {
      best = std::move(plan);
      if (best.suspended.empty() && best.moved.size() <= 1) break;
    }
  }
  best.candidates = static_cast<int>(candidates.size());
  best.misses = misses;
  return best;
}

}  // namespace xpool
