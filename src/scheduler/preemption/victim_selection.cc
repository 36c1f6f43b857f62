#include "scheduler/preemption/victim_selection.h"

#include <algorithm>
#include <tuple>
#include <unordered_set>

namespace xpool {
namespace {

// At most this many "can this victim be spared?" placements per search (the pruning step); the
// prefix search itself costs about log2(candidates) placements.
constexpr int kMaxSpareAttempts = 16;

// Suspends (releases) and restores candidates of a search on the scratch state, remembering which
// are out.
class Evictor {
 public:
  Evictor(ClusterState& state, const std::vector<QueueJob>& jobs, const std::vector<int>& ranked)
      : state_(state), jobs_(jobs), ranked_(ranked) {}
  Evictor(const Evictor&) = delete;
  Evictor& operator=(const Evictor&) = delete;
  ~Evictor() { RestoreAll(); }

  Status Suspend(int i) {
    if (static_cast<size_t>(i) >= out_.size()) out_.resize(ranked_.size(), false);  // ranking grew
    if (out_[i]) return Status::Ok();
    const std::vector<Allocation>& allocs = jobs_[ranked_[i]].allocations;
    for (size_t a = 0; a < allocs.size(); ++a) {
      Status s = state_.Release(allocs[a]);
      if (!s.ok()) {
        for (size_t b = 0; b < a; ++b) CheckOk(state_.Apply(allocs[b]), "re-applying what was just released");
        return InternalError("job " + jobs_[ranked_[i]].id.ToString() +
                             " is not booked in the cluster state as it claims: " + s.message());
      }
    }
    out_[i] = true;
    return Status::Ok();
  }
  void Restore(int i) {
    if (static_cast<size_t>(i) >= out_.size() || !out_[i]) return;
    for (const Allocation& a : jobs_[ranked_[i]].allocations) {
      CheckOk(state_.Apply(a), "re-applying what was just released (nothing else changed in between)");
    }
    out_[i] = false;
  }
  // Exactly the first k candidates out.
  Status SetPrefix(int k) {
    for (int i = static_cast<int>(out_.size()) - 1; i >= k; --i) Restore(i);
    for (int i = 0; i < k; ++i) RETURN_IF_ERROR(Suspend(i));
    return Status::Ok();
  }
  void RestoreAll() {
    for (int i = static_cast<int>(out_.size()) - 1; i >= 0; --i) Restore(i);
  }
  bool out(int i) const { return static_cast<size_t>(i) < out_.size() && out_[i]; }

