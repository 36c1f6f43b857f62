#pragma once
// Internal to the Scheduler's engines (ordered_walk.cc, state_cache.cc): the per-node capacity summary, the
// cached-verdict sentinels, the per-node score tree and the table of live node states that the state cache scans.
// Not a public API.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "model/cluster_state.h"
#include "model/task_request.h"
#include "scheduler/policy.h"

namespace xpool::scheduler_internal {

// What a node can still take, for the walk's cheap pre-checks and its partition.
// Kept in one compact array so the walk's skips touch no Node.
struct Capacity {
  int64_t free_cpu = 0;
  int64_t free_memory = 0;
  int idle = 0;            // devices nobody holds
  int64_t best_share = 0;  // the most free compute on a device that takes one more sharer
  bool exact = false;      // MayFit is exact for plain requests (see ExactFor)
};

Capacity CapacityOf(const ClusterState& state, int node);

// Capacity partitions: what a node can still take, coarsely — nodes with idle devices by their count (1..8+),
// the others by their best shareable free compute in 100-milli buckets. A node outside the partitions that
// EligibleParts lists for a request fails MayFit for it.
constexpr int kComputeBuckets = 11;  // no idle device, by best shareable free compute / 100
constexpr int kIdleParts = 8;        // 1..8+ idle devices
constexpr int kParts = kComputeBuckets + kIdleParts;
inline int CapacityPart(const Capacity& c) {
  if (c.idle > 0) return kComputeBuckets + std::min(c.idle, kIdleParts) - 1;
  return static_cast<int>(std::min<int64_t>(c.best_share / 100, kComputeBuckets - 1));
}
// The partitions that may hold a node able to take `r` (a node outside them fails MayFit: see CapacityPart).
void EligibleParts(const TaskRequest& r, std::vector<int>* parts);

// False when the node certainly cannot take `r` (a necessary condition only; FitNode decides).
inline bool MayFit(const Capacity& c, const TaskRequest& r) {
  if (c.free_cpu < r.cpu_milli || c.free_memory < r.memory_mib) return false;
  if (!r.wants_devices()) return true;
  if (r.exclusive()) return c.idle >= r.device_count;
  return c.idle > 0 || c.best_share >= r.device_compute_milli;
}

// True when, on a node whose Capacity is `exact`, MayFit(r) equals FitNode(r): the request takes whole devices or
// a nonzero share of one (a zero share fits any device with room for a sharer, which best_share does not tell
// apart from none), names no vendor, type or uuid, asks no device memory and needs no NUMA grouping (the checks
// Capacity does not summarise).
inline bool ExactFor(const TaskRequest& r) {
  return (!r.wants_devices() || (r.device_compute_milli > 0 && (r.exclusive() || r.device_count == 1))) &&
         !r.vendor.has_value() && r.type_include.empty() && r.type_exclude.empty() && r.uuid_include.empty() &&
         r.uuid_exclude.empty() && r.device_memory_mib == 0 && r.device_memory_percent == 0 && r.mig_profile.empty() &&
         !(r.numa_bind && r.device_count > 1);
}

// A cached verdict is one int64: the score, or one of two sentinels below every score (a real score that low is
// raised to kLowestScore, the one place the cache can differ from Schedule()).
constexpr int64_t kUnknown = std::numeric_limits<int64_t>::min();
constexpr int64_t kNoFit = kUnknown + 1;
constexpr int64_t kLowestScore = kUnknown + 2;

// Per-node scores in a max segment tree (each inner entry: the best score below it, how many nodes hold it and the
// least free memory among them), so a placement finds the best node, and the first, last or k-th among equals, in
// O(log nodes). Each leaf also holds its node's free memory, for score caches shared by requests that differ
// only in memory (ScoringTraits::ignores_request_memory): when every best node has the memory the request
// asks for, the answer is the tree's; otherwise a pruned search (BestWithMemory) finds the best node among those
// with the memory, using each subtree's most free memory over its fitting nodes.
class ScoreTree {
 public:
  void Assign(int count) {
    int size = 1;
    while (size < count) size *= 2;
    if (size == size_ && tree_.size() == 2 * static_cast<size_t>(size)) {
      // Same shape of tree: SetLeaf + Build rewrite the first `count` leaves and every inner entry; only the
      // leaves past `count` need clearing.
      std::fill(tree_.begin() + size_ + count, tree_.end(), Entry{});
    } else {
      size_ = size;
      tree_.assign(2 * static_cast<size_t>(size_), Entry{});
    }
    count_ = count;
  }
  int count() const { return count_; }
  // Set every leaf first with SetLeaf, then Build.
  void SetLeaf(int i, int64_t v, int64_t memory) {
    Entry& e = tree_[size_ + i];
    e.best = v;
    e.memory = memory;
    e.most_memory = v == kNoFit ? kNoMemory : memory;
  }
  void Build() {
    for (int i = size_ - 1; i >= 1; --i) Pull(i);
  }
  void Set(int i, int64_t v, int64_t memory) {
    int at = size_ + i;
    if (tree_[at].best == v && tree_[at].memory == memory) return;
    SetLeaf(i, v, memory);
    // Up to the first ancestor that the change leaves as it was.
    for (at /= 2; at >= 1; at /= 2) {
      const Entry before = tree_[at];
      Pull(at);
      const Entry& after = tree_[at];
      if (after.best == before.best && after.ties == before.ties && after.memory == before.memory &&
          after.most_memory == before.most_memory) {
        break;
      }
    }
  }
  int64_t best() const { return tree_[1].best; }
  int ties() const { return tree_[1].ties; }
  // The least free memory among the nodes holding the best score.
  int64_t best_memory() const { return tree_[1].memory; }
  // The k-th (0-based) node, in index order, among those holding the best score.
  int Kth(int k) const { return KthBelow(1, k); }

