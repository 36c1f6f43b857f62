// The state-cache engine, for cacheable policies without an ordered walk. Nodes alike in description (names,
// uuids aside), usage (up to a permutation of alike devices) and the policy's NodeTag share a state id, and a
// request shape's verdict is computed once per state. Per shape, each node's verdict sits in a max segment tree
// refreshed for the nodes changed since the shape was last used. For requests naming no uuid, a shape used seldom
// instead scans the live node states (a few hundred to ~1,000 on openb, in recycled slots; one verdict per slot
// while it holds the same state), the best states win and the tie rule picks among their nodes — so hundreds of
// rarely used shapes do not each catch up a tree; the tree is rebuilt once the shape is used often again.
// TieBreak::kRandom draws once per placement (uniform over the tied nodes, as Schedule(), though the same seed
// picks a different node than Schedule()'s per-tie reservoir draws).
#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scheduler/fit.h"
#include "scheduler/internal/engine.h"
#include "scheduler/internal/key_bytes.h"
#include "scheduler/internal/request_key.h"
#include "scheduler/internal/score_cache.h"
#include "scheduler/scheduler.h"

namespace xpool::scheduler_internal {
namespace {

template <typename V>
using ShapeMap = std::unordered_map<TaskRequest, V, RequestHash, RequestEq>;

// A shape's cached verdicts. Shapes without uuid lists (memo_ok) keep one verdict per live-state slot, valid while
// the slot holds the same state id; a request then scans the live states. Shapes with uuid lists are scored per
// node, in a score tree refreshed for the nodes changed since the shape was last used.
struct ShapeCache {
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
// then changes no fit and, by ScoringTraits::cacheable, no score.
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

constexpr size_t kMaxStates = 1 << 18;
// A by_states shape refreshes its per-node tree while at most 1/kRefreshRatio of the nodes changed since its last
// use (a refresh updates the tree, likely cold in cache when many shapes are in use: several times the cost of
// scanning a live state in order); beyond that it scans the live states.
constexpr uint64_t kRefreshRatio = 64;
constexpr int kOftenToBuild = 8;

// StateCache: node state ids, the live states and each request shape's verdicts, kept current with the change
// journal. Owned by one Scheduler; not thread-safe.
class StateCache final : public Engine {
 public:
  explicit StateCache(const EngineContext& context) : c_(context) {}

  bool Schedule(const TaskRequest& request, Rng& rng, ScheduleOutcome* out) override {
    const int node = ScanCache(request, rng);
    if (node == kFallBack) {
      *out = xpool::Schedule(c_.state, request, c_.policy, rng);
      return true;
    }
    if (node < 0) return false;
    out->kind = OutcomeKind::kPlaced;
    out->allocation = MakeAllocation(c_.state, request, node, best_devices_);
    return true;
  }
  void DropScores() override {
    shapes_.clear();
    slot_bound_.clear();  // bounds follow the scores
  }

 private:
  static constexpr int kFallBack = -2;  // a cacheable policy contradicted itself: use the full scan

  void SyncStates();                                    // node state ids up to date with the journal
  int ScanCache(const TaskRequest& request, Rng& rng);  // the best node (devices in best_devices_), -1, or kFallBack
  // The best node for `request` (whose cache key is `key`), or -1: by live node states / by node.
  int ScanStates(ShapeCache& cache, const TaskRequest& key, const TaskRequest& request, Rng& rng);
  int ScanNodes(ShapeCache& cache, const TaskRequest& key, const TaskRequest& request, Rng& rng);
  int64_t SlotVerdict(ShapeCache& cache, const TaskRequest& key, int slot);       // memoised per live-state slot
  int64_t RangeVerdict(ShapeCache& cache, const TaskRequest& request, int slot);  // per slot and memory range
  int64_t Evaluate(const TaskRequest& key, int node);  // FitNode + Score as one cached verdict
  // ScanStates' slots without a memoised verdict, scored last and skipped where the policy's bounds allow.
  void ScoreFresh(ShapeCache& cache, const TaskRequest& key, const TaskRequest& request, int64_t* best,
                  bool* memory_short);

