#include "scheduler/scheduler.h"

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>
#include <utility>

#include "scheduler/fit.h"

namespace xpool {
namespace {

// ---- Request shapes as hash keys ----

bool SameRequest(const TaskRequest& a, const TaskRequest& b) {
  return a.cpu_milli == b.cpu_milli && a.memory_mib == b.memory_mib && a.device_count == b.device_count &&
         a.device_memory_mib == b.device_memory_mib && a.device_memory_percent == b.device_memory_percent &&
         a.device_compute_milli == b.device_compute_milli && a.vendor == b.vendor &&
         a.type_include == b.type_include && a.type_exclude == b.type_exclude &&
         a.uuid_include == b.uuid_include && a.uuid_exclude == b.uuid_exclude && a.numa_bind == b.numa_bind;
}

struct RequestHash {
  size_t operator()(const TaskRequest& r) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(static_cast<uint64_t>(r.cpu_milli));
    mix(static_cast<uint64_t>(r.memory_mib));
    mix(static_cast<uint64_t>(r.device_count));
    mix(static_cast<uint64_t>(r.device_memory_mib));
    mix(static_cast<uint64_t>(r.device_memory_percent));
    mix(static_cast<uint64_t>(r.device_compute_milli));
    mix(r.vendor.has_value() ? static_cast<uint64_t>(*r.vendor) + 1 : 0);
    mix(r.numa_bind ? 1 : 0);
    for (const auto* list : {&r.type_include, &r.type_exclude, &r.uuid_include, &r.uuid_exclude}) {
      mix(list->size());
      for (const std::string& s : *list) mix(std::hash<std::string>()(s));
    }
    return static_cast<size_t>(h);
  }
};

struct RequestEq {
  bool operator()(const TaskRequest& a, const TaskRequest& b) const { return SameRequest(a, b); }
};

template <typename V>
using ShapeMap = std::unordered_map<TaskRequest, V, RequestHash, RequestEq>;

// ---- Ordered-walk partitions ----

// Idle = no task on the device (healthy, not cordoned); shareable = could take one more sharer.
constexpr int kComputeBuckets = 11;  // nodes without an idle device, by best shareable free compute / 100
constexpr int kIdleParts = 8;        // nodes with 1..8+ idle devices
constexpr int kParts = kComputeBuckets + kIdleParts;

// What a node can still take, for the walk's cheap pre-checks and its partition.
// Kept in one compact array so the walk's skips touch no Node.
struct Capacity {
  int64_t free_cpu = 0;
  int64_t free_memory = 0;
  int idle = 0;             // devices nobody holds
  int64_t best_share = 0;   // the most free compute on a device that takes one more sharer
};

Capacity CapacityOf(const ClusterState& state, int node) {
  Capacity c;
  const Node& n = state.node(node);
  const NodeUsage& u = state.usage(node);
  c.free_cpu = state.FreeCpu(node);
  c.free_memory = state.FreeMemory(node);
  for (size_t d = 0; d < n.devices.size(); ++d) {
    const Device& dev = n.devices[d];
    const DeviceUsage& du = u.devices[d];
    if (!dev.healthy || dev.cordoned) continue;
    if (du.sharers == 0) {
      ++c.idle;
      continue;
    }
    if (du.exclusive || du.sharers >= dev.max_sharers || dev.mode == DeviceMode::kExclusive) continue;
    c.best_share = std::max(c.best_share, dev.compute_milli - du.compute_milli);
  }
  return c;
}

int PartitionOf(const Node& n, const Capacity& c) {
  if (!n.ready || n.cordoned) return -1;
  if (c.idle > 0) return kComputeBuckets + std::min(c.idle, kIdleParts) - 1;
  return static_cast<int>(std::min<int64_t>(c.best_share / 100, kComputeBuckets - 1));
}

// False when the node certainly cannot take `r` (a necessary condition only; FitNode decides).
bool MayFit(const Capacity& c, const TaskRequest& r) {
  if (c.free_cpu < r.cpu_milli || c.free_memory < r.memory_mib) return false;
  if (!r.wants_devices()) return true;
  if (r.exclusive()) return c.idle >= r.device_count;
  return c.idle > 0 || c.best_share >= r.device_compute_milli;
}

// The partitions that may hold a node able to take `r` (a node outside them cannot: see PartitionOf).
void EligibleParts(const TaskRequest& r, std::vector<int>* parts) {
  parts->clear();
  if (!r.wants_devices()) {
    for (int p = 0; p < kParts; ++p) parts->push_back(p);
    return;
  }
  const int min_idle = r.exclusive() ? std::min(r.device_count, kIdleParts) : 1;
  if (!r.exclusive()) {
    const int64_t bucket = std::min<int64_t>(r.device_compute_milli / 100, kComputeBuckets - 1);
    for (int p = static_cast<int>(bucket); p < kComputeBuckets; ++p) parts->push_back(p);
  }
  for (int p = kComputeBuckets + min_idle - 1; p < kParts; ++p) parts->push_back(p);
}

struct StaticVerdict {
  uint64_t description_version = 0;
  int node_count = -1;
  bool fits_somewhere = false;
  std::string never_reason;
};

struct CacheEntry {
  int64_t score = 0;
  bool fits = false;
};

struct ShapeCache {
  uint64_t seq = 0;
  bool valid = false;
  std::vector<CacheEntry> entries;
};

}  // namespace

