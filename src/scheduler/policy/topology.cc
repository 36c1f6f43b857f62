#include "scheduler/policy/topology.h"

#include <algorithm>
#include <limits>

#include "scheduler/policy/binpack_spread.h"

namespace xpool {
namespace {

constexpr int64_t kLinkWeight = 10'000'000;
constexpr int64_t kMaxSubsets = 4096;

int64_t Link(const Node& node, int a, int b) { return node.links.empty() ? 0 : node.links.Score(a, b); }

int64_t Choose(int64_t m, int64_t k) {
  int64_t r = 1;
  for (int64_t i = 1; i <= k; ++i) {
    r = r * (m - k + i) / i;
    if (r > kMaxSubsets) return r;
  }
  return r;
}

// Depth-first over index subsets of `devices`, keeping the best sum.
struct Search {
  const Node& node;
  const std::vector<int>& devices;
  int n;
  bool numa_bind;
  std::vector<int> current;
  std::vector<int> best;
  int64_t best_sum = -1;

  void Run(size_t start, int64_t sum) {
    if (static_cast<int>(current.size()) == n) {
      if (sum > best_sum) {
        best_sum = sum;
        best = current;
      }
      return;
    }
    for (size_t i = start; i < devices.size(); ++i) {
      const int d = devices[i];
      if (numa_bind && !current.empty() && node.devices[d].numa_node != node.devices[current[0]].numa_node) continue;
      int64_t add = 0;
      for (int c : current) add += Link(node, c, d);
      current.push_back(d);
      Run(i + 1, sum + add);
      current.pop_back();
    }
  }
};

bool Greedy(const Node& node, const std::vector<int>& devices, int n, bool numa_bind, std::vector<int>* chosen,
            int64_t* link_sum) {
  // Seed with the best pair, then grow by the device adding the most; NUMA binding filters candidates.
  int64_t best_pair = -1;
  int a_best = -1, b_best = -1;
  for (size_t i = 0; i < devices.size(); ++i) {
    for (size_t j = i + 1; j < devices.size(); ++j) {
      if (numa_bind && node.devices[devices[i]].numa_node != node.devices[devices[j]].numa_node) continue;
      const int64_t s = Link(node, devices[i], devices[j]);
      if (s > best_pair) {
        best_pair = s;
        a_best = devices[i];
        b_best = devices[j];
      }
    }
  }
  if (a_best < 0) return false;
  chosen->assign({a_best, b_best});
  int64_t sum = best_pair;
  while (static_cast<int>(chosen->size()) < n) {
    int64_t best_add = -1;
    int pick = -1;
    for (int d : devices) {
      if (std::find(chosen->begin(), chosen->end(), d) != chosen->end()) continue;
      if (numa_bind && node.devices[d].numa_node != node.devices[a_best].numa_node) continue;
      int64_t add = 0;
      for (int c : *chosen) add += Link(node, c, d);
      if (add > best_add) {
        best_add = add;
        pick = d;
      }
    }
    if (pick < 0) return false;
    chosen->push_back(pick);
    sum += best_add;
  }
  *link_sum = sum;
  return true;
}

}  // namespace

bool BestLinkedSubset(const Node& node, const std::vector<int>& devices, int n, bool numa_bind,
                      std::vector<int>* chosen, int64_t* link_sum) {
  chosen->clear();
  if (n <= 0 || static_cast<int>(devices.size()) < n) return false;
  if (n == 1) {
    chosen->push_back(devices[0]);
    *link_sum = 0;
    return true;
  }
  if (Choose(static_cast<int64_t>(devices.size()), n) > kMaxSubsets) {
    return Greedy(node, devices, n, numa_bind, chosen, link_sum);
  }
  Search search{node, devices, n, numa_bind, {}, {}, -1};
  search.Run(0, 0);
  if (search.best_sum < 0) return false;
  *chosen = std::move(search.best);
  *link_sum = search.best_sum;
  return true;
}

bool TopologyPolicy::Score(const ClusterState& state, const TaskRequest& request, const NodeCandidate& candidate,
                           Rng& /*rng*/, int64_t* score, std::vector<int>* chosen_devices) {
  const int node = candidate.node;
  const Node& n = state.node(node);
  const int64_t usage = NodeUsagePpm(state, node);
  chosen_devices->clear();
  if (!request.wants_devices()) {
    *score = usage;
    return true;
  }
  if (request.device_count == 1) {
    // Keep well-connected idle devices free: take the fitting device with the least link to the idle others.
    int64_t best_cost = std::numeric_limits<int64_t>::max();
    int pick = -1;
    for (int d : candidate.fitting_devices) {
      int64_t cost = 0;
      for (int e = 0; e < static_cast<int>(n.devices.size()); ++e) {
        if (e != d && state.usage(node).devices[e].sharers == 0) cost += Link(n, d, e);
      }
      if (cost < best_cost) {
        best_cost = cost;
        pick = d;
      }
    }
    if (pick < 0) return false;
    chosen_devices->push_back(pick);
    *score = usage;
    return true;
  }
  int64_t link_sum = 0;
  if (!BestLinkedSubset(n, candidate.fitting_devices, request.device_count, request.numa_bind, chosen_devices,
                        &link_sum)) {
    return false;
  }
  *score = link_sum * kLinkWeight + usage;
  return true;
}

}  // namespace xpool