  // The node the tie-break picks among the best-scored of those with at least `memory` free; -1 when none.
  int BestWithMemory(int64_t memory, TieBreak tie_break, Rng& rng) const {
    int64_t found = kNoFit;
    BestScore(1, memory, &found);
    if (found == kNoFit) return -1;
    switch (tie_break) {
      case TieBreak::kFirst:
        return Find(1, memory, found, /*last=*/false);
      case TieBreak::kLast:
        return Find(1, memory, found, /*last=*/true);
      case TieBreak::kRandom: {
        const int ties = Count(1, memory, found);
        const int k = ties > 1 ? std::uniform_int_distribution<int>(0, ties - 1)(rng) : 0;
        return KthWithMemory(1, memory, found, k);
      }
    }
    return -1;
  }

 private:
  static constexpr int64_t kNoMemory = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kAnyMemory = std::numeric_limits<int64_t>::max();

  // One entry per tree position, interleaved so that an update touches one cache line per level.
  struct Entry {
    int64_t best = kNoFit;
    int64_t memory = kNoMemory;       // leaf: the node's free memory; inner: the least among the best leaves below
    int64_t most_memory = kNoMemory;  // the most free memory among the fitting leaves below
    int32_t ties = 1;
  };

  void Pull(int i) {
    const Entry& a = tree_[2 * i];
    const Entry& b = tree_[2 * i + 1];
    Entry& e = tree_[i];
    e.best = std::max(a.best, b.best);
    e.ties = (a.best == e.best ? a.ties : 0) + (b.best == e.best ? b.ties : 0);
    e.memory = std::min(a.best == e.best ? a.memory : kAnyMemory, b.best == e.best ? b.memory : kAnyMemory);
    e.most_memory = std::max(a.most_memory, b.most_memory);
  }
  bool Excluded(int i, int64_t memory, int64_t score) const {
    return tree_[i].best < score || tree_[i].most_memory < memory;
  }
  // Every best-scored node below i has the memory (so the plain tie walk applies there).
  bool AllBestFit(int i, int64_t memory, int64_t score) const {
    return tree_[i].best == score && tree_[i].memory >= memory;
  }