struct Scheduler::Impl {
  // Shared.
  ShapeMap<StaticVerdict> statics;
  int64_t seen_max_cpu = -1;
  int64_t seen_max_compute = -1;
  std::vector<int> changed;
  std::vector<uint64_t> stamp;  // dedupes `changed`
  uint64_t stamp_clock = 0;
  NodeCandidate candidate;
  NodeVerdict verdict;
  std::vector<int> chosen;
  std::vector<int> best_devices;

  // Ordered walk.
  using Entry = std::pair<int64_t, int>;  // (key, node)
  std::set<Entry> parts[kParts];
  std::vector<int64_t> key;
  std::vector<int> part;
  std::vector<Capacity> capacity;
  uint64_t synced_seq = 0;
  bool synced = false;
  std::vector<int> eligible;

  // Score cache.
  ShapeMap<ShapeCache> shapes;
};

Scheduler::Scheduler(const ClusterState& state, PlacementPolicy& policy, SchedulerOptions options)
    : state_(state), policy_(policy), options_(options), impl_(std::make_unique<Impl>()) {
  DecideMode();
}

// The ordered walk needs a node to ask the policy for its key; until the cluster has one, the score cache
// stands in (it is correct for every cacheable policy) and the choice is made again on the next call.
void Scheduler::DecideMode() {
  int64_t probe = 0;
  mode_decided_ = state_.node_count() > 0 || !policy_.cacheable();
  if (!policy_.cacheable()) {
    mode_ = SchedulerMode::kFullScan;
  } else if (policy_.tie_break() == TieBreak::kFirst && state_.node_count() > 0 &&
             policy_.NodeOrderKey(state_, 0, &probe)) {
    mode_ = SchedulerMode::kOrderedWalk;
  } else {
    mode_ = SchedulerMode::kScoreCache;
  }
}

Scheduler::~Scheduler() = default;

namespace {

// Collects the nodes changed since `seq` without duplicates; false when the journal does not reach back.
bool ChangedNodes(const ClusterState& state, uint64_t seq, std::vector<int>* out, std::vector<uint64_t>* stamp,
                  uint64_t* clock) {
  out->clear();
  std::vector<int> raw;
  if (!state.NodesChangedSince(seq, &raw)) return false;
  if (stamp->size() < static_cast<size_t>(state.node_count())) stamp->resize(state.node_count(), 0);
  ++*clock;
  for (int n : raw) {
    if ((*stamp)[n] == *clock) continue;
    (*stamp)[n] = *clock;
    out->push_back(n);
  }
  return true;
}

}  // namespace