  EngineContext c_;
  ShapeMap<ShapeCache> shapes_;
  ChangedNodes changed_;
  NodeCandidate candidate_;
  std::vector<int> chosen_;
  std::vector<int> best_devices_;
  std::vector<int> eligible_;
  // Node states: nodes alike in description (names, uuids aside), usage and the policy's NodeTag share a state id,
  // and a shape's verdict is computed once per state id.
  Interner descriptions_;
  Interner states_;
  std::vector<uint32_t> node_description_;
  std::vector<uint8_t> node_uniform_;      // the node's devices are alike (and it has no link table): order is moot
  std::vector<uint64_t> node_conditions_;  // Conditions() when node_description_ was keyed
  std::vector<std::array<int64_t, 5>> device_keys_;
  std::vector<uint32_t> node_state_;
  std::vector<Capacity> node_capacity_;  // for a cheap "cannot fit" before a full evaluation
  LiveStates live_;                      // the states nodes are in now, with their nodes
  std::vector<int> tied_;                // slots holding the best verdict of a scan
  std::vector<int> tied_nodes_;          // their nodes, for a k-th pick
  std::vector<int> fresh_;               // slots a scan found without a memoised verdict
  TaskRequest range_request_;            // RangeVerdict: a request at a kept verdict's memory, for MemoryRange
  // Per live-state slot: the policy's ScoreBound for its state (kNoBound: none), valid while the slot holds it.
  std::vector<std::pair<uint32_t, int64_t>> slot_bound_;
  uint64_t states_seq_ = 0;
  uint64_t states_description_version_ = 0;
  bool states_synced_ = false;
  std::string state_key_;
  Rng scratch_rng_{0};       // refreshes never draw from the caller's rng
  TaskRequest memory_free_;  // the cache key of a request whose memory the policy ignores
};

void StateCache::SyncStates() {
  const int count = c_.state.node_count();
  // Start the tables over when descriptions were replaced (old ids would linger) and, in a long-lived loop that
  // sees ever new usage combinations, past a bound.
  const bool descriptions_changed = !states_synced_ || states_description_version_ != c_.state.description_version() ||
                                    static_cast<int>(node_state_.size()) != count ||
                                    states_.size() > kMaxStates + 4 * static_cast<size_t>(count);
  auto update = [&](int n, bool known) {
    const uint32_t old_state = known ? node_state_[n] : LiveStates::kNoState;
    // Conditions (ready, cordoned, device health) change without a new description_version: key the description
    // again when they did (or the node is new to the tables).
    const uint64_t conditions = Conditions(c_.state.node(n));
    if (!known || node_conditions_[n] != conditions || c_.state.node(n).devices.size() > kMaxConditionDevices) {
      DescriptionKey(c_.state.node(n), &state_key_);
      node_description_[n] = descriptions_.Id(state_key_);
      node_uniform_[n] = UniformDevices(c_.state.node(n)) ? 1 : 0;
      node_conditions_[n] = conditions;
    }
    const NodeUsage& u = c_.state.usage(n);
    state_key_.clear();
    PutBytes(&state_key_, node_description_[n]);
    PutBytes(&state_key_, c_.traits.node_tags ? c_.policy.NodeTag(c_.state, n) : uint64_t{0});
    PutBytes(&state_key_, u.cpu_milli);
    PutBytes(&state_key_, u.memory_mib);
    device_keys_.clear();
    for (const DeviceUsage& d : u.devices) {
      device_keys_.push_back(
          {d.memory_mib, d.compute_milli, d.sharers, d.exclusive ? 1 : 0, static_cast<int64_t>(d.mps_user)});
    }
    // Alike devices: a cacheable policy's score does not depend on which of them holds what (see policy.h).
    if (node_uniform_[n]) std::sort(device_keys_.begin(), device_keys_.end());
    for (const auto& k : device_keys_) PutBytes(&state_key_, k);
    node_state_[n] = states_.Id(state_key_);
    node_capacity_[n] = CapacityOf(c_.state, n);
    live_.Move(n, node_state_[n], node_capacity_[n]);
    // A state no node is in any more leaves the table (a churning cluster makes ~3 new ones per placement).
    if (old_state != node_state_[n] && old_state != LiveStates::kNoState && !live_.holds(old_state)) {
      states_.Forget(old_state);
    }
  };
  if (descriptions_changed || !changed_.Since(c_.state, states_seq_)) {
    // Ids stay valid across a rescan only while descriptions are unchanged; otherwise start the tables over.
    if (descriptions_changed) {
      descriptions_.Clear();
      states_.Clear();
      shapes_.clear();
      slot_bound_.clear();  // keyed by state id
    }
    node_description_.assign(count, 0);
    node_uniform_.assign(count, 0);
    node_conditions_.assign(count, 0);
    node_state_.assign(count, 0);
    node_capacity_.assign(count, Capacity{});
    live_.Reset(count);
    for (int n = 0; n < count; ++n) update(n, false);
  } else {
    for (int n : changed_.nodes()) update(n, true);
  }
  states_seq_ = c_.state.change_seq();
  states_description_version_ = c_.state.description_version();
  states_synced_ = true;
}

int StateCache::ScanCache(const TaskRequest& request, Rng& rng) {
  SyncStates();
  // A policy that ignores the request's memory shares one cache between requests that differ only in memory: the
  // cache scores the request without memory (`key`), the free memory is checked against the request itself.
  // A policy that gives memory ranges (PlacementPolicy::MemoryRange) shares one too, scoring the request itself
  // and reusing each verdict within its memory range (state scan only: the verdicts differ per memory).
  const bool ranges = c_.traits.memory_ranges && !c_.traits.ignores_request_memory && !c_.traits.uniform_score &&
                      request.uuid_include.empty() && request.uuid_exclude.empty();
  const bool drop_memory = (c_.traits.ignores_request_memory || ranges) && request.memory_mib != 0;
  if (drop_memory) {
    memory_free_ = request;
    memory_free_.memory_mib = 0;
  }
  const TaskRequest& key = drop_memory ? memory_free_ : request;
  if (static_cast<int>(shapes_.size()) >= c_.options.max_cached_shapes && shapes_.count(key) == 0) {
    shapes_.clear();
  }
  ShapeCache& cache = shapes_[key];
  if (!cache.valid) {
    cache.memo_ok = key.uuid_include.empty() && key.uuid_exclude.empty();
    // Scanning states evaluates each state on one of its nodes, not necessarily the one ScanNodes would pick first;
    // that gives the same placements only while the policy's scores are pure (ScoringTraits::cacheable). Policies whose
    // score reads the request's memory (default, topology) key the cache by the whole request, memory included.
    // Uniform scores (random) tie every fitting node: the per-node tree finds the k-th of them in O(log nodes).
    cache.by_states = cache.memo_ok && !c_.traits.uniform_score;
    cache.ranges = ranges;
    cache.valid = true;
  }
  // A shape that may scan states keeps its per-node tree while it is used often (few nodes changed since its last
  // use: refreshing them costs less than scanning every live state); used seldom, it scans the states and drops
  // the tree, which is rebuilt when the shape is used often again.
  bool by_states = cache.ranges;
  if (cache.by_states && !cache.ranges) {
    const uint64_t changed = c_.state.change_seq() - cache.last_use;
    const bool often = changed * kRefreshRatio <= static_cast<uint64_t>(c_.state.node_count());
    cache.last_use = c_.state.change_seq();
    cache.often_streak = often ? cache.often_streak + 1 : 0;
    if (!often) cache.tree_valid = false;
    // A tree is rebuilt only for a shape used often several times in a row (a rebuild costs a few scans).
    by_states = !often || (!cache.tree_valid && cache.often_streak < kOftenToBuild);
  }
  const int best_node = by_states ? ScanStates(cache, key, request, rng) : ScanNodes(cache, key, request, rng);
  if (best_node >= 0) {
    // Deterministic policy: scoring the winner again yields its device choice.
    int64_t score = 0;
    if (!FitNode(c_.state, best_node, request, false, &candidate_, nullptr) ||
        !c_.policy.Score(c_.state, request, candidate_, rng, &score, &best_devices_)) {
      return kFallBack;  // not reached for a cacheable policy
    }
  }
  return best_node;
}

int64_t StateCache::Evaluate(const TaskRequest& key, int node) {
  ++c_.stats.fit_calls;
  int64_t score = 0;
  const bool fits = FitNode(c_.state, node, key, false, &candidate_, nullptr) &&
                    c_.policy.Score(c_.state, key, candidate_, scratch_rng_, &score, &chosen_) &&
                    ValidDeviceChoice(c_.state, key, candidate_, chosen_);
  return fits ? std::max(score, kLowestScore) : kNoFit;
}

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

// The slots ScanStates deferred (no verdict memoised for the shape), after the others: each is scored and taken
// as the loop there takes a slot, unless the policy's bounds (ScoreBound for the state, RequestScoreBound) say it
// cannot change the pick — below the best verdict found, or equal to it with its nodes after the tie rule's pick.
void StateCache::ScoreFresh(ShapeCache& cache, const TaskRequest& key, const TaskRequest& request, int64_t* best_io,
                            bool* memory_short) {
  const LiveStates& live = live_;
  int64_t& best = *best_io;
  const TieBreak tie_break = c_.policy.tie_break();
  int tie_pick = -1;  // the node the tie rule picks among the tied slots so far (kFirst, kLast)
  auto note_tie = [&](int s) {
    if (tie_break == TieBreak::kFirst) {
      tie_pick = tie_pick < 0 ? live.first_node(s) : std::min(tie_pick, live.first_node(s));
    } else if (tie_break == TieBreak::kLast) {
      tie_pick = std::max(tie_pick, live.last_node(s));
    }
  };
  for (int s : tied_) note_tie(s);
  int64_t request_bound = kNoBound;
  if (c_.traits.score_bounds) {
    const int64_t b = c_.policy.RequestScoreBound(key);
    if (b != kNoScoreBound) request_bound = std::max(b, kLowestScore);
  }
  for (int s : fresh_) {
    if (best != kNoFit && c_.traits.score_bounds) {
      const int64_t slot_bound = SlotBound(c_.state, c_.policy, live, &slot_bound_, s);
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
      tied_.clear();
      tie_pick = -1;
    }
    tied_.push_back(s);
    note_tie(s);
  }
}

// Scans the live node states of the capacity partitions the request may fit (in any order: the outcome depends
// only on the set of slots): a state's verdict for the shape is computed once per slot occupancy, on one of its
// nodes; the best verdict among the slots with the request's memory wins, and the tie rule picks among their
// nodes. Its cost grows with those live states (up to ~1,000 on a churning openb), not with the nodes changed
// since the shape was last used. Slots without a memoised verdict are scored after the others (ScoreFresh).
int StateCache::ScanStates(ShapeCache& cache, const TaskRequest& key, const TaskRequest& request, Rng& rng) {
  LiveStates& live = live_;
  if (!cache.ranges && static_cast<int>(cache.by_slot.size()) < live.size()) cache.by_slot.resize(live.size());
  int64_t best = kNoFit;
  bool memory_short = false;  // a slot at least as good as the best lacked the request's memory
  tied_.clear();
  fresh_.clear();
  EligibleParts(key, &eligible_);
  for (int p : eligible_) {
    for (int s : live.part(p)) {
      const LiveStates::Slot& slot = live.slot(s);
      ++c_.stats.nodes_visited;
      if (!MayFit(slot.capacity, key)) continue;  // the capacity check first: it reads no per-shape memo
      if (!cache.ranges && cache.by_slot[s].state != slot.state) {
        fresh_.push_back(s);  // no memoised verdict: scored after the others (ScoreFresh)
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
        tied_.clear();
      }
      tied_.push_back(s);
    }
  }
  if (!fresh_.empty()) ScoreFresh(cache, key, request, &best, &memory_short);
  if (memory_short) ++c_.stats.memory_scans;
  if (best == kNoFit) return -1;
  int pick = -1;
  switch (c_.policy.tie_break()) {
    case TieBreak::kFirst:
      for (int s : tied_) pick = pick < 0 ? live.first_node(s) : std::min(pick, live.first_node(s));
      break;
    case TieBreak::kLast:
      for (int s : tied_) pick = std::max(pick, live.last_node(s));
      break;
    case TieBreak::kRandom: {
      // The k-th tied node in node order, k uniform (one draw, as the per-node score tree's pick).
      tied_nodes_.clear();
      for (int s : tied_) tied_nodes_.insert(tied_nodes_.end(), live.nodes(s).begin(), live.nodes(s).end());
      const int ties = static_cast<int>(tied_nodes_.size());
      const int k = ties > 1 ? std::uniform_int_distribution<int>(0, ties - 1)(rng) : 0;
      std::nth_element(tied_nodes_.begin(), tied_nodes_.begin() + k, tied_nodes_.end());
      pick = tied_nodes_[k];
      break;
    }
  }
  return pick;
}

// The shape's verdict for the state in live slot s (which fits the capacity check), from the per-slot memo.
int64_t StateCache::SlotVerdict(ShapeCache& cache, const TaskRequest& key, int s) {
  const LiveStates::Slot& slot = live_.slot(s);
  if (s >= static_cast<int>(cache.by_slot.size())) cache.by_slot.resize(live_.size());
  ShapeCache::SlotVerdict& memo = cache.by_slot[s];
  if (memo.state != slot.state) {
    memo.state = slot.state;
    memo.verdict = Evaluate(key, live_.any_node(s));
  }
  return memo.verdict;
}

// As SlotVerdict, for a shape keyed without memory whose policy gives memory ranges: the verdict for `request` (whose
// memory the state in slot s has), from the slot's recent verdicts whose range holds the request's memory.
int64_t StateCache::RangeVerdict(ShapeCache& cache, const TaskRequest& request, int s) {
  constexpr int kWays = ShapeCache::kRangeWays;
  const uint32_t state = live_.slot(s).state;
  if (static_cast<int>(cache.range_at.size()) < live_.size()) cache.range_at.resize(live_.size(), -1);
  int32_t& at = cache.range_at[s];
  if (at < 0) {
    at = static_cast<int32_t>(cache.by_range.size());
    cache.by_range.resize(cache.by_range.size() + kWays);
  }
  ShapeCache::RangeVerdict* ways = &cache.by_range[at];
  const int node = live_.any_node(s);
  for (int w = 0; w < kWays; ++w) {
    if (ways[w].state != state) continue;
    if (ways[w].lo <= request.memory_mib && request.memory_mib <= ways[w].hi) return ways[w].verdict;
    // A verdict is kept for its own memory first; its range is asked of the policy only when another memory of
    // the shape comes (most shapes come with one memory: the range would be computed for nothing).
    if (!ways[w].ranged) {
      ways[w].ranged = true;
      range_request_ = request;
      range_request_.memory_mib = ways[w].lo;
      c_.policy.MemoryRange(c_.state, node, range_request_, &ways[w].lo, &ways[w].hi);
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
int StateCache::ScanNodes(ShapeCache& cache, const TaskRequest& key, const TaskRequest& request, Rng& rng) {
  const int count = c_.state.node_count();
  // A uniform score (random) ranks a node by whether it fits; where the capacity summary decides that exactly,
  // neither FitNode nor the memo is needed.
  const bool by_capacity = c_.traits.uniform_score && ExactFor(key);
  auto verdict = [&](int n) -> int64_t {
    ++c_.stats.nodes_visited;
    // The capacity check first: it reads no per-shape memo.
    if (!MayFit(node_capacity_[n], key)) return kNoFit;
    if (by_capacity && node_capacity_[n].exact) return 0;
    if (!cache.memo_ok) return Evaluate(key, n);
    if (cache.by_states) return SlotVerdict(cache, key, live_.slot_of(n));  // one memo for both scans
    const uint32_t id = node_state_[n];
    if (id >= cache.memo.size()) cache.memo.resize(std::max<size_t>(id + 1, cache.memo.size() * 2), kUnknown);
    int64_t& memo = cache.memo[id];
    if (memo == kUnknown) memo = Evaluate(key, n);
    return memo;
  };
  if (!cache.tree_valid || cache.scores.count() != count || !changed_.Since(c_.state, cache.seq)) {
    cache.scores.Assign(count);
    for (int n = 0; n < count; ++n) cache.scores.SetLeaf(n, verdict(n), node_capacity_[n].free_memory);
    cache.scores.Build();
    cache.tree_valid = true;
  } else {
    for (int n : changed_.nodes()) cache.scores.Set(n, verdict(n), node_capacity_[n].free_memory);
  }
  cache.seq = c_.state.change_seq();
  if (cache.scores.best_memory() < request.memory_mib) ++c_.stats.memory_scans;
  return PickBest(cache.scores, c_.policy.tie_break(), request.memory_mib, rng);
}

}  // namespace

std::unique_ptr<Engine> MakeStateCache(const EngineContext& context) { return std::make_unique<StateCache>(context); }

}  // namespace xpool::scheduler_internal