  // The k-th node below `at`, in index order, among those holding at's best score.
  int KthBelow(int at, int k) const {
    const int64_t target = tree_[at].best;
    while (at < size_) {
      const int left = 2 * at;
      if (tree_[left].best == target && k < tree_[left].ties) {
        at = left;
      } else {
        if (tree_[left].best == target) k -= tree_[left].ties;
        at = left + 1;
      }
    }
    return at - size_;
  }
  // Branch and bound: raises *found to the best score of a fitting node with the memory below i.
  void BestScore(int i, int64_t memory, int64_t* found) const {
    if (tree_[i].most_memory < memory || tree_[i].best <= *found) return;
    if (i >= size_) {
      *found = tree_[i].best;
      return;
    }
    const bool right_first = tree_[2 * i + 1].best > tree_[2 * i].best;
    BestScore(right_first ? 2 * i + 1 : 2 * i, memory, found);
    BestScore(right_first ? 2 * i : 2 * i + 1, memory, found);
  }
  // The first (or last) node below i with `score` and the memory; -1 when none.
  int Find(int i, int64_t memory, int64_t score, bool last) const {
    if (Excluded(i, memory, score)) return -1;
    if (AllBestFit(i, memory, score)) return KthBelow(i, last ? tree_[i].ties - 1 : 0);
    if (i >= size_) return -1;
    const int a = Find(last ? 2 * i + 1 : 2 * i, memory, score, last);
    return a >= 0 ? a : Find(last ? 2 * i : 2 * i + 1, memory, score, last);
  }
  // How many nodes below i hold `score` and have the memory.
  int Count(int i, int64_t memory, int64_t score) const {
    if (Excluded(i, memory, score)) return 0;
    if (AllBestFit(i, memory, score)) return tree_[i].ties;
    if (i >= size_) return 0;
    return Count(2 * i, memory, score) + Count(2 * i + 1, memory, score);
  }
  // The k-th node below i, in index order, among those holding `score` with the memory.
  int KthWithMemory(int i, int64_t memory, int64_t score, int k) const {
    if (AllBestFit(i, memory, score)) return KthBelow(i, k);
    if (i >= size_) return i - size_;  // not reached: Count said this subtree holds the k-th
    const int left = Count(2 * i, memory, score);
    return k < left ? KthWithMemory(2 * i, memory, score, k) : KthWithMemory(2 * i + 1, memory, score, k - left);
  }

  int size_ = 1;
  int count_ = 0;
  std::vector<Entry> tree_;
};

// LiveStates: the node states that some node is in now, in dense slots (a slot is reused once its last node
// leaves), each with its nodes and their common capacity summary, and the occupied slots listed by capacity
// partition (CapacityPart; in no particular order within one). The score cache scans slots instead of nodes —
// only those of the partitions a request may fit: nodes in one state share a verdict, so a request's best node is
// found among the best slots, the tie rule then choosing among their nodes (first, last or k-th by node index).
// Owned by a Scheduler; not thread-safe.
class LiveStates {
 public:
  static constexpr uint32_t kNoState = std::numeric_limits<uint32_t>::max();
  struct Slot {
    Capacity capacity;          // of each node in the state (equal: the state key covers what it summarises)
    uint32_t state = kNoState;  // the interned state id; kNoState while the slot is free
    int count = 0;              // nodes in the state
  };

  // No node in any state; `node_count` nodes may be assigned.
  void Reset(int node_count);
  // Node `node` is now in state `state` (whose nodes all have `capacity`).
  void Move(int node, uint32_t state, const Capacity& capacity);

  int slot_of(int node) const { return node_slot_[node]; }  // after Move(node, ...)
  // Whether some node is in state `state` now.
  bool holds(uint32_t state) const { return state < slot_of_state_.size() && slot_of_state_[state] >= 0; }
  int size() const { return static_cast<int>(slots_.size()); }  // slots, free ones included
  int live() const { return static_cast<int>(slots_.size() - free_.size()); }
  const Slot& slot(int s) const { return slots_[s]; }
  int any_node(int s) const { return nodes_[s].front(); }
  const std::vector<int>& nodes(int s) const { return nodes_[s]; }
  // The lowest / highest node index in slot s (its nodes are kept in ascending order).
  int first_node(int s) const { return nodes_[s].front(); }
  int last_node(int s) const { return nodes_[s].back(); }
  // The occupied slots whose capacity is in partition p (0 <= p < kParts).
  const std::vector<int>& part(int p) const { return part_slots_[p]; }

 private:
  std::vector<Slot> slots_;
  std::vector<std::vector<int>> nodes_;  // per slot, ascending
  std::vector<int> free_;                // free slots
  std::vector<int> slot_of_state_;       // per state id: its slot, or -1
  std::vector<int> node_slot_;           // per node: its slot, or -1
  std::vector<int> part_slots_[kParts];  // per partition: its occupied slots
  std::vector<int> slot_pos_;            // per occupied slot: its index in part_slots_[CapacityPart(capacity)]
};

}  // namespace xpool::scheduler_internal