 private:
  ClusterState& state_;
  const std::vector<QueueJob>& jobs_;
  const std::vector<int>& ranked_;
  std::vector<bool> out_;
};

bool UsesAnyNode(const QueueJob& job, const std::unordered_set<int>& nodes) {
  for (const Allocation& a : job.allocations) {
    if (nodes.count(a.node) != 0) return true;
  }
  return false;
}

bool AboveGuarantee(const ResourceAmounts& u, const ResourceAmounts& g) {
  return u.gpu_compute_milli > g.gpu_compute_milli || u.gpu_memory_mib > g.gpu_memory_mib || u.cpu_milli > g.cpu_milli;
}

std::string Describe(const QueueJob& job, const std::string& tenant) {
  return "job " + job.id.ToString() + " (tenant " + tenant + ", priority " + std::to_string(job.priority) + ")";
}

std::string Why(const QueueJob& victim, const std::string& victim_tenant, VictimVerdict why, const QueueJob& preemptor,
                const std::string& preemptor_tenant) {
  if (why == VictimVerdict::kByPriority) {
    return "lower priority (" + std::to_string(victim.priority) + " < " + std::to_string(preemptor.priority) + ")";
  }
  return "tenant " + preemptor_tenant + " is within its guarantee and tenant " + victim_tenant +
         " runs above its guarantee";
}

}  // namespace

std::string_view VictimVerdictName(VictimVerdict verdict) {
  switch (verdict) {
    case VictimVerdict::kByPriority:
      return "lower priority";
    case VictimVerdict::kByGuarantee:
      return "tenant above its guarantee";
    case VictimVerdict::kNotRunning:
      return "not running";
    case VictimVerdict::kNotPreemptible:
      return "not preemptible";
    case VictimVerdict::kSameJob:
      return "the preemptor itself";
    case VictimVerdict::kTooYoung:
      return "started less than min-runtime ago";
    case VictimVerdict::kSuspendedTooOften:
      return "suspended too often in the last hour";
    case VictimVerdict::kNotLowerPriority:
      return "equal or higher priority";
  }
  return "unknown";
}

VictimVerdict JudgeVictim(const QueueJob& preemptor, bool preemptor_within_guarantee, const QueueJob& victim,
                          bool victim_tenant_above_guarantee, const PreemptionRules& rules, TimeMicros now) {
  if (victim.state != QueueJobState::kRunning) return VictimVerdict::kNotRunning;
  if (victim.id == preemptor.id) return VictimVerdict::kSameJob;
  if (!victim.preemptible) return VictimVerdict::kNotPreemptible;
  if (now - victim.last_start < rules.min_runtime) return VictimVerdict::kTooYoung;
  if (victim.suspensions_last_hour >= rules.max_suspensions_per_hour) return VictimVerdict::kSuspendedTooOften;
  if (victim.priority < preemptor.priority) return VictimVerdict::kByPriority;
  if (victim.priority == preemptor.priority && preemptor_within_guarantee && victim_tenant_above_guarantee &&
      victim.tenant != preemptor.tenant) {
    return VictimVerdict::kByGuarantee;
  }
  return VictimVerdict::kNotLowerPriority;
}

namespace {

// A wait as people read it: "45s" under two minutes, else whole minutes rounded up ("10m"), so that the text
// changes about once a minute, not every pass.
std::string WaitText(TimeMicros us) {
  const int64_t s = (std::max<TimeMicros>(us, 0) + kMicrosPerSecond - 1) / kMicrosPerSecond;
  if (s < 120) return std::to_string(s) + "s";
  return std::to_string((s + 59) / 60) + "m";
}

}  // namespace

std::string MinRuntimeNote(const std::vector<QueueJob>& jobs, const std::vector<int>& by_running_order,
                           const std::vector<bool>& excluded, const QueueJob& preemptor, const PreemptionRules& rules,
                           TimeMicros now) {
  constexpr size_t kNamed = 5;  // ids listed; the rest counted
  std::vector<int> young;
  TimeMicros first = 0, last = 0;
  int low = 0, high = 0;
  for (int v : by_running_order) {
    const QueueJob& r = jobs[v];
    if (r.priority >= preemptor.priority) break;  // sorted by priority
    if ((!excluded.empty() && excluded[v]) || r.id == preemptor.id || !r.preemptible ||
        r.state != QueueJobState::kRunning || r.suspensions_last_hour >= rules.max_suspensions_per_hour ||
        now - r.last_start >= rules.min_runtime) {
      continue;
    }
    const TimeMicros eligible_in = r.last_start + rules.min_runtime - now;
    first = young.empty() ? eligible_in : std::min(first, eligible_in);
    last = young.empty() ? eligible_in : std::max(last, eligible_in);
    low = young.empty() ? r.priority : std::min(low, r.priority);
    high = young.empty() ? r.priority : std::max(high, r.priority);
    young.push_back(v);
  }
  if (young.empty()) return "";
  std::string ids;
  for (size_t i = 0; i < young.size() && i < kNamed; ++i) ids += (i == 0 ? "" : ", ") + jobs[young[i]].id.ToString();
  if (young.size() > kNamed) ids += " and " + std::to_string(young.size() - kNamed) + " more";
  const std::string priority = std::to_string(low) + (high != low ? ".." + std::to_string(high) : "");
  const std::string min_runtime = WaitText(rules.min_runtime);
  if (young.size() == 1) {
    return "; job " + ids + " (priority " + priority + ") is inside its min-runtime (" + min_runtime +
           "): it may be suspended for this job in " + WaitText(first);
  }
  return "; jobs " + ids + " (priority " + priority + ") are inside their min-runtime (" + min_runtime +
         "): the first may be suspended for this job in " + WaitText(first) + ", all in " + WaitText(last);
}

std::vector<int> SortRunningForPreemption(const std::vector<QueueJob>& jobs, const std::vector<int>& running,
                                          TimeMicros now) {
  std::vector<int> order = running;
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const QueueJob& x = jobs[a];
    const QueueJob& y = jobs[b];
    return std::make_tuple(x.priority, now - x.last_start, x.id.value()) <
           std::make_tuple(y.priority, now - y.last_start, y.id.value());
  });
  return order;
}