void Scheduler::SyncOrdered() {
  Impl& m = *impl_;
  const int count = state_.node_count();
  auto update = [&](int n) {
    if (m.part[n] >= 0) m.parts[m.part[n]].erase({m.key[n], n});
    int64_t key = 0;
    policy_.NodeOrderKey(state_, n, &key);
    m.key[n] = key;
    m.capacity[n] = CapacityOf(state_, n);
    m.part[n] = PartitionOf(state_.node(n), m.capacity[n]);
    if (m.part[n] >= 0) m.parts[m.part[n]].insert({key, n});
  };
  if (!m.synced || !ChangedNodes(state_, m.synced_seq, &m.changed, &m.stamp, &m.stamp_clock)) {
    for (auto& p : m.parts) p.clear();
    m.key.assign(count, 0);
    m.part.assign(count, -1);
    m.capacity.assign(count, Capacity{});
    for (int n = 0; n < count; ++n) update(n);
    m.synced = true;
  } else {
    if (static_cast<int>(m.key.size()) < count) {
      m.key.resize(count, 0);
      m.part.resize(count, -1);
      m.capacity.resize(count);
    }
    for (int n : m.changed) update(n);
  }
  m.synced_seq = state_.change_seq();
}

int Scheduler::WalkOrdered(const TaskRequest& request, Rng& rng) {
  Impl& m = *impl_;
  SyncOrdered();
  int best_node = -1;
  // Walk the eligible partitions merged in (key, node) order.
  // Each head caches its current entry so choosing the next node reads no tree node; {max, max} = exhausted.
  constexpr Impl::Entry kDone{std::numeric_limits<int64_t>::max(), std::numeric_limits<int>::max()};
  struct Head {
    std::set<Impl::Entry>::const_iterator it, end;
    Impl::Entry cur;
    int part;
    void Load(const Impl::Entry& done) { cur = it != end ? *it : done; }
  };
  Head heads[kParts];
  int head_count = 0;
  EligibleParts(request, &m.eligible);
  for (int p : m.eligible) {
    if (m.parts[p].empty()) continue;
    Head& h = heads[head_count++];
    h = {m.parts[p].begin(), m.parts[p].end(), kDone, p};
    h.Load(kDone);
  }
  int64_t best_score = 0;
  int64_t best_key = 0;
  while (head_count > 0) {
    int h = 0;
    for (int i = 1; i < head_count; ++i) {
      if (heads[i].cur < heads[h].cur) h = i;
    }
    if (heads[h].cur == kDone) break;
    const auto [key, n] = heads[h].cur;
    if (best_node >= 0 && key == best_key) {
      // Same key = same score, and every later node of this key run has a larger index: skip the run.
      for (int i = 0; i < head_count; ++i) {
        if (heads[i].cur != kDone && heads[i].cur.first == key) {
          heads[i].it = m.parts[heads[i].part].lower_bound({key, std::numeric_limits<int>::max()});
          heads[i].Load(kDone);
        }
      }
      continue;
    }
    ++heads[h].it;
    heads[h].Load(kDone);
    ++stats_.nodes_visited;
    if (!MayFit(m.capacity[n], request)) continue;
    ++stats_.fit_calls;
    if (!FitNode(state_, n, request, false, &m.candidate, &m.verdict)) continue;
    int64_t score = 0;
    if (!policy_.Score(state_, request, m.candidate, rng, &score, &m.chosen) ||
        !ValidDeviceChoice(state_, request, m.candidate, m.chosen)) {
      continue;
    }
    if (best_node >= 0 && score < best_score) break;  // monotone: nothing later can reach the best score
    if (best_node < 0 || score > best_score || n < best_node) {
      best_node = n;
      best_score = score;
      best_key = key;
      std::swap(m.best_devices, m.chosen);
    }
  }
  return best_node;
}

