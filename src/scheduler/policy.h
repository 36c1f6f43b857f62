#pragma once
// PlacementPolicy: how the scheduler ranks the nodes that can take a request, and which devices it uses there.
//
// A policy sees a const view of the cluster, never does I/O, reads no clock and no global. It caches no verdicts
// (the Scheduler does); it may keep learned state between calls (a target workload, memos of its own measures),
// so one object serves one scheduling loop: not thread-safe. Owned by the caller of Schedule().
#include <cstdint>
#include <limits>
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

// What a policy promises about its Score, stated once: a policy returns the same value from traits() for its whole
// life, and a Scheduler reads it when it is built to choose how it caches. Each promise either lets the Scheduler
// skip work or names the optional hook below that the policy implements. A promise left unmade costs only speed;
// a broken one changes placements. Plain value.
struct ScoringTraits {
  // Score's result depends only on the node (description and usage), the request, the cluster's largest-node
  // capacities (ClusterTotals::max_node_*), the policy's ScoreEpoch and its NodeTag for the node — never on the
  // node's index, its name or its devices' uuids, the rng, or other state kept between calls. A Scheduler then
  // reuses a verdict until the node changes, and shares one verdict between nodes whose descriptions (names and
  // uuids aside), usage and tags are equal; on a node whose devices are alike (no link table), usage equal up to
  // a permutation of the devices, so the score must not depend on which alike device holds what (the device
  // choice may). Requests naming uuids are scored per node. Default false: every call scores every fitting node.
  bool cacheable = false;
  // With cacheable: Score (the score and the device choice) never reads request.memory_mib. A Scheduler then keeps
  // one verdict cache for requests that differ only in memory and checks each node's free memory itself.
  bool ignores_request_memory = false;
  // With cacheable, for a Score that reads request.memory_mib: MemoryRange is implemented.
  bool memory_ranges = false;
  // With cacheable: Score gives every fitting node the score 0 and never vetoes one (the tie-break does the
  // choosing). A Scheduler may then rank a node by whether it fits, from a summary of its free capacity.
  bool uniform_score = false;
  // With cacheable: NodeTag is implemented (per-node state kept by the policy and changed only in OnPlaced).
  bool node_tags = false;
  // With cacheable: NodeOrderKey is implemented (the ranking does not depend on the request).
  bool node_order_key = false;
  // With cacheable: ScoreBound and RequestScoreBound are implemented.
  bool score_bounds = false;
};

// ScoreBound / RequestScoreBound's answer when there is no bound.
inline constexpr int64_t kNoScoreBound = std::numeric_limits<int64_t>::max();

// PlacementPolicy: scores a node for a request over a const view of the cluster (Score), says how equal scores are
// broken, states its ScoringTraits, and is told of arrivals and placements. The Scheduler does all caching; the
// hooks after traits() exist only for the promises a policy makes there.
class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string_view name() const = 0;

  // Scores a candidate node; higher is better. Fills `chosen_devices` with exactly request.device_count device
  // indices taken from candidate.fitting_devices (ignored for device-less requests). Returning false vetoes the
  // node (e.g. no NUMA-consistent or topology-acceptable choice).
  virtual bool Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate, Rng& rng,
                     int64_t* score, std::vector<int>* chosen_devices) = 0;

  // Read on every call: a policy may break ties differently per request (e.g. per kind of request, set in
  // OnArrival); a policy that does so states no node_order_key.
  virtual TieBreak tie_break() const { return TieBreak::kFirst; }

  virtual ScoringTraits traits() const { return {}; }

  // For cacheable policies whose scores change with state learned between calls (e.g. a learned target): a
  // value that changes whenever Score's results may have changed; a Scheduler then drops its cached verdicts.
  // Between changes Score keeps the cacheable promise. Default 0 (never changes).
  virtual uint64_t ScoreEpoch() const { return 0; }

  // traits().memory_ranges: [*lo, *hi], holding request.memory_mib, such that on `node` in this state (and this
  // ScoreEpoch) Score gives every request equal to `request` but for a memory in [*lo, *hi] that the node's free
  // memory fits the same result as `request`: the score, or the veto (the chosen devices may differ, each choice
  // valid).
  virtual void MemoryRange(const ClusterState& /*state*/, int /*node*/, const TaskRequest& request, int64_t* lo,
                           int64_t* hi) {
    *lo = *hi = request.memory_mib;
  }

  // traits().node_tags: a value summarising the per-node state the policy keeps (changed only by OnPlaced, after
  // the placement changed the node). Score may depend on it; nodes with different tags share no verdict.
  virtual uint64_t NodeTag(const ClusterState& /*state*/, int /*node*/) const { return 0; }

  // traits().node_order_key: a key computed from the node alone (description, usage, ClusterTotals::max_node_*)
  // such that, for every request, Score over the nodes that fit never increases as the key grows (lower key = at
  // least as good). A Scheduler then walks nodes in key order and stops early instead of scoring every node.
  virtual int64_t NodeOrderKey(const ClusterState& /*state*/, int /*node*/) const { return 0; }

  // traits().score_bounds: an upper bound on Score for every request on this node, from the node alone
  // (description, usage, ClusterTotals::max_node_*), under the cacheable promise (nodes sharing a verdict share
  // the bound), or kNoScoreBound. A Scheduler then skips scoring a node whose bound is below a score it already
  // found (never a node that could tie it).
  virtual int64_t ScoreBound(const ClusterState& /*state*/, int /*node*/) { return kNoScoreBound; }
  // traits().score_bounds: an upper bound on Score for this request on every node whose ScoreBound is not
  // kNoScoreBound (the Scheduler uses the lesser of the two).
  virtual int64_t RequestScoreBound(const TaskRequest& /*request*/) const { return kNoScoreBound; }

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