VictimRanking::VictimRanking(const std::vector<QueueJob>& jobs, const std::vector<int>& by_running_order,
                             const std::vector<int>& tenant_of, const std::vector<bool>& excluded,
                             const QueueJob& preemptor, bool preemptor_within_guarantee, const TenantLedger& ledger,
                             const PreemptionRules& rules, TimeMicros now, const std::vector<ResourceAmounts>* held)
    : jobs_(jobs),
      by_running_order_(by_running_order),
      tenant_of_(tenant_of),
      excluded_(excluded),
      preemptor_(preemptor),
      within_(preemptor_within_guarantee),
      ledger_(ledger),
      rules_(rules),
      now_(now),
      held_(held) {
  remaining_.reserve(ledger.size());
  for (int t = 0; t < ledger.size(); ++t) remaining_.push_back(ledger.usage(t));
}

size_t VictimRanking::RankUntil(size_t count) {
  const size_t n = by_running_order_.size();
  while (!done_ && ranked_.size() < count) {
    if (group_ == end_) {  // start the next priority group
      if (group_ >= n || jobs_[by_running_order_[group_]].priority > preemptor_.priority) {
        done_ = true;
        break;
      }
      const int priority = jobs_[by_running_order_[group_]].priority;
      end_ = group_;
      while (end_ < n && jobs_[by_running_order_[end_]].priority == priority) ++end_;
      pass_ = 0;
      next_ = group_;
    }
    if (next_ == end_) {  // tenants above their guarantee first, then the others
      if (pass_ == 0) {
        pass_ = 1;
        next_ = group_;
      } else {
        group_ = end_;
      }
      continue;
    }
    const int v = by_running_order_[next_++];
    const int t = tenant_of_[v];
    if (t < 0 || (!excluded_.empty() && excluded_[v])) continue;
    const bool above = ledger_.AboveGuarantee(t);
    if (above != (pass_ == 0)) continue;
    const bool still_above = AboveGuarantee(remaining_[t], ledger_.tenant(t).guaranteed);
    const VictimVerdict verdict = JudgeVictim(preemptor_, within_, jobs_[v], still_above, rules_, now_);
    if (!IsVictim(verdict)) continue;
    remaining_[t].Subtract(held_ != nullptr ? (*held_)[v] : HeldBy(jobs_[v]));
    ranked_.push_back(v);
  }
  return ranked_.size();
}

std::vector<int> VictimRanking::TakeAll() && {
  RankUntil(static_cast<size_t>(-1));
  return std::move(ranked_);
}

std::vector<int> RankVictims(const std::vector<QueueJob>& jobs, const std::vector<int>& by_running_order,
                             const std::vector<int>& tenant_of, const std::vector<bool>& excluded,
                             const QueueJob& preemptor, bool preemptor_within_guarantee, const TenantLedger& ledger,
                             const PreemptionRules& rules, TimeMicros now, const std::vector<ResourceAmounts>* held) {
  return VictimRanking(jobs, by_running_order, tenant_of, excluded, preemptor, preemptor_within_guarantee, ledger,
                       rules, now, held)
      .TakeAll();
}

