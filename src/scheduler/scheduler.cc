#include "scheduler/scheduler.h"

#include <algorithm>
#include <array>
#include <limits>
#include <set>
#include <unordered_map>
#include <utility>

#include "scheduler/fit.h"
#include "scheduler/internal/key_bytes.h"
#include "scheduler/internal/request_key.h"
#include "scheduler/internal/score_cache.h"

namespace xpool {
namespace {

using scheduler_internal::Capacity;
using scheduler_internal::CapacityOf;
using scheduler_internal::ExactFor;
using scheduler_internal::kLowestScore;
using scheduler_internal::kNoFit;
using scheduler_internal::kUnknown;
using scheduler_internal::LiveStates;
using scheduler_internal::MayFit;
using scheduler_internal::ScoreTree;

// ---- Request shapes as hash keys ----

using scheduler_internal::RequestEq;
using scheduler_internal::RequestHash;

template <typename V>
using ShapeMap = std::unordered_map<TaskRequest, V, RequestHash, RequestEq>;

// ---- Ordered-walk partitions ----

// Idle = no task on the device (healthy, not cordoned); shareable = could take one more sharer.
using scheduler_internal::CapacityPart;
using scheduler_internal::EligibleParts;
using scheduler_internal::kComputeBuckets;
using scheduler_internal::kIdleParts;
using scheduler_internal::kParts;

int PartitionOf(const Node& n, const Capacity& c) {
  if (!n.ready || n.cordoned) return -1;
  return CapacityPart(c);
}

struct StaticVerdict {
  uint64_t description_version = 0;
  int node_count = -1;
  bool fits_somewhere = false;
  std::string never_reason;
};

// A shape's cached verdicts. Shapes without uuid lists (memo_ok) keep one verdict per live-state slot, valid while
// the slot holds the same state id; a request then scans the live states. Shapes with uuid lists are scored per
// node, in a score tree refreshed for the nodes changed since the shape was last used.
}  // namespace

struct Scheduler::ShapeCache {
  struct SlotVerdict {
    uint32_t state = LiveStates::kNoState;
    int64_t verdict = kUnknown;
  };
  // A verdict for the request memories [lo, hi] (PlacementPolicy::MemoryRange).
  struct RangeVerdict {  // 32 bytes: a slot's two ways fill one cache line (the scans read them all over memory)
    int64_t lo = 0;
    int64_t hi = -1;
    int64_t verdict = kUnknown;
    uint32_t state = LiveStates::kNoState;
    bool ranged = false;  // [lo, hi] is the policy's MemoryRange (else lo = hi = the memory it was computed for)
  };
  static constexpr int kRangeWays = 2;  // verdicts kept per slot, most recent first
  uint64_t seq = 0;
  bool valid = false;
  bool memo_ok = false;                // the verdict may be shared between nodes of one state (no uuid lists)
  bool by_states = false;              // may scan live states (ScanStates) when used seldom
  uint64_t last_use = 0;               // by_states: change_seq() when the shape was last used
  int often_streak = 0;                // by_states: consecutive uses with few nodes changed in between
  std::vector<SlotVerdict> by_slot;    // by_states: the verdict memo, per live-state slot (both scans use it)
  bool ranges = false;                 // keyed without memory, verdicts by memory range: by_range, not by_slot
  std::vector<int32_t> range_at;       // ranges: per live-state slot, where its verdicts start in by_range, or -1
  std::vector<RangeVerdict> by_range;  // ranges: kRangeWays per slot that had a verdict (a shape meets few)
  // By node (ScanNodes): per node, score or kNoFit, current up to change_seq() `seq` while tree_valid; per node
  // state id, score, kNoFit or kUnknown (memo_ok and not by_states).
  bool tree_valid = false;
  ScoreTree scores;
  std::vector<int64_t> memo;
};

namespace {

using scheduler_internal::PutBytes;
using scheduler_internal::PutDeviceDescription;
using scheduler_internal::PutString;

// A node's description as far as scoring goes: everything but its name and its devices' uuids.
void DescriptionKey(const Node& n, std::string* key) {
  key->clear();
  PutBytes(key, n.cpu_milli);
  PutBytes(key, n.memory_mib);
  PutBytes(key, static_cast<uint8_t>(n.ready));
  PutBytes(key, static_cast<uint8_t>(n.cordoned));
  PutBytes(key, static_cast<uint8_t>(n.simulated));
  PutBytes(key, n.labels.size());
  for (const auto& [k, v] : n.labels) {
    PutString(key, k);
    PutString(key, v);
  }
  PutBytes(key, n.links.size());
  for (int a = 0; a < n.links.size(); ++a) {
    for (int b = 0; b < n.links.size(); ++b) PutBytes(key, n.links.Score(a, b));
  }
  PutBytes(key, n.devices.size());
  for (const Device& d : n.devices) {
    PutDeviceDescription(d, key);
    PutBytes(key, d.index);
  }
}

// The node's conditions that change without a new description_version (ready, cordoned, device health and
// cordon), one bit each: the description is keyed again when they change. Nodes with more devices than bits
// (kMaxConditionDevices) are keyed again on every change.
constexpr size_t kMaxConditionDevices = 31;
uint64_t Conditions(const Node& n) {
  uint64_t bits = (n.ready ? 1u : 0u) | (n.cordoned ? 2u : 0u);
  for (size_t d = 0; d < n.devices.size() && d < kMaxConditionDevices; ++d) {
    bits |= static_cast<uint64_t>(n.devices[d].healthy ? 1 : 0) << (2 + 2 * d);
    bits |= static_cast<uint64_t>(n.devices[d].cordoned ? 1 : 0) << (3 + 2 * d);
  }
  return bits;
}

// True when the node's devices differ only in index and uuid and it has no link table: permuting their usage
// then changes no fit and, by the cacheable() contract, no score.
bool UniformDevices(const Node& n) {
  if (!n.links.empty()) return false;
  for (const Device& d : n.devices) {
    const Device& f = n.devices.front();
    if (d.vendor != f.vendor || d.model != f.model || d.memory_mib != f.memory_mib ||
        d.compute_milli != f.compute_milli || d.max_sharers != f.max_sharers || d.numa_node != f.numa_node ||
        d.mode != f.mode || d.healthy != f.healthy || d.cordoned != f.cordoned) {
      return false;
    }
  }
  return true;
}

// Interns keys into dense ids 0, 1, … in first-seen order. A key no longer in use may be forgotten: its id is
// never given again until Clear (caches keyed by id stay valid), and the table stays the size of the keys in use.
class Interner {
 public:
  uint32_t Id(const std::string& key) {
    auto [it, added] = ids_.try_emplace(key, static_cast<uint32_t>(keys_.size()));
    if (added) keys_.push_back(&it->first);
    return it->second;
  }
  void Forget(uint32_t id) {
    if (id >= keys_.size() || keys_[id] == nullptr) return;
    ids_.erase(ids_.find(*keys_[id]));
    keys_[id] = nullptr;
  }
  void Clear() {
    ids_.clear();
    keys_.clear();
  }
  size_t size() const { return keys_.size(); }  // ids given since Clear

