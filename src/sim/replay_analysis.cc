#include "sim/replay_analysis.h"

#include <algorithm>
#include <tuple>

#include "scheduler/fit.h"

namespace xpool::sim {

WaitCause DiagnoseWait(const ClusterState& state, const TaskRequest& request,
                       const std::vector<const QueueJob*>& running) {
  WaitCause out;
  std::vector<int> top(state.node_count(), -1);  // highest priority running on each node
  std::vector<int> jobs(state.node_count(), 0);
  for (const QueueJob* j : running) {
    for (const Allocation& a : j->allocations) {
      top[a.node] = std::max(top[a.node], j->priority);
      ++jobs[a.node];
    }
  }
  bool gpu_free_somewhere = false;
  bool fits = false;
  int cheapest = -1;
  int64_t cheapest_held = 0;
  NodeCandidate candidate;
  NodeVerdict verdict;
  for (int n = 0; n < state.node_count(); ++n) {
    if (!FitNode(state, n, request, /*ignore_usage=*/true, &candidate, &verdict)) continue;
    ++out.candidate_nodes;
    int64_t held = 0;
    for (const DeviceUsage& d : state.usage(n).devices) held += d.compute_milli;
    if (cheapest < 0 || std::tie(held, top[n]) < std::tie(cheapest_held, top[cheapest])) {
      cheapest = n;
      cheapest_held = held;
    }
    if (FitNode(state, n, request, /*ignore_usage=*/false, &candidate, &verdict)) {
      fits = true;
      continue;
    }
    const Node& node = state.node(n);
    const NodeUsage& usage = state.usage(n);
    int free_devices = 0;
    for (size_t d = 0; d < node.devices.size(); ++d) {
      if (FitDevice(node.devices[d], &usage.devices[d], request) == FitReason::kFits) ++free_devices;
    }
    if (free_devices >= request.device_count) gpu_free_somewhere = true;
  }
  out.block = fits ? WaitBlock::kFits : gpu_free_somewhere ? WaitBlock::kCpuMemory : WaitBlock::kGpu;
  if (cheapest >= 0) {
    out.cheapest_node_priority = top[cheapest];
    out.cheapest_node_gpu_milli = cheapest_held;
    out.cheapest_node_jobs = jobs[cheapest];
  }
  return out;
}

std::string DescribeWaitCause(const WaitCause& cause) {
  std::string s = cause.block == WaitBlock::kGpu         ? "GPU short"
                  : cause.block == WaitBlock::kCpuMemory ? "CPU/memory short beside free GPUs"
                                                         : "fits now";
  s += cause.cheapest_node_priority < 0
           ? "; a candidate node is empty"
           : "; least-held candidate node: " + std::to_string(cause.cheapest_node_gpu_milli) + " GPU milli by " +
                 std::to_string(cause.cheapest_node_jobs) + " jobs, top priority " +
                 std::to_string(cause.cheapest_node_priority);
  s += " (" + std::to_string(cause.candidate_nodes) + " candidate nodes)";
  return s;
}

}  // namespace xpool::sim