namespace {

// Rule 3. `rank_until(k)` makes at least k candidates known in `ranked` (fewer: all are) and
// returns how many are known.
template <typename RankUntil>
Result<VictimChoice> Choose(ClusterState& state, const std::vector<QueueJob>& jobs, const std::vector<int>& ranked,
                            RankUntil rank_until, const QueueJob& preemptor, JobPlacer& placer) {
  VictimChoice choice;
  if (rank_until(1) == 0) {
    choice.reason = "no running job may be suspended for it";
    return choice;
  }
  Evictor evictor(state, jobs, ranked);
  auto place = [&] { return placer.Probe(state, preemptor.request, preemptor.replicas); };
  // 1. Doubling prefixes until one makes room (most jobs need few victims, so this stays cheap);
  //    suspending every candidate is the last try.
  JobPlacement best;
  int lo = 0;  // 0 is known not to make room: the job was tried first
  int hi = 0;
  for (int k = 1;; k *= 2) {
    const int known = static_cast<int>(rank_until(static_cast<size_t>(k)));
    const bool all = known <= k && known == static_cast<int>(rank_until(static_cast<size_t>(k) + 1));
    k = std::min(k, known);
    RETURN_IF_ERROR(evictor.SetPrefix(k));
    JobPlacement p = place();
    if (p.kind == OutcomeKind::kPlaced) {
      hi = k;
      best = std::move(p);
      break;
    }
    lo = k;
    if (all) {
      choice.reason =
          "suspending every job that may be suspended for it (" + std::to_string(k) + ") would not make room";
      return choice;
    }
  }
  // 2. The shortest prefix that makes room, by halving between the last two tries.
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    RETURN_IF_ERROR(evictor.SetPrefix(mid));
    JobPlacement p = place();
    if (p.kind == OutcomeKind::kPlaced) {
      hi = mid;
      best = std::move(p);
    } else {
      lo = mid;
    }
  }
  RETURN_IF_ERROR(evictor.SetPrefix(hi));
  // 3. Spare victims on nodes the placement does not touch, then each remaining one if the job
  // still fits.
  std::unordered_set<int> used;
  for (const Allocation& a : best.allocations) used.insert(a.node);
  std::vector<int> spared_off_node;
  for (int i = 0; i < hi; ++i) {
    if (!UsesAnyNode(jobs[ranked[i]], used)) {
      evictor.Restore(i);
      spared_off_node.push_back(i);
    }
  }
  if (!spared_off_node.empty()) {
    JobPlacement p = place();
    if (p.kind == OutcomeKind::kPlaced) {
      best = std::move(p);
    } else {
      RETURN_IF_ERROR(evictor.SetPrefix(hi));  // keep the whole prefix: it is known to make room
    }
  }
  int attempts = 0;
  for (int i = hi - 1; i >= 0 && attempts < kMaxSpareAttempts; --i) {
    if (!evictor.out(i)) continue;
    ++attempts;
    evictor.Restore(i);
    JobPlacement p = place();
    if (p.kind == OutcomeKind::kPlaced) {
      best = std::move(p);
    } else {
      RETURN_IF_ERROR(evictor.Suspend(i));
    }
  }
  for (int i = 0; i < hi; ++i) {
    if (evictor.out(i)) choice.victims.push_back(ranked[i]);
  }
  choice.found = true;
  choice.allocations = std::move(best.allocations);
  return choice;  // the Evictor restores the state
}

}  // namespace

Result<VictimChoice> ChooseVictims(ClusterState& state, const std::vector<QueueJob>& jobs,
                                   const std::vector<int>& ranked, const QueueJob& preemptor, JobPlacer& placer) {
  return Choose(
      state, jobs, ranked, [&](size_t) { return ranked.size(); }, preemptor, placer);
}

Result<VictimChoice> ChooseVictims(ClusterState& state, const std::vector<QueueJob>& jobs, VictimRanking& ranking,
                                   const QueueJob& preemptor, JobPlacer& placer) {
  return Choose(
      state, jobs, ranking.ranked(), [&](size_t k) { return ranking.RankUntil(k); }, preemptor, placer);
}

std::string PreemptorReason(const QueueJob& victim, const std::string& victim_tenant, VictimVerdict why,
                            const QueueJob& preemptor, const std::string& preemptor_tenant) {
  return "suspends " + Describe(victim, victim_tenant) + ": " +
         Why(victim, victim_tenant, why, preemptor, preemptor_tenant);
}

std::string VictimReason(const QueueJob& victim, const std::string& victim_tenant, VictimVerdict why,
                         const QueueJob& preemptor, const std::string& preemptor_tenant) {
  return "suspended for " + Describe(preemptor, preemptor_tenant) + ": " +
         Why(victim, victim_tenant, why, preemptor, preemptor_tenant);
}

}  // namespace xpool
