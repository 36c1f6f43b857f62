#include "scheduler/schedule.h"

#include <algorithm>
#include <utility>

namespace xpool {
namespace {

// The running winner of a scan, honouring the policy's tie-break.
struct Best {
  int node = -1;
  int64_t score = 0;
  int ties = 0;  // nodes seen with the best score (for kRandom's reservoir choice)
  std::vector<int> devices;
};

void Consider(Best* best, int node, int64_t score, std::vector<int>* devices, TieBreak tie_break, Rng& rng) {
  bool take = false;
  if (best->node < 0 || score > best->score) {
    take = true;
    best->ties = 1;
  } else if (score == best->score) {
    ++best->ties;
    switch (tie_break) {
      case TieBreak::kFirst:
        break;
      case TieBreak::kLast:
        take = true;
        break;
      case TieBreak::kRandom:
        take = std::uniform_int_distribution<int>(0, best->ties - 1)(rng) == 0;
        break;
    }
  }
  if (take) {
    best->node = node;
    best->score = score;
    std::swap(best->devices, *devices);
  }
}

}  // namespace

Allocation MakeAllocation(const ClusterState& view, const TaskRequest& request, int node,
                          const std::vector<int>& devices) {
  Allocation a;
  a.node = node;
  a.cpu_milli = request.cpu_milli;
  a.memory_mib = request.memory_mib;
  a.mps_user = request.mps_user;
  a.devices.reserve(devices.size());
  const Node& n = view.node(node);
  for (int d : devices) a.devices.push_back(GrantFor(n.devices[d], request));
  return a;
}

bool ValidDeviceChoice(const ClusterState& view, const TaskRequest& request, const NodeCandidate& candidate,
                       const std::vector<int>& devices) {
  if (!request.wants_devices()) return devices.empty();
  if (static_cast<int>(devices.size()) != request.device_count) return false;
  const auto& fitting = candidate.fitting_devices;
  const Node& n = view.node(candidate.node);
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!std::binary_search(fitting.begin(), fitting.end(), devices[i])) return false;
    for (size_t j = 0; j < i; ++j) {
      if (devices[j] == devices[i]) return false;
    }
    if (request.numa_bind && n.devices[devices[i]].numa_node != n.devices[devices[0]].numa_node) return false;
  }
  return true;
}

ScheduleOutcome NotPlacedOutcome(const ClusterState& view, const TaskRequest& request, const ReasonTally& now) {
  ScheduleOutcome out;
  ReasonTally empty(request);
  NodeCandidate candidate;
  NodeVerdict verdict;
  for (int n = 0; n < view.node_count(); ++n) {
    if (FitNode(view, n, request, /*ignore_usage=*/true, &candidate, &verdict)) {
      out.kind = OutcomeKind::kWait;
      out.reason = now.Render();
      return out;
    }
    empty.Add(view, n, verdict);
  }
  out.kind = OutcomeKind::kNeverFits;
  out.reason = view.node_count() == 0 ? "the cluster has no nodes" : empty.Render();
  return out;
}

ScheduleOutcome Schedule(const ClusterState& view, const TaskRequest& request, PlacementPolicy& policy, Rng& rng) {
  if (Status valid = ValidateTaskRequest(request); !valid.ok()) {
    ScheduleOutcome out;
    out.kind = OutcomeKind::kNeverFits;
    out.reason = "invalid request: " + valid.message();
    return out;
  }
  const TieBreak tie_break = policy.tie_break();
  ReasonTally tally(request);
  NodeCandidate candidate;
  NodeVerdict verdict;
  std::vector<int> chosen;
  Best best;
  for (int n = 0; n < view.node_count(); ++n) {
    if (!FitNode(view, n, request, /*ignore_usage=*/false, &candidate, &verdict)) {
      tally.Add(view, n, verdict);
      continue;
    }
    int64_t score = 0;
    if (!policy.Score(view, request, candidate, rng, &score, &chosen) ||
        !ValidDeviceChoice(view, request, candidate, chosen)) {
      tally.Add(view, n, NodeVerdict{FitReason::kPolicyVeto, -1});
      continue;
    }
    Consider(&best, n, score, &chosen, tie_break, rng);
  }
  if (best.node < 0) return NotPlacedOutcome(view, request, tally);
  ScheduleOutcome out;
  out.kind = OutcomeKind::kPlaced;
  out.allocation = MakeAllocation(view, request, best.node, best.devices);
  return out;
}

}  // namespace xpool
