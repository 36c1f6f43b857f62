#pragma once
// PlacementExplainer: why no node can take a request now, word for word as Schedule() says it, without running
// FitNode's per-device loop on every node.
//
// Schedule()'s reason for a request it cannot place is a tally of each node's verdict (FitNode). Touching every
// device of every node (a pass's ~130 explained failures over 1,213 nodes × 8 devices) is mostly cache misses.
// The device part of a node's verdict — everything FitNode checks after the node's readiness, CPU and memory —
// depends only on the node's devices (description, uuids aside, and usage; up to a permutation of alike
// devices, as Scheduler's state ids), so nodes are grouped by a device key kept current from the ClusterState's
// change journal. The full FitNode runs once per group and device request (the request's device part; on the
// first node of the group that passes the node-level checks), remembered while the group ids last, and only the
// node-level checks run on every node — on a compact per-node copy of what they read (readiness, cordon, free CPU
// and memory), kept current with the group ids. The tally is the same ReasonTally, the outcome the same
// NotPlacedOutcome: the text is identical to Schedule()'s.
//
// Exactness guards: requests naming device uuids, policies that are not cacheable, and any request that some
// node turns out to fit (the caller's "no node" disagreed) are answered by Schedule() itself.
//
// Holds a reference to the state, which must outlive it. Not thread-safe: one loop owns it, as it owns the
// ClusterState it watches.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/cluster_state.h"
#include "model/task_request.h"
#include "scheduler/fit.h"
#include "scheduler/policy.h"
#include "scheduler/schedule.h"

namespace xpool {

class PlacementExplainer {
 public:
  struct Stats {
    int64_t explains = 0;    // Explain calls
    int64_t full_scans = 0;  // answered by Schedule() (a guard above)
    int64_t group_fits = 0;  // full FitNode evaluations (one per device group and device request)
    int64_t key_builds = 0;  // node device keys (re)built
  };

  explicit PlacementExplainer(const ClusterState& state) : state_(state) {}

  // Schedule(state, request, policy, rng) for a request the caller could not place: the same kind and reason.
  // (When some node can take it after all, this is Schedule()'s placement.) Draws from `rng` exactly as
  // Schedule() does, i.e. never for a cacheable policy that places nothing.
  ScheduleOutcome Explain(const TaskRequest& request, PlacementPolicy& policy, Rng& rng);

  const Stats& stats() const { return stats_; }

 private:
  void Sync();             // node_group_ current with the journal
  int GroupOf(int node);   // builds the node's device key and interns it
  void Refresh(int node);  // node_group_ and node_level_ for the node
  void RebuildAll();
  std::vector<NodeVerdict>& VerdictsFor(const TaskRequest& request);  // this device request's group verdicts
  // Schedule() for a request some node turned out to fit, after clearing Explain's per-group counts.
  ScheduleOutcome ScheduleAfterCounting(const TaskRequest& request, PlacementPolicy& policy, Rng& rng);

  const ClusterState& state_;
  bool synced_ = false;
  uint64_t seq_ = 0;
  uint64_t description_version_ = 0;
  std::vector<int> node_group_;  // per node: its device group id
  // Per node, what FitNode's node-level checks read: kNodeNotReady / kNodeCordoned when blocked (FitNode's order),
  // else kFits, and the free CPU and memory.
  struct NodeLevel {
    int64_t free_cpu = 0;
    int64_t free_memory = 0;
    FitReason blocked = FitReason::kFits;
  };
  std::vector<NodeLevel> node_level_;
  std::unordered_map<std::string, int> groups_;  // device key → group id
  std::string key_;
  std::vector<int> changed_;
  // Per device request (a request's device part: what FitNode checks after the node level), each group's
  // device verdict, filled as groups are met (kFits = not known yet: a known verdict never fits). A group's key
  // fixes its verdict, so entries stay valid until the ids are dealt again (RebuildAll).
  std::unordered_map<std::string, int> device_requests_;
  std::vector<std::vector<NodeVerdict>> verdicts_;
  std::string request_key_;
  NodeCandidate candidate_;
  // Explain's scratch: per group id, how many nodes it turned down and the first of them; the groups counted.
  std::vector<int> group_count_;
  std::vector<int> group_node_;
  std::vector<int> touched_groups_;
  Stats stats_;
};

}  // namespace xpool