 private:
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<const std::string*> keys_;  // per id: its key in ids_, nullptr once forgotten
};

}  // namespace

struct Scheduler::Impl {
  // Shared.
  ShapeMap<StaticVerdict> statics;
  int64_t seen_max_cpu = -1;
  int64_t seen_max_compute = -1;
  uint64_t seen_epoch = 0;  // policy ScoreEpoch() the caches were built under
  std::vector<int> changed;
  std::vector<uint64_t> stamp;  // dedupes `changed`
  uint64_t stamp_clock = 0;
  NodeCandidate candidate;
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
  std::vector<int> raw_changed;
  // Node states (score cache): nodes alike in description (names, uuids aside), usage and the policy's NodeTag
  // share a state id, and a shape's verdict is computed once per state id.
  Interner descriptions;
  Interner states;
  std::vector<uint32_t> node_description;
  std::vector<uint8_t> node_uniform;      // the node's devices are alike (and it has no link table): order is moot
  std::vector<uint64_t> node_conditions;  // Conditions() when node_description was keyed
  std::vector<std::array<int64_t, 4>> device_keys;
  std::vector<uint32_t> node_state;
  std::vector<Capacity> node_capacity;  // for a cheap "cannot fit" before a full evaluation
  LiveStates live;                      // the states nodes are in now, with their nodes
  std::vector<int> tied;                // slots holding the best verdict of a scan
  std::vector<int> tied_nodes;          // their nodes, for a k-th pick
  std::vector<int> fresh;               // slots a scan found without a memoised verdict
  TaskRequest range_request;            // RangeVerdict: a request at a kept verdict's memory, for MemoryRange
  // Per live-state slot: the policy's ScoreBound for its state (kNoBound: none), valid while the slot holds it.
  std::vector<std::pair<uint32_t, int64_t>> slot_bound;
  uint64_t states_seq = 0;
  uint64_t states_description_version = 0;
  bool states_synced = false;
  std::string state_key;
  Rng scratch_rng{0};       // refreshes never draw from the caller's rng
  TaskRequest memory_free;  // the cache key of a request whose memory the policy ignores
};

Scheduler::Scheduler(const ClusterState& state, PlacementPolicy& policy, SchedulerOptions options)
    : state_(state), policy_(policy), traits_(policy.traits()), options_(options), impl_(std::make_unique<Impl>()) {
  if (!traits_.cacheable) {
    mode_ = SchedulerMode::kFullScan;
  } else if (traits_.node_order_key && policy_.tie_break() == TieBreak::kFirst) {
    mode_ = SchedulerMode::kOrderedWalk;
  } else {
    mode_ = SchedulerMode::kScoreCache;
  }
}

Scheduler::~Scheduler() = default;

namespace {

// Collects the nodes changed since `seq` without duplicates; false when the journal does not reach back.
bool ChangedNodes(const ClusterState& state, uint64_t seq, std::vector<int>* out, std::vector<uint64_t>* stamp,
                  uint64_t* clock, std::vector<int>* raw_buffer) {
  out->clear();
  std::vector<int>& raw = *raw_buffer;
  raw.clear();
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
    const int64_t key = policy_.NodeOrderKey(state_, n);
    m.key[n] = key;
    m.capacity[n] = CapacityOf(state_, n);
    m.part[n] = PartitionOf(state_.node(n), m.capacity[n]);
    if (m.part[n] >= 0) m.parts[m.part[n]].insert({key, n});
  };
  if (!m.synced || !ChangedNodes(state_, m.synced_seq, &m.changed, &m.stamp, &m.stamp_clock, &m.raw_changed)) {
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
  // Walk the eligible partitions merged in (key, node) order: their heads in a min-heap by current entry.
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
  auto sift_down = [&heads, &head_count](int i) {
    while (true) {
      const int l = 2 * i + 1, r = l + 1;
      int least = i;
      if (l < head_count && heads[l].cur < heads[least].cur) least = l;
      if (r < head_count && heads[r].cur < heads[least].cur) least = r;
      if (least == i) return;
      std::swap(heads[i], heads[least]);
      i = least;
    }
  };
  // The top head moved on: drop it when exhausted, then restore the heap.
  auto settle_top = [&](const Impl::Entry& done) {
    if (heads[0].cur == done) heads[0] = heads[--head_count];
    if (head_count > 0) sift_down(0);
  };
  for (int i = head_count / 2 - 1; i >= 0; --i) sift_down(i);
  int64_t best_score = 0;
  int64_t best_key = 0;
  while (head_count > 0) {
    const auto [key, n] = heads[0].cur;
    if (best_node >= 0 && key == best_key) {
      // Same key = same score, and every later node of this key run has a larger index: skip the run in every
      // partition (the heads holding this key surface one after the other).
      while (head_count > 0 && heads[0].cur.first == key) {
        heads[0].it = m.parts[heads[0].part].lower_bound({key, std::numeric_limits<int>::max()});
        heads[0].Load(kDone);
        settle_top(kDone);
      }
      continue;
    }
    ++heads[0].it;
    heads[0].Load(kDone);
    settle_top(kDone);
    ++stats_.nodes_visited;
    if (!MayFit(m.capacity[n], request)) continue;
    ++stats_.fit_calls;
    if (!FitNode(state_, n, request, false, &m.candidate, nullptr)) continue;
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

namespace {

// The node with the best cached score (-1 when none fits), the tie-break choosing among equals. kRandom draws
// once for the whole choice (uniform over the tied nodes, like Schedule()'s reservoir, which draws once per tie;
// so the same seed picks differently here).
int PickBest(const ScoreTree& scores, TieBreak tie_break, int64_t memory, Rng& rng) {
  if (scores.best() == kNoFit) return -1;
  if (scores.best_memory() < memory) return scores.BestWithMemory(memory, tie_break, rng);
  switch (tie_break) {
    case TieBreak::kFirst:
      return scores.Kth(0);
    case TieBreak::kLast:
      return scores.Kth(scores.ties() - 1);
    case TieBreak::kRandom: {
      const int ties = scores.ties();
      return scores.Kth(ties > 1 ? std::uniform_int_distribution<int>(0, ties - 1)(rng) : 0);
    }
  }
  return -1;
}

}  // namespace

namespace {
constexpr size_t kMaxStates = 1 << 18;
// A by_states shape refreshes its per-node tree while at most 1/kRefreshRatio of the nodes changed since its last
// use (a refresh updates the tree, likely cold in cache when many shapes are in use: several times the cost of
// scanning a live state in order); beyond that it scans the live states.
constexpr uint64_t kRefreshRatio = 64;
constexpr int kOftenToBuild = 8;
}  // namespace

void Scheduler::SyncStates() {
  Impl& m = *impl_;
  const int count = state_.node_count();
  // Start the tables over when descriptions were replaced (old ids would linger) and, in a long-lived loop that
  // sees ever new usage combinations, past a bound.
  const bool descriptions_changed = !m.states_synced || m.states_description_version != state_.description_version() ||
                                    static_cast<int>(m.node_state.size()) != count ||
                                    m.states.size() > kMaxStates + 4 * static_cast<size_t>(count);
  auto update = [&](int n, bool known) {
    const uint32_t old_state = known ? m.node_state[n] : LiveStates::kNoState;
    // Conditions (ready, cordoned, device health) change without a new description_version: key the description
    // again when they did (or the node is new to the tables).
    const uint64_t conditions = Conditions(state_.node(n));
    if (!known || m.node_conditions[n] != conditions || state_.node(n).devices.size() > kMaxConditionDevices) {
      DescriptionKey(state_.node(n), &m.state_key);
      m.node_description[n] = m.descriptions.Id(m.state_key);
      m.node_uniform[n] = UniformDevices(state_.node(n)) ? 1 : 0;
      m.node_conditions[n] = conditions;
    }
    const NodeUsage& u = state_.usage(n);
    m.state_key.clear();
    PutBytes(&m.state_key, m.node_description[n]);
    PutBytes(&m.state_key, traits_.node_tags ? policy_.NodeTag(state_, n) : uint64_t{0});
    PutBytes(&m.state_key, u.cpu_milli);
    PutBytes(&m.state_key, u.memory_mib);
    m.device_keys.clear();
    for (const DeviceUsage& d : u.devices) {
      m.device_keys.push_back({d.memory_mib, d.compute_milli, d.sharers, d.exclusive ? 1 : 0});
    }
    // Alike devices: a cacheable policy's score does not depend on which of them holds what (see policy.h).
    if (m.node_uniform[n]) std::sort(m.device_keys.begin(), m.device_keys.end());
    for (const auto& k : m.device_keys) PutBytes(&m.state_key, k);
    m.node_state[n] = m.states.Id(m.state_key);
    m.node_capacity[n] = CapacityOf(state_, n);
    m.live.Move(n, m.node_state[n], m.node_capacity[n]);
    // A state no node is in any more leaves the table (a churning cluster makes ~3 new ones per placement).
    if (old_state != m.node_state[n] && old_state != LiveStates::kNoState && !m.live.holds(old_state)) {
      m.states.Forget(old_state);
    }
  };
  if (descriptions_changed ||
      !ChangedNodes(state_, m.states_seq, &m.changed, &m.stamp, &m.stamp_clock, &m.raw_changed)) {
    // Ids stay valid across a rescan only while descriptions are unchanged; otherwise start the tables over.
    if (descriptions_changed) {
      m.descriptions.Clear();
      m.states.Clear();
      m.shapes.clear();
      m.slot_bound.clear();  // keyed by state id
    }
    m.node_description.assign(count, 0);
    m.node_uniform.assign(count, 0);
    m.node_conditions.assign(count, 0);
    m.node_state.assign(count, 0);
    m.node_capacity.assign(count, Capacity{});
    m.live.Reset(count);
    for (int n = 0; n < count; ++n) update(n, false);
  } else {
    for (int n : m.changed) update(n, true);
  }
  m.states_seq = state_.change_seq();
  m.states_description_version = state_.description_version();
  m.states_synced = true;
}

int Scheduler::ScanCache(const TaskRequest& request, Rng& rng) {
  Impl& m = *impl_;
  SyncStates();
  // A policy that ignores the request's memory shares one cache between requests that differ only in memory: the
  // cache scores the request without memory (`key`), the free memory is checked against the request itself.
  // A policy that gives memory ranges (PlacementPolicy::MemoryRange) shares one too, scoring the request itself
  // and reusing each verdict within its memory range (state scan only: the verdicts differ per memory).
  const bool ranges = traits_.memory_ranges && !traits_.ignores_request_memory && !traits_.uniform_score &&
                      request.uuid_include.empty() && request.uuid_exclude.empty();
  const bool drop_memory = (traits_.ignores_request_memory || ranges) && request.memory_mib != 0;
  if (drop_memory) {
    m.memory_free = request;
    m.memory_free.memory_mib = 0;
  }
  const TaskRequest& key = drop_memory ? m.memory_free : request;
  if (static_cast<int>(m.shapes.size()) >= options_.max_cached_shapes && m.shapes.count(key) == 0) {
    m.shapes.clear();
  }
  ShapeCache& cache = m.shapes[key];
  if (!cache.valid) {
    cache.memo_ok = key.uuid_include.empty() && key.uuid_exclude.empty();
    // Scanning states evaluates each state on one of its nodes, not necessarily the one ScanNodes would pick first;
    // that gives the same placements only while the policy's scores are pure (cacheable() contract). Policies whose
    // score reads the request's memory (default, topology) key the cache by the whole request, memory included.
    // Uniform scores (random) tie every fitting node: the per-node tree finds the k-th of them in O(log nodes).
    cache.by_states = cache.memo_ok && !traits_.uniform_score;
    cache.ranges = ranges;
    cache.valid = true;
  }
  // A shape that may scan states keeps its per-node tree while it is used often (few nodes changed since its last
  // use: refreshing them costs less than scanning every live state); used seldom, it scans the states and drops
  // the tree, which is rebuilt when the shape is used often again.
  bool by_states = cache.ranges;
  if (cache.by_states && !cache.ranges) {
    const uint64_t changed = state_.change_seq() - cache.last_use;
    const bool often = changed * kRefreshRatio <= static_cast<uint64_t>(state_.node_count());
    cache.last_use = state_.change_seq();
    cache.often_streak = often ? cache.often_streak + 1 : 0;
    if (!often) cache.tree_valid = false;
    // A tree is rebuilt only for a shape used often several times in a row (a rebuild costs a few scans).
    by_states = !often || (!cache.tree_valid && cache.often_streak < kOftenToBuild);
  }
  const int best_node = by_states ? ScanStates(cache, key, request, rng) : ScanNodes(cache, key, request, rng);
  if (best_node >= 0) {
    // Deterministic policy: scoring the winner again yields its device choice.
    int64_t score = 0;
    if (!FitNode(state_, best_node, request, false, &m.candidate, nullptr) ||
        !policy_.Score(state_, request, m.candidate, rng, &score, &m.best_devices)) {
      return kFallBack;  // not reached for a cacheable policy
    }
  }
  return best_node;
}

int64_t Scheduler::Evaluate(const TaskRequest& key, int node) {
  Impl& m = *impl_;
  ++stats_.fit_calls;
  int64_t score = 0;
  const bool fits = FitNode(state_, node, key, false, &m.candidate, nullptr) &&
                    policy_.Score(state_, key, m.candidate, m.scratch_rng, &score, &m.chosen) &&
                    ValidDeviceChoice(state_, key, m.candidate, m.chosen);
  return fits ? std::max(score, kLowestScore) : kNoFit;
}

namespace {
constexpr int64_t kNoBound = std::numeric_limits<int64_t>::max();

// The policy's ScoreBound for the state in live slot s (kNoBound when it gives none), memoised per slot occupancy.
int64_t SlotBound(const ClusterState& state, PlacementPolicy& policy, const LiveStates& live,
                  std::vector<std::pair<uint32_t, int64_t>>* memo, int s) {
  if (static_cast<int>(memo->size()) < live.size()) memo->resize(live.size(), {LiveStates::kNoState, kNoBound});
  auto& [memo_state, bound] = (*memo)[s];
  if (memo_state != live.slot(s).state) {
    memo_state = live.slot(s).state;
    const int64_t b = policy.ScoreBound(state, live.any_node(s));
    bound = b == kNoScoreBound ? kNoBound : std::max(b, kLowestScore);
  }
  return bound;
}
}  // namespace

// The slots ScanStates deferred (no verdict memoised for the shape), after the others: each is scored and taken
// as the loop there takes a slot, unless the policy's bounds (ScoreBound for the state, RequestScoreBound) say it
// cannot change the pick — below the best verdict found, or equal to it with its nodes after the tie rule's pick.
void Scheduler::ScoreFresh(ShapeCache& cache, const TaskRequest& key, const TaskRequest& request, int64_t* best_io,
                           bool* memory_short) {
  Impl& m = *impl_;
  const LiveStates& live = m.live;
  int64_t& best = *best_io;
  const TieBreak tie_break = policy_.tie_break();
  int tie_pick = -1;  // the node the tie rule picks among the tied slots so far (kFirst, kLast)
  auto note_tie = [&](int s) {
    if (tie_break == TieBreak::kFirst) {
      tie_pick = tie_pick < 0 ? live.first_node(s) : std::min(tie_pick, live.first_node(s));
    } else if (tie_break == TieBreak::kLast) {
      tie_pick = std::max(tie_pick, live.last_node(s));
    }
  };
  for (int s : m.tied) note_tie(s);
  int64_t request_bound = kNoBound;
  if (traits_.score_bounds) {
    const int64_t b = policy_.RequestScoreBound(key);
    if (b != kNoScoreBound) request_bound = std::max(b, kLowestScore);
  }
  for (int s : m.fresh) {
    if (best != kNoFit && traits_.score_bounds) {
      const int64_t slot_bound = SlotBound(state_, policy_, live, &m.slot_bound, s);
      const int64_t bound = slot_bound == kNoBound ? kNoBound : std::min(slot_bound, request_bound);
      if (bound < best) continue;
      if (bound == best && tie_break == TieBreak::kFirst && live.first_node(s) > tie_pick) continue;
      if (bound == best && tie_break == TieBreak::kLast && live.last_node(s) < tie_pick) continue;
    }
    const int64_t v = SlotVerdict(cache, key, s);
    if (v == kNoFit || v < best) continue;
    if (live.slot(s).capacity.free_memory < request.memory_mib) {
      *memory_short = true;
      continue;
    }
    if (v > best) {
      best = v;
      m.tied.clear();
      tie_pick = -1;
    }
    m.tied.push_back(s);
    note_tie(s);
  }
}

// Scans the live node states of the capacity partitions the request may fit (in any order: the outcome depends
// only on the set of slots): a state's verdict for the shape is computed once per slot occupancy, on one of its
// nodes; the best verdict among the slots with the request's memory wins, and the tie rule picks among their
// nodes. Its cost grows with those live states (up to ~1,000 on a churning openb), not with the nodes changed
// since the shape was last used. Slots without a memoised verdict are scored after the others (ScoreFresh).
int Scheduler::ScanStates(ShapeCache& cache, const TaskRequest& key, const TaskRequest& request, Rng& rng) {
  Impl& m = *impl_;
  LiveStates& live = m.live;
  if (!cache.ranges && static_cast<int>(cache.by_slot.size()) < live.size()) cache.by_slot.resize(live.size());
  int64_t best = kNoFit;
  bool memory_short = false;  // a slot at least as good as the best lacked the request's memory
  m.tied.clear();
  m.fresh.clear();
  EligibleParts(key, &m.eligible);
  for (int p : m.eligible) {
    for (int s : live.part(p)) {
      const LiveStates::Slot& slot = live.slot(s);
      ++stats_.nodes_visited;
      if (!MayFit(slot.capacity, key)) continue;  // the capacity check first: it reads no per-shape memo
      if (!cache.ranges && cache.by_slot[s].state != slot.state) {
        m.fresh.push_back(s);  // no memoised verdict: scored after the others (ScoreFresh)
        continue;
      }
      if (cache.ranges && slot.capacity.free_memory < request.memory_mib) {
        memory_short = true;
        continue;
      }
      const int64_t v = cache.ranges ? RangeVerdict(cache, request, s) : SlotVerdict(cache, key, s);
      if (v == kNoFit || v < best) continue;
      if (slot.capacity.free_memory < request.memory_mib) {
        memory_short = true;
        continue;
      }
      if (v > best) {
        best = v;
        m.tied.clear();
      }
      m.tied.push_back(s);
    }
  }
  if (!m.fresh.empty()) ScoreFresh(cache, key, request, &best, &memory_short);
  if (memory_short) ++stats_.memory_scans;
  if (best == kNoFit) return -1;
  int pick = -1;
  switch (policy_.tie_break()) {
    case TieBreak::kFirst:
      for (int s : m.tied) pick = pick < 0 ? live.first_node(s) : std::min(pick, live.first_node(s));
      break;
    case TieBreak::kLast:
      for (int s : m.tied) pick = std::max(pick, live.last_node(s));
      break;
    case TieBreak::kRandom: {
      // The k-th tied node in node order, k uniform (one draw, as the per-node score tree's pick).
      m.tied_nodes.clear();
      for (int s : m.tied) m.tied_nodes.insert(m.tied_nodes.end(), live.nodes(s).begin(), live.nodes(s).end());
      const int ties = static_cast<int>(m.tied_nodes.size());
      const int k = ties > 1 ? std::uniform_int_distribution<int>(0, ties - 1)(rng) : 0;
      std::nth_element(m.tied_nodes.begin(), m.tied_nodes.begin() + k, m.tied_nodes.end());
      pick = m.tied_nodes[k];
      break;
    }
  }
  return pick;
}

// The shape's verdict for the state in live slot s (which fits the capacity check), from the per-slot memo.
int64_t Scheduler::SlotVerdict(ShapeCache& cache, const TaskRequest& key, int s) {
  Impl& m = *impl_;
  const LiveStates::Slot& slot = m.live.slot(s);
  if (s >= static_cast<int>(cache.by_slot.size())) cache.by_slot.resize(m.live.size());
  ShapeCache::SlotVerdict& memo = cache.by_slot[s];
  if (memo.state != slot.state) {
    memo.state = slot.state;
    memo.verdict = Evaluate(key, m.live.any_node(s));
  }
  return memo.verdict;
}

// As SlotVerdict, for a shape keyed without memory whose policy gives memory ranges: the verdict for `request` (whose
// memory the state in slot s has), from the slot's recent verdicts whose range holds the request's memory.
int64_t Scheduler::RangeVerdict(ShapeCache& cache, const TaskRequest& request, int s) {
  Impl& m = *impl_;
  constexpr int kWays = ShapeCache::kRangeWays;
  const uint32_t state = m.live.slot(s).state;
  if (static_cast<int>(cache.range_at.size()) < m.live.size()) cache.range_at.resize(m.live.size(), -1);
  int32_t& at = cache.range_at[s];
  if (at < 0) {
    at = static_cast<int32_t>(cache.by_range.size());
    cache.by_range.resize(cache.by_range.size() + kWays);
  }
  ShapeCache::RangeVerdict* ways = &cache.by_range[at];
  const int node = m.live.any_node(s);
  for (int w = 0; w < kWays; ++w) {
    if (ways[w].state != state) continue;
    if (ways[w].lo <= request.memory_mib && request.memory_mib <= ways[w].hi) return ways[w].verdict;
    // A verdict is kept for its own memory first; its range is asked of the policy only when another memory of
    // the shape comes (most shapes come with one memory: the range would be computed for nothing).
    if (!ways[w].ranged) {
      ways[w].ranged = true;
      m.range_request = request;
      m.range_request.memory_mib = ways[w].lo;
      policy_.MemoryRange(state_, node, m.range_request, &ways[w].lo, &ways[w].hi);
      if (ways[w].lo <= request.memory_mib && request.memory_mib <= ways[w].hi) return ways[w].verdict;
    }
  }
  ShapeCache::RangeVerdict fresh;
  fresh.state = state;
  fresh.verdict = Evaluate(request, node);
  fresh.lo = fresh.hi = request.memory_mib;
  std::copy_backward(ways, ways + kWays - 1, ways + kWays);
  ways[0] = fresh;
  return fresh.verdict;
}

// Per-node verdicts in a score tree, refreshed for the nodes changed since the shape was last used (a node state's
// verdict is computed once per shape, for the first node found in it, when the shape may share it).
int Scheduler::ScanNodes(ShapeCache& cache, const TaskRequest& key, const TaskRequest& request, Rng& rng) {
  Impl& m = *impl_;
  const int count = state_.node_count();
  // A uniform score (random) ranks a node by whether it fits; where the capacity summary decides that exactly,
  // neither FitNode nor the memo is needed.
  const bool by_capacity = traits_.uniform_score && ExactFor(key);
  auto verdict = [&](int n) -> int64_t {
    ++stats_.nodes_visited;
    // The capacity check first: it reads no per-shape memo.
    if (!MayFit(m.node_capacity[n], key)) return kNoFit;
    if (by_capacity && m.node_capacity[n].exact) return 0;
    if (!cache.memo_ok) return Evaluate(key, n);
    if (cache.by_states) return SlotVerdict(cache, key, m.live.slot_of(n));  // one memo for both scans
    const uint32_t id = m.node_state[n];
    if (id >= cache.memo.size()) cache.memo.resize(std::max<size_t>(id + 1, cache.memo.size() * 2), kUnknown);
    int64_t& memo = cache.memo[id];
    if (memo == kUnknown) memo = Evaluate(key, n);
    return memo;
  };
  if (!cache.tree_valid || cache.scores.count() != count ||
      !ChangedNodes(state_, cache.seq, &m.changed, &m.stamp, &m.stamp_clock, &m.raw_changed)) {
    cache.scores.Assign(count);
    for (int n = 0; n < count; ++n) cache.scores.SetLeaf(n, verdict(n), m.node_capacity[n].free_memory);
    cache.scores.Build();
    cache.tree_valid = true;
  } else {
    for (int n : m.changed) cache.scores.Set(n, verdict(n), m.node_capacity[n].free_memory);
  }
  cache.seq = state_.change_seq();
  if (cache.scores.best_memory() < request.memory_mib) ++stats_.memory_scans;
  return PickBest(cache.scores, policy_.tie_break(), request.memory_mib, rng);
}

ScheduleOutcome Scheduler::Schedule(const TaskRequest& request, Rng& rng) {
  Impl& m = *impl_;
  ++stats_.calls;
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
    m.slot_bound.clear();  // bounds follow the scores
  }
  if (policy_.ScoreEpoch() != m.seen_epoch) {  // the policy's learned state moved: its scores may have changed
    m.seen_epoch = policy_.ScoreEpoch();
    m.synced = false;
    m.shapes.clear();
    m.slot_bound.clear();  // bounds follow the scores
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
