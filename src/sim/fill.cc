#include "sim/fill.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <thread>

#include "scheduler/policy/fgd.h"
#include "scheduler/schedule.h"
#include "scheduler/scheduler.h"
#include "sim/internal/fill_points.h"
#include "sim/mig_fill.h"

namespace xpool::sim {

namespace {

// The published simulator's composition (Composition::kTraceThenSample, fill.h).
std::vector<const TracePod*> TraceThenSample(const std::vector<TracePod>& pods, int64_t goal, Rng& rng) {
  std::vector<const TracePod*> out;
  out.reserve(pods.size());
  int64_t requested = 0;
  for (const TracePod& p : pods) {
    out.push_back(&p);
    requested += PodGpuMilli(p);
  }
  std::shuffle(out.begin(), out.end(), rng);
  if (requested > goal) {  // tune down: drop random pods (and add none)
    while (requested > goal && !out.empty()) {
      std::uniform_int_distribution<size_t> victim(0, out.size() - 1);
      const size_t i = victim(rng);
      requested -= PodGpuMilli(*out[i]);
      out.erase(out.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return out;
  }
  std::uniform_int_distribution<size_t> pick(0, pods.size() - 1);
  while (true) {  // tune up: append draws until the next one would pass the goal (checked by its per-GPU share)
    const TracePod* p = &pods[pick(rng)];
    if (requested + p->gpu_milli > goal) break;
    out.push_back(p);
    requested += PodGpuMilli(*p);
  }
  return out;
}

}  // namespace

bool ParseComposition(std::string_view text, Composition* out) {
  if (text == "sample") {
    *out = Composition::kSample;
  } else if (text == "trace-then-sample") {
    *out = Composition::kTraceThenSample;
  } else {
    return false;
  }
  return true;
}

std::vector<const TracePod*> SamplePods(const std::vector<TracePod>& pods, int64_t gpu_capacity_milli, int tune_percent,
                                        uint64_t seed, Composition composition) {
  std::vector<const TracePod*> out;
  if (pods.empty()) return out;
  bool any_gpu = false;
  for (const TracePod& p : pods) any_gpu |= PodGpuMilli(p) > 0;
  if (!any_gpu) return out;
  Rng rng(seed);
  const int64_t goal = gpu_capacity_milli * tune_percent / 100;
  if (composition == Composition::kTraceThenSample) return TraceThenSample(pods, goal, rng);
  std::uniform_int_distribution<size_t> pick(0, pods.size() - 1);
  int64_t requested = 0;
  while (requested < goal) {
    const TracePod* p = &pods[pick(rng)];
    out.push_back(p);
    requested += PodGpuMilli(*p);
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

namespace {

// Forwards to a policy, changing only how equal scores are broken ("name@first|last|random", for ablations;
// "name@T/U" breaks a GPU request's ties by T and a CPU-only request's by U, switching in OnArrival).
class TieBreakOverride final : public PlacementPolicy {
 public:
  TieBreakOverride(std::unique_ptr<PlacementPolicy> inner, TieBreak gpu_tie, TieBreak cpu_tie)
      : inner_(std::move(inner)), gpu_tie_(gpu_tie), cpu_tie_(cpu_tie), tie_(gpu_tie) {}
  std::string_view name() const override { return inner_->name(); }
  bool Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate, Rng& rng,
             int64_t* score, std::vector<int>* chosen_devices) override {
    return inner_->Score(state, request, candidate, rng, score, chosen_devices);
  }
  TieBreak tie_break() const override { return tie_; }
  // The ordered walk assumes one tie-break for every request: offer no key when they differ.
  ScoringTraits traits() const override {
    ScoringTraits t = inner_->traits();
    t.node_order_key = t.node_order_key && gpu_tie_ == cpu_tie_;
    return t;
  }
  uint64_t ScoreEpoch() const override { return inner_->ScoreEpoch(); }
  void MemoryRange(const ClusterState& state, int node, const TaskRequest& request, int64_t* lo, int64_t* hi) override {
    inner_->MemoryRange(state, node, request, lo, hi);
  }
  uint64_t NodeTag(const ClusterState& state, int node) const override { return inner_->NodeTag(state, node); }
  int64_t NodeOrderKey(const ClusterState& state, int node) const override { return inner_->NodeOrderKey(state, node); }
  int64_t ScoreBound(const ClusterState& state, int node) override { return inner_->ScoreBound(state, node); }
  int64_t RequestScoreBound(const TaskRequest& request) const override { return inner_->RequestScoreBound(request); }
  void OnArrival(const TaskRequest& request) override {
    tie_ = request.wants_devices() ? gpu_tie_ : cpu_tie_;
    inner_->OnArrival(request);
  }
  void OnPlaced(const ClusterState& state, const TaskRequest& request, const Allocation& allocation) override {
    inner_->OnPlaced(state, request, allocation);
  }

 private:
  std::unique_ptr<PlacementPolicy> inner_;
  TieBreak gpu_tie_;
  TieBreak cpu_tie_;
  TieBreak tie_;
};

}  // namespace

Result<std::unique_ptr<PlacementPolicy>> MakeFillPolicy(const std::string& name, const TargetWorkload& target) {
  const size_t at = name.find('@');
  if (at != std::string::npos) {
    auto parse = [](const std::string& text, TieBreak* t) {
      if (text == "first") {
        *t = TieBreak::kFirst;
      } else if (text == "last") {
        *t = TieBreak::kLast;
      } else if (text == "random") {
        *t = TieBreak::kRandom;
      } else {
        return false;
      }
      return true;
    };
    const std::string tie = name.substr(at + 1);
    const size_t slash = tie.find('/');
    TieBreak gpu_tie, cpu_tie;
    if (!parse(tie.substr(0, slash), &gpu_tie) ||
        !parse(slash == std::string::npos ? tie : tie.substr(slash + 1), &cpu_tie)) {
      return InvalidArgumentError("policy \"" + name +
                                  "\": the tie-break after @ must be first, last or random (or GPU/CPU, e.g. "
                                  "first/last)");
    }
    ASSIGN_OR_RETURN(std::unique_ptr<PlacementPolicy> inner, MakeFillPolicy(name.substr(0, at), target));
    return std::unique_ptr<PlacementPolicy>(std::make_unique<TieBreakOverride>(std::move(inner), gpu_tie, cpu_tie));
  }
  if (name == "fgd") return std::unique_ptr<PlacementPolicy>(std::make_unique<FgdPolicy>(target));
  if (IsMigFillPolicy(name)) {
    return InvalidArgumentError("policy \"" + name + "\" is a MIG run, not a placement policy: only `xpool sim fill` " +
                                "takes it (sim/mig_fill.h)");
  }
  return MakePolicy(name);
}

Status CheckFillPolicyName(const std::string& name) {
  if (IsMigFillPolicy(name)) return MigFillModel(name).status();
  return MakeFillPolicy(name, TargetWorkload()).status();
}

namespace {

// Keeps Σ_n F_n up to date by re-measuring only the node that changed.
class FragmentTracker {
 public:
  FragmentTracker(const ClusterState& state, const TargetWorkload& target) : target_(target), meter_(&target) {
    node_weighted_.resize(state.node_count());
    for (int n = 0; n < state.node_count(); ++n) {
      ReadNodeFree(state, n, &scratch_);
      node_weighted_[n] = meter_.Weighted(scratch_);
      weighted_ += node_weighted_[n];
    }
  }
  void Update(const ClusterState& state, int node) {
    ReadNodeFree(state, node, &scratch_);
    const int64_t w = meter_.Weighted(scratch_);
    weighted_ += w - node_weighted_[node];
    node_weighted_[node] = w;
  }
  // Fragmented GPU in milli.
  double milli() const {
    return target_.total_count() > 0 ? static_cast<double>(weighted_) / static_cast<double>(target_.total_count())
                                     : 0.0;
  }

 private:
  const TargetWorkload& target_;
  FragmentMeter meter_;
  std::vector<int64_t> node_weighted_;
  int64_t weighted_ = 0;
  NodeFree scratch_;
};

}  // namespace

ClusterState OrderNodes(const ClusterState& cluster, NodeOrder order, uint64_t seed) {
  if (order == NodeOrder::kTrace) return cluster;
  std::vector<int> perm(cluster.node_count());
  for (int i = 0; i < cluster.node_count(); ++i) perm[i] = i;
  Rng rng(seed ^ 0x6a09e667f3bcc909ULL);  // a stream of its own: sampling and tie draws stay as they were
  std::shuffle(perm.begin(), perm.end(), rng);
  ClusterState out;
  for (int i : perm) CheckOk(out.AddNode(cluster.node(i)), "valid nodes of a valid cluster");
  return out;
}

Result<FillCurve> RunFill(const ClusterState& cluster, const std::vector<TracePod>& pods, const FillOptions& options) {
  if (options.tune_percent <= 0 || options.tune_percent > 1000) {
    return InvalidArgumentError("tune must be between 1 and 1000 percent");
  }
  if (IsMigFillPolicy(options.policy)) return RunMigFill(cluster, pods, options);
  ClusterState state = OrderNodes(cluster, options.node_order, options.seed);
  FillCurve curve;
  curve.gpu_capacity_milli = state.totals().device_compute_capacity_milli;
  if (curve.gpu_capacity_milli <= 0) return InvalidArgumentError("the cluster has no GPU");
  std::vector<const TracePod*> sample =
      SamplePods(pods, curve.gpu_capacity_milli, options.tune_percent, options.seed, options.composition);
  if (sample.empty()) return InvalidArgumentError("the workload has no pod asking for a GPU");

  std::vector<TaskRequest> requests;
  requests.reserve(sample.size());
  for (const TracePod* p : sample) requests.push_back(PodRequest(*p));
  TargetWorkload target;
  if (options.composition == Composition::kTraceThenSample) {  // the list's shapes, each pod once
    std::vector<TaskRequest> listed;
    listed.reserve(pods.size());
    for (const TracePod& p : pods) listed.push_back(PodRequest(p));
    target = TargetWorkload::FromRequests(listed);
  } else {
    target = TargetWorkload::FromRequests(requests);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<PlacementPolicy> policy, MakeFillPolicy(options.policy, target));

  const int points = options.tune_percent + 1;
  curve.allocation_pct.reserve(points);
  curve.frag_pct.reserve(points);
  curve.frag_ratio_pct.reserve(points);
  FragmentTracker frag(state, target);
  const double capacity = static_cast<double>(curve.gpu_capacity_milli);
  auto record = [&] {
    const ClusterTotals& t = state.totals();
    const double idle = capacity - static_cast<double>(t.device_compute_allocated_milli);
    curve.allocation_pct.push_back(100.0 * static_cast<double>(t.device_compute_allocated_milli) / capacity);
    curve.frag_pct.push_back(100.0 * frag.milli() / capacity);
    curve.frag_ratio_pct.push_back(idle > 0 ? 100.0 * frag.milli() / idle : 0.0);
  };
  record();  // arrived 0 %

  Rng rng(options.seed ^ 0x9e3779b97f4a7c15ULL);
  // One Scheduler per run: cached per-node scores for cacheable policies, no "why not" pass for skipped pods.
  Scheduler scheduler(state, *policy, SchedulerOptions{.explain = false});
  int64_t arrived_milli = 0;
  for (size_t i = 0; i < sample.size(); ++i) {
    const TaskRequest& request = requests[i];
    const int64_t arrived_after = arrived_milli + PodGpuMilli(*sample[i]);
    internal::RecordPassedPoints(curve, points, arrived_after, record);
    arrived_milli = arrived_after;
    policy->OnArrival(request);
    ScheduleOutcome out = scheduler.Schedule(request, rng);
    ++curve.pods_arrived;
    if (out.kind == OutcomeKind::kPlaced) {
      Status applied = state.Apply(out.allocation);
      if (!applied.ok()) return applied.WithContext("applying the placement of " + sample[i]->name);
      policy->OnPlaced(state, request, out.allocation);
      frag.Update(state, out.allocation.node);
      ++curve.pods_placed;
    } else {
      ++curve.pods_skipped;
    }
    if (options.record_placements) {
      const bool placed = out.kind == OutcomeKind::kPlaced;
      curve.placements.push_back({.pod = sample[i]->name,
                                  .node = placed ? state.node(out.allocation.node).name : std::string(),
                                  .devices = placed ? out.allocation.devices : std::vector<DeviceGrant>()});
    }
  }
  while (static_cast<int>(curve.allocation_pct.size()) < points) record();
  return curve;
}

Status RunParallel(int count, int jobs, const std::function<Status(int)>& fn) {
  jobs = std::max(1, std::min(jobs, count));
  std::atomic<int> next{0};
  std::mutex mu;
  Status first_error;
  auto worker = [&] {
    while (true) {
      const int i = next.fetch_add(1);
      if (i >= count) return;
      Status s = fn(i);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = s;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < jobs; ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  return first_error;
}

}  // namespace xpool::sim
