#include "k8s/time_share_loop.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <tuple>

namespace xpool::k8s {
namespace {

constexpr TimeMicros kHour = 3600 * kMicrosPerSecond;
// Waiting pods of suspended work that the filter keeps a place for (each costs a fit check per filtered node).
constexpr size_t kMaxResumedHeld = 8;

std::pair<std::string, std::string> SplitKey(const std::string& key) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

}  // namespace

void TimeShareLoop::Start() {
  stop_ = false;
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      IgnoreError(RunOnce(), "counted in the stats; the next pass retries");
      std::unique_lock<std::mutex> lock(wake_mu_);
      wake_.wait_for(lock, std::chrono::milliseconds(options_.interval_ms), [this] { return stop_.load(); });
    }
  });
}

void TimeShareLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool TimeShareLoop::Ahead(int pa, TimeMicros qa, const std::string& ua, int pb, TimeMicros qb, const std::string& ub) {
  return std::make_tuple(-pa, qa, ua) < std::make_tuple(-pb, qb, ub);
}

TimeMicros TimeShareLoop::QueuedLocked(const std::string& key, TimeMicros now) {
  auto [it, added] = queued_.emplace(key, now);
  last_seen_[key] = now;
  return it->second;
}

int TimeShareLoop::SuspensionsLocked(const std::string& key, TimeMicros now) const {
  auto it = suspensions_.find(key);
  if (it == suspensions_.end()) return 0;
  return static_cast<int>(
      std::count_if(it->second.begin(), it->second.end(), [&](TimeMicros t) { return now - t < kHour; }));
}

Status TimeShareLoop::RunOnce() {
  std::lock_guard<std::mutex> pass(pass_mu_);
  const TimeMicros now = clock_.NowMicros();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.passes;
  }
  if (Status s = sync_.Check(); !s.ok()) {  // never act on a view that may be stale
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.skipped_unsynced;
    return s;
  }
  RETURN_IF_ERROR(Deliver(now));
  const std::vector<Waiting> line = Line(now);
  {
    std::lock_guard<std::mutex> lock(mu_);
    resumed_.clear();
    for (const Waiting& w : line) {
      if (resumed_.size() < kMaxResumedHeld && SuspensionsLocked(QueueKey(w.pod, w.terms), now) > 0) {
        resumed_.push_back(w);
      }
    }
  }
  const std::vector<std::string> nodes = cluster_.NodeNames();
  int searches = 0;
  for (const Waiting& w : line) {
    if (searches >= options_.max_preemptors_per_pass) break;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (claims_.count(w.pod.uid) != 0) continue;  // its victims are leaving
    }
    const std::vector<NodeFit> fits = cluster_.Evaluate(w.pod.uid, w.demand, nodes);
    const bool fits_now =
        std::any_of(fits.begin(), fits.end(), [](const NodeFit& f) { return f.kind == NodeFit::Kind::kFits; });
    const bool helps =
        std::any_of(fits.begin(), fits.end(), [](const NodeFit& f) { return f.kind == NodeFit::Kind::kWait; });
    if (fits_now || !helps) continue;  // kube-scheduler will place it, or no eviction can
    ++searches;
    RETURN_IF_ERROR(Preempt(w, nodes, now));
  }
  return Status::Ok();
}

Status TimeShareLoop::Deliver(TimeMicros now) {
  std::map<std::string, InFlight> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = in_flight_.begin(); it != in_flight_.end();) {
      if (!cluster_.Holds(it->first)) {  // exited or deleted: its devices are free
        it = in_flight_.erase(it);
        continue;
      }
      if (!it->second.evicted && now >= it->second.deadline) due.insert(*it);
      ++it;
    }
    for (auto it = claims_.begin(); it != claims_.end();) {
      it = now > it->second.expires ? claims_.erase(it) : std::next(it);
    }
    for (auto& [key, times] : suspensions_) {
      times.erase(std::remove_if(times.begin(), times.end(), [&](TimeMicros t) { return now - t >= kHour; }),
                  times.end());
    }
    for (auto it = last_seen_.begin(); it != last_seen_.end();) {
      if (now - it->second < kHour || SuspensionsLocked(it->first, now) > 0) {
        ++it;
        continue;
      }
      queued_.erase(it->first);
      suspensions_.erase(it->first);
      it = last_seen_.erase(it);
    }
  }
  for (const auto& [uid, v] : due) {
    Status s = api_.EvictPod(v.ns, v.name, v.grace_seconds);
    std::lock_guard<std::mutex> lock(mu_);
    if (s.ok() || s.code() == StatusCode::kNotFound) {
      if (s.ok()) ++stats_.evicted;
      if (auto it = in_flight_.find(uid); it != in_flight_.end()) it->second.evicted = true;
      continue;
    }
    if (s.code() == StatusCode::kResourceExhausted) {  // 429: a PodDisruptionBudget refuses for now; next pass
      ++stats_.eviction_refused;
      continue;
    }
    ++stats_.api_errors;
    return s.WithContext("time-sharing: evicting pod " + v.ns + "/" + v.name);
  }
  return Status::Ok();
}

