// The ordered-walk engine, for cacheable policies with a NodeOrderKey and TieBreak::kFirst (best-fit, binpack,
// spread): nodes are kept in key order in a few partitions by what they can still take (idle devices; else the
// best shareable free compute, in 100-milli buckets). A placement walks only the partitions that can hold the
// request, merged in key order, and stops at the first fitting node whose score drops below the best (the key is
// monotone in the score), taking the lowest node index among equal best scores.
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "scheduler/fit.h"
#include "scheduler/internal/engine.h"
#include "scheduler/internal/score_cache.h"
#include "scheduler/scheduler.h"

namespace xpool::scheduler_internal {
namespace {

using Entry = std::pair<int64_t, int>;  // (key, node)
using Partition = std::set<Entry>;

// Idle = no task on the device (healthy, not cordoned); shareable = could take one more sharer.
int PartitionOf(const Node& n, const Capacity& c) {
  if (!n.ready || n.cordoned) return -1;
  return CapacityPart(c);
}

// The entries of several partitions merged in (key, node) order: their heads in a min-heap by current entry. Each
// head caches its current entry so choosing the next node reads no tree node. Lives for one walk; borrows the
// partitions, which must not change meanwhile.
class MergedParts {
 public:
  MergedParts(const Partition* parts, const std::vector<int>& eligible) : parts_(parts) {
    for (int p : eligible) {
      if (parts[p].empty()) continue;
      Head& h = heads_[count_++];
      h = {parts[p].begin(), parts[p].end(), kDone, p};
      h.Load();
    }
    for (int i = count_ / 2 - 1; i >= 0; --i) SiftDown(i);
  }
  bool done() const { return count_ == 0; }
  const Entry& top() const { return heads_[0].cur; }
  // Moves past the top entry.
  void Pop() {
    ++heads_[0].it;
    heads_[0].Load();
    SettleTop();
  }
  // Moves past every entry with key `key` (the heads holding it surface one after the other).
  void SkipKey(int64_t key) {
    while (count_ > 0 && heads_[0].cur.first == key) {
      heads_[0].it = parts_[heads_[0].part].lower_bound({key, std::numeric_limits<int>::max()});
      heads_[0].Load();
      SettleTop();
    }
  }

 private:
  static constexpr Entry kDone{std::numeric_limits<int64_t>::max(), std::numeric_limits<int>::max()};  // exhausted
  struct Head {
    Partition::const_iterator it, end;
    Entry cur;
    int part;
    void Load() { cur = it != end ? *it : kDone; }
  };
  void SiftDown(int i) {
    while (true) {
      const int l = 2 * i + 1, r = l + 1;
      int least = i;
      if (l < count_ && heads_[l].cur < heads_[least].cur) least = l;
      if (r < count_ && heads_[r].cur < heads_[least].cur) least = r;
      if (least == i) return;
      std::swap(heads_[i], heads_[least]);
      i = least;
    }
  }
  // The top head moved on: drop it when exhausted, then restore the heap.
  void SettleTop() {
    if (heads_[0].cur == kDone) heads_[0] = heads_[--count_];
    if (count_ > 0) SiftDown(0);
  }

  const Partition* parts_;
  Head heads_[kParts];
  int count_ = 0;
};

// OrderedWalk: the partitions, kept current with the change journal. Owned by one Scheduler; not thread-safe.
class OrderedWalk final : public Engine {
 public:
  explicit OrderedWalk(const EngineContext& context) : c_(context) {}

  bool Schedule(const TaskRequest& request, Rng& rng, ScheduleOutcome* out) override {
    const int node = Walk(request, rng);
    if (node < 0) return false;
    out->kind = OutcomeKind::kPlaced;
    out->allocation = MakeAllocation(c_.state, request, node, best_devices_);
    return true;
  }
  void DropScores() override { synced_ = false; }

 private:
  void Sync();                                     // partitions up to date with the journal
  int Walk(const TaskRequest& request, Rng& rng);  // the best node (devices in best_devices_), or -1
  void Update(int n);                              // node n's key, capacity and partition

  EngineContext c_;
  Partition parts_[kParts];
  std::vector<int64_t> key_;        // per node
  std::vector<int> part_;           // per node: its partition, or -1 (not ready, cordoned)
  std::vector<Capacity> capacity_;  // per node
  uint64_t synced_seq_ = 0;
  bool synced_ = false;
  ChangedNodes changed_;
  std::vector<int> eligible_;
  NodeCandidate candidate_;
  std::vector<int> chosen_;
  std::vector<int> best_devices_;
};

void OrderedWalk::Update(int n) {
  if (part_[n] >= 0) parts_[part_[n]].erase({key_[n], n});
  const int64_t key = c_.policy.NodeOrderKey(c_.state, n);
  key_[n] = key;
  capacity_[n] = CapacityOf(c_.state, n);
  part_[n] = PartitionOf(c_.state.node(n), capacity_[n]);
  if (part_[n] >= 0) parts_[part_[n]].insert({key, n});
}

void OrderedWalk::Sync() {
  const int count = c_.state.node_count();
  if (!synced_ || !changed_.Since(c_.state, synced_seq_)) {
    for (auto& p : parts_) p.clear();
    key_.assign(count, 0);
    part_.assign(count, -1);
    capacity_.assign(count, Capacity{});
    for (int n = 0; n < count; ++n) Update(n);
    synced_ = true;
  } else {
    if (static_cast<int>(key_.size()) < count) {
      key_.resize(count, 0);
      part_.resize(count, -1);
      capacity_.resize(count);
    }
    for (int n : changed_.nodes()) Update(n);
  }
  synced_seq_ = c_.state.change_seq();
}

int OrderedWalk::Walk(const TaskRequest& request, Rng& rng) {
  Sync();
  EligibleParts(request, &eligible_);
  MergedParts merged(parts_, eligible_);
  int best_node = -1;
  int64_t best_score = 0;
  int64_t best_key = 0;
  while (!merged.done()) {
    const auto [key, n] = merged.top();
    if (best_node >= 0 && key == best_key) {
      // Same key = same score, and every later node of this key run has a larger index: skip the run in every
      // partition.
      merged.SkipKey(key);
      continue;
    }
    merged.Pop();
    ++c_.stats.nodes_visited;
    if (!MayFit(capacity_[n], request)) continue;
    ++c_.stats.fit_calls;
    if (!FitNode(c_.state, n, request, false, &candidate_, nullptr)) continue;
    int64_t score = 0;
    if (!c_.policy.Score(c_.state, request, candidate_, rng, &score, &chosen_) ||
        !ValidDeviceChoice(c_.state, request, candidate_, chosen_)) {
      continue;
    }
    if (best_node >= 0 && score < best_score) break;  // monotone: nothing later can reach the best score
    if (best_node < 0 || score > best_score || n < best_node) {
      best_node = n;
      best_score = score;
      best_key = key;
      std::swap(best_devices_, chosen_);
    }
  }
  return best_node;
}

}  // namespace

std::unique_ptr<Engine> MakeOrderedWalk(const EngineContext& context) { return std::make_unique<OrderedWalk>(context); }

}  // namespace xpool::scheduler_internal