int Scheduler::ScanCache(const TaskRequest& request, Rng& rng) {
  Impl& m = *impl_;
  int best_node = -1;
  // Score cache: refresh the nodes changed since this shape was last used, then one pass.
  if (static_cast<int>(m.shapes.size()) >= options_.max_cached_shapes && m.shapes.count(request) == 0) {
    m.shapes.clear();
  }
  ShapeCache& cache = m.shapes[request];
  const int count = state_.node_count();
  auto refresh = [&](int n) {
    ++stats_.nodes_visited;
    ++stats_.fit_calls;
    CacheEntry& e = cache.entries[n];
    e.fits = FitNode(state_, n, request, false, &m.candidate, &m.verdict) &&
             policy_.Score(state_, request, m.candidate, rng, &e.score, &m.chosen) &&
             ValidDeviceChoice(state_, request, m.candidate, m.chosen);
  };
  if (!cache.valid || !ChangedNodes(state_, cache.seq, &m.changed, &m.stamp, &m.stamp_clock)) {
    cache.entries.assign(count, CacheEntry{});
    for (int n = 0; n < count; ++n) refresh(n);
    cache.valid = true;
  } else {
    if (static_cast<int>(cache.entries.size()) < count) cache.entries.resize(count);
    for (int n : m.changed) refresh(n);
  }
  cache.seq = state_.change_seq();
  const TieBreak tie = policy_.tie_break();
  int64_t best_score = 0;
  int ties = 0;
  for (int n = 0; n < count; ++n) {
    const CacheEntry& e = cache.entries[n];
    if (!e.fits) continue;
    if (best_node < 0 || e.score > best_score) {
      best_node = n;
      best_score = e.score;
      ties = 1;
    } else if (e.score == best_score) {
      ++ties;
      if (tie == TieBreak::kLast) best_node = n;
    }
  }
  if (tie == TieBreak::kRandom && ties > 1) {
    // One draw for the whole choice (uniform over the tied nodes, like Schedule()'s reservoir, which draws once
    // per tie; so the same seed picks differently here).
    int pick = std::uniform_int_distribution<int>(0, ties - 1)(rng);
    for (int n = 0; n < count; ++n) {
      const CacheEntry& e = cache.entries[n];
      if (e.fits && e.score == best_score && pick-- == 0) {
        best_node = n;
        break;
      }
    }
  }
  if (best_node >= 0) {
    // Deterministic policy: scoring the winner again yields its device choice.
    int64_t score = 0;
    if (!FitNode(state_, best_node, request, false, &m.candidate, &m.verdict) ||
        !policy_.Score(state_, request, m.candidate, rng, &score, &m.best_devices)) {
      return kFallBack;  // not reached for a cacheable policy
    }
  }
  return best_node;
}

ScheduleOutcome Scheduler::Schedule(const TaskRequest& request, Rng& rng) {
  Impl& m = *impl_;
  ++stats_.calls;
  if (!mode_decided_) DecideMode();
  if (Status valid = ValidateTaskRequest(request); !valid.ok()) {
    ScheduleOutcome out;
    out.reason = "invalid request: " + valid.message();
    return out;
  }
  if (mode_ == SchedulerMode::kFullScan) return xpool::Schedule(state_, request, policy_, rng);

  // Cacheable scores depend on the largest node's capacity: when it moves, start over.
  const ClusterTotals& totals = state_.totals();
  if (totals.max_node_cpu_milli != m.seen_max_cpu || totals.max_node_device_compute_milli != m.seen_max_compute) {
    m.seen_max_cpu = totals.max_node_cpu_milli;
    m.seen_max_compute = totals.max_node_device_compute_milli;
    m.synced = false;
    m.shapes.clear();
  }

  const int best_node = mode_ == SchedulerMode::kOrderedWalk ? WalkOrdered(request, rng) : ScanCache(request, rng);
  if (best_node == kFallBack) return xpool::Schedule(state_, request, policy_, rng);
  if (best_node >= 0) {
    ScheduleOutcome out;
    out.kind = OutcomeKind::kPlaced;
    out.allocation = MakeAllocation(state_, request, best_node, m.best_devices);
    return out;
  }
  if (options_.explain) return xpool::Schedule(state_, request, policy_, rng);
  // Wait or never: whether some node could take it when empty, cached until a node's description changes.
  StaticVerdict& sv = m.statics[request];
  if (sv.node_count != state_.node_count() || sv.description_version != state_.description_version()) {
    ReasonTally none(request);
    ScheduleOutcome o = NotPlacedOutcome(state_, request, none);
    sv.node_count = state_.node_count();
    sv.description_version = state_.description_version();
    sv.fits_somewhere = o.kind == OutcomeKind::kWait;
    sv.never_reason = o.kind == OutcomeKind::kNeverFits ? o.reason : "";
  }
  ScheduleOutcome out;
  out.kind = sv.fits_somewhere ? OutcomeKind::kWait : OutcomeKind::kNeverFits;
  out.reason = sv.fits_somewhere ? "no node can take it now" : sv.never_reason;
  return out;
}

}  // namespace xpool