std::vector<TimeShareLoop::Waiting> TimeShareLoop::Line(TimeMicros now) {
  std::vector<Waiting> line;
  std::unordered_set<std::string> waiting;
  for (PodInfo& pod : cluster_.PendingPods()) {
    if (!options_.scheduler_name.empty() && pod.scheduler_name != options_.scheduler_name) continue;
    Result<PodTerms> terms = PodTermsOf(pod);
    Result<PodDemand> demand = PodToDemand(pod);
    if (!terms.ok() || !demand.ok() || !demand->managed()) continue;  // the filter tells the user what is wrong
    waiting.insert(pod.uid);
    line.push_back({std::move(pod), std::move(terms).value(), std::move(demand).value(), 0});
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (Waiting& w : line) w.queued = QueuedLocked(QueueKey(w.pod, w.terms), now);
  for (auto it = claims_.begin(); it != claims_.end();) {  // a preemptor that bound (or left) gives up its claim
    it = waiting.count(it->first) == 0 ? claims_.erase(it) : std::next(it);
  }
  std::sort(line.begin(), line.end(), [](const Waiting& a, const Waiting& b) {
    return Ahead(a.terms.priority, a.queued, a.pod.uid, b.terms.priority, b.queued, b.pod.uid);
  });
  return line;
}

VictimSearch TimeShareLoop::SearchLocked(const PodTerms& terms, const std::string& pod_key,
                                         std::vector<std::string> nodes, TimeMicros now) const {
  VictimSearch search;
  search.preemptor = terms;
  search.preemptor_key = pod_key;
  search.nodes = std::move(nodes);
  search.tenants = &options_.tenants;
  search.rules = options_.rules;
  search.now = now;
  for (const auto& [key, times] : suspensions_) {
    if (int n = SuspensionsLocked(key, now); n > 0) search.suspensions_last_hour[key] = n;
  }
  for (const auto& [uid, v] : in_flight_) search.excluded.insert(uid);
  return search;
}

Status TimeShareLoop::Preempt(const Waiting& w, const std::vector<std::string>& nodes, TimeMicros now) {
  VictimSearch search;
  {
    std::lock_guard<std::mutex> lock(mu_);
    search = SearchLocked(w.terms, w.pod.Key(), nodes, now);
  }
  ASSIGN_OR_RETURN(VictimPlan plan, cluster_.ChooseVictims(w.demand, search));
  if (!plan.found) return Status::Ok();
  TimeMicros last_deadline = now;
  for (const PodVictim& v : plan.victims) {
    const auto [ns, name] = SplitKey(v.pod_key);
    // The pod as the API server has it now: still the same pod (not recreated under its name), and its grace.
    Result<PodInfo> pod = api_.GetPod(ns, name);
    if (!pod.ok() && pod.status().code() == StatusCode::kNotFound) continue;
    Status s = pod.ok() ? Status::Ok() : pod.status();
    if (s.ok() && pod->uid != v.uid) continue;
    const TimeMicros deadline = now + (pod.ok() ? pod->grace_seconds : 0) * kMicrosPerSecond;
    if (s.ok()) {
      s = api_.PatchPodAnnotations(ns, name, {{std::string(kSuspendAnnotation), FormatRfc3339(deadline)}});
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!s.ok()) {
      ++stats_.api_errors;
      return s.WithContext("time-sharing: suspending pod " + v.pod_key + " for " + w.pod.Key());
    }
    ++stats_.suspended;
    suspensions_[v.queue_key].push_back(now);
    last_seen_[v.queue_key] = now;
    queued_.emplace(v.queue_key, now);
    in_flight_[v.uid] = {ns, name, deadline, pod->grace_seconds, false};
    last_deadline = std::max(last_deadline, deadline);
  }
  std::lock_guard<std::mutex> lock(mu_);
  claims_[w.pod.uid] = {w.pod.Key(), plan.node, w.terms.priority, w.queued, last_deadline + options_.claim_slack};
  return Status::Ok();
}

std::string TimeShareLoop::HoldReason(const PodInfo& pod, const PodTerms& terms, const std::string& node) {
  const TimeMicros now = clock_.NowMicros();
  std::lock_guard<std::mutex> lock(mu_);
  const TimeMicros queued = QueuedLocked(QueueKey(pod, terms), now);
  for (const auto& [uid, claim] : claims_) {
    if (uid == pod.uid || claim.node != node) continue;
    if (!Ahead(claim.priority, claim.queued, uid, terms.priority, queued, pod.uid)) continue;
    return "node " + node + ": its devices are being freed for pod " + claim.pod_key + " (priority " +
           std::to_string(claim.priority) + "), which is ahead in line";
  }
  for (const Waiting& w : resumed_) {
    if (w.pod.uid == pod.uid || !Ahead(w.terms.priority, w.queued, w.pod.uid, terms.priority, queued, pod.uid)) {
      continue;
    }
    if (cluster_.Holds(w.pod.uid)) continue;  // bound since the last pass
    if (cluster_.Evaluate(w.pod.uid, w.demand, {node}).front().kind != NodeFit::Kind::kFits) continue;
    return "node " + node + ": pod " + w.pod.Key() + " (priority " + std::to_string(w.terms.priority) +
           "), resumed work ahead in line, fits here first";
  }
  return "";
}

Result<VictimPlan> TimeShareLoop::ChooseOnNode(const PodInfo& pod, const PodTerms& terms, const PodDemand& demand,
                                               const std::string& node) {
  VictimSearch search;
  {
    std::lock_guard<std::mutex> lock(mu_);
    search = SearchLocked(terms, pod.Key(), {node}, clock_.NowMicros());
  }
  return cluster_.ChooseVictims(demand, search);
}

TimeShareStats TimeShareLoop::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  TimeShareStats out = stats_;
  out.in_flight = static_cast<int>(in_flight_.size());
  out.claims = static_cast<int>(claims_.size());
  return out;
}

int TimeShareLoop::SuspensionsLastHour(const std::string& queue_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return SuspensionsLocked(queue_key, clock_.NowMicros());
}

TimeMicros TimeShareLoop::QueuedSince(const std::string& queue_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = queued_.find(queue_key);
  return it == queued_.end() ? 0 : it->second;
}

}  // namespace xpool::k8s
