#pragma once
// PlacementPolicy: how the scheduler ranks the nodes that can take a request, and which devices it uses there.
//
// A policy sees a const view of the cluster, never does I/O, reads no clock and no global. A policy object may
// keep state between calls (caches keyed by node generation, a learned shape distribution), so one object
// serves one scheduling loop: not thread-safe. Owned by the caller of Schedule().
#include <cstdint>
#include <memory>
#include <random>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/cluster_state.h"
#include "model/task_request.h"

namespace xpool {

// The injected random source: seeded by the caller so every run is reproducible.
using Rng = std::mt19937_64;

// Which node wins among equal best scores. Node order is the ClusterState's node order.
enum class TieBreak : uint8_t { kFirst, kLast, kRandom };

// A node that passed every filter, with the devices that can each take one replica's per-device share.
struct NodeCandidate {
  int node = -1;
  std::vector<int> fitting_devices;  // ascending device index; at least request.device_count of them
};

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string_view name() const = 0;

  // Scores a candidate node; higher is better. Fills `chosen_devices` with exactly request.device_count device
  // indices taken from candidate.fitting_devices (ignored for device-less requests). Returning false vetoes the
  // node (e.g. no NUMA-consistent or topology-acceptable choice).
  virtual bool Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate, Rng& rng,
                     int64_t* score, std::vector<int>* chosen_devices) = 0;

  virtual TieBreak tie_break() const { return TieBreak::kFirst; }

  // True when Score's result depends only on the node (description and usage), the request and the cluster's
  // largest-node capacities (ClusterTotals::max_node_*), never on the node's index, the rng or state kept
  // between calls. A Scheduler may then reuse a node's score until the node's generation changes and evaluate
  // identical nodes once. Default false: every call scores every fitting node.
  // A Scheduler also shares one verdict between nodes whose descriptions (names and device uuids aside) and usage
  // are equal — on a node whose devices are alike (no link table), equal up to a permutation of the devices — so
  // a cacheable policy must not score by node name or device uuid (requests naming uuids are scored per node),
  // nor let a node's score depend on which of its alike devices holds what (the device choice may).
  virtual bool cacheable() const { return false; }

  // For cacheable policies whose scores change with state learned between calls (e.g. a learned target): a
  // value that changes whenever Score's results may have changed; a Scheduler then drops its cached scores.
  // Between changes Score must obey the cacheable() contract. Default 0 (never changes).
  virtual uint64_t ScoreEpoch() const { return 0; }

  // For cacheable policies: true when Score (the score and the device choice) never reads request.memory_mib.
  // A Scheduler then keeps one score cache for requests that differ only in memory and checks each node's free
  // memory itself (fewer request shapes to keep current). Default false.
  virtual bool ignores_request_memory() const { return false; }

  // For cacheable policies whose Score reads request.memory_mib: true when MemoryRange is implemented. A Scheduler
  // then keeps one score cache for requests that differ only in memory, reusing a node state's verdict for the
  // memories in its range. Default false (one cache per request memory).
  virtual bool has_memory_ranges() const { return false; }
  // With has_memory_ranges(): [*lo, *hi], holding request.memory_mib, such that on `node` in this state (and this
  // ScoreEpoch) Score gives every request equal to `request` but for a memory in [*lo, *hi] that the node's free
  // memory fits the same result as `request`: the score, or the veto (the chosen devices may differ, each choice
  // valid).
  virtual void MemoryRange(const ClusterState& /*state*/, int /*node*/, const TaskRequest& request, int64_t* lo,
                           int64_t* hi) {
    *lo = *hi = request.memory_mib;
  }

  // For cacheable policies: true when Score gives every fitting node the score 0 and never vetoes one (random:
  // the tie-break does the choosing). A Scheduler may then rank a node by whether it fits alone, from a summary
  // of its free capacity, without FitNode or Score. Default false.
  virtual bool uniform_score() const { return false; }

  // For cacheable policies that keep per-node state changed only by OnPlaced (after the placement changed the
  // node): a value summarising that state. Score may depend on it; nodes with different tags are not shared.
  virtual uint64_t NodeTag(const ClusterState& /*state*/, int /*node*/) const { return 0; }

  // Optional, for cacheable policies whose ranking does not depend on the request: a key computed from the node
  // alone (description, usage, ClusterTotals::max_node_*) such that, for every request, Score over the nodes
  // that fit never increases as the key grows (lower key = at least as good). A Scheduler then walks nodes in
  // key order and stops early instead of scoring every node. Default: no such key.
  virtual bool NodeOrderKey(const ClusterState& /*state*/, int /*node*/, int64_t* /*key*/) const { return false; }

  // Optional, for cacheable policies: an upper bound on Score for every request on this node, from the node alone
  // (description, usage, ClusterTotals::max_node_*), under the same contract as cacheable(): nodes sharing a
  // verdict share the bound. A Scheduler then skips scoring a node whose bound is below a score it already found
  // (never a node that could tie it). Default: no bound.
  virtual bool ScoreBound(const ClusterState& /*state*/, int /*node*/, int64_t* /*bound*/) { return false; }
  // Optional, with ScoreBound: an upper bound on Score for this request on every node that has a ScoreBound (the
  // Scheduler uses the lesser of the two). Default: none.
  virtual bool RequestScoreBound(const TaskRequest& /*request*/, int64_t* /*bound*/) const { return false; }

  // For cacheable policies that keep a score cache of their own: a caller that memoises verdicts itself (a
  // Scheduler scanning node states) says so, and the policy may then skip its cache (which would only miss
  // there). Results must be the same either way. The caller says false again when it is done.
  virtual void SetCallerCachesScores(bool /*caches*/) {}

  // Told once when a request arrives, before it is first scheduled; callers retrying a waiting request do not
  // call it again. Learning policies (fgd, default) count request shapes here.
  virtual void OnArrival(const TaskRequest& /*request*/) {}

  // Told after an allocation from this policy was applied to `state` (learning policies use it).
  virtual void OnPlaced(const ClusterState& /*state*/, const TaskRequest& /*request*/,
                        const Allocation& /*allocation*/) {}
};

// Names accepted by MakePolicy: see policy_registry.cc. Unknown → InvalidArgument listing the known names.
Result<std::unique_ptr<PlacementPolicy>> MakePolicy(std::string_view name);
std::vector<std::string_view> PolicyNames();

}  // namespace xpool
