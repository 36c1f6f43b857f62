#pragma once
// Why pods wait in a replay (the instrumentation behind `xpool sim replay --explain`): for a waiting request,
// which resource blocks it on the nodes that could take it when empty, and what holds those nodes. The replay
// attributes the idle GPU of every moment with a non-empty queue to the cause of its queue head, so a reader sees
// where "allocation while queued" is lost.
//
// Pure functions over a const ClusterState and the running jobs; thread-compatible.
#include <string>
#include <vector>

#include "model/cluster_state.h"
#include "model/task_request.h"
#include "scheduler/queue/queue_types.h"

namespace xpool::sim {

enum class WaitBlock : uint8_t {
  kGpu,        // no node that could take it has enough free devices for it
  kCpuMemory,  // some node has the free devices, but not the CPU or memory beside them
  kFits,       // it fits now (the pass had not run yet, or the policy vetoed every node)
};

struct WaitCause {
  WaitBlock block = WaitBlock::kFits;
  // The node that could take the request when empty with the least GPU held (then the lowest top priority):
  // the GPU milli held there, by how many jobs, and the highest priority among them (-1: the node is empty).
  int cheapest_node_priority = -1;
  int64_t cheapest_node_gpu_milli = 0;
  int cheapest_node_jobs = 0;
  int candidate_nodes = 0;  // nodes that could take it when empty
};

// `running` holds the jobs booked in `state` (their allocations name the nodes).
WaitCause DiagnoseWait(const ClusterState& state, const TaskRequest& request,
                       const std::vector<const QueueJob*>& running);

// "GPU short; least-held candidate node: 4000 GPU milli by 2 jobs, top priority 90 (5 candidate nodes)".
std::string DescribeWaitCause(const WaitCause& cause);

}  // namespace xpool::sim
