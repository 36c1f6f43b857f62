#pragma once
// Alibaba "openb" trace files (cluster-trace-gpu-v2023): the node list and the pod lists, as value types, and
// their translation into the model (a ClusterState, one TaskRequest per pod).
//
// Node list columns: sn,cpu_milli,memory_mib,gpu,model.
// Pod list columns:  name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
//                    deletion_time,scheduled_time — or only the first five (the multigpu* variants).
// A malformed line is an InvalidArgument naming "file:line" and the field. Stateless functions; thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/cluster_state.h"
#include "model/task_request.h"

namespace xpool::sim {

struct TraceNode {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int gpu_count = 0;
  std::string model;  // empty for CPU-only nodes
};

enum class Qos : uint8_t { kLs, kGuaranteed, kBurstable, kBe, kUnknown };
std::string_view QosName(Qos qos);

struct TracePod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int num_gpu = 0;
  int64_t gpu_milli = 0;              // per GPU; 1000 = a whole GPU
  std::vector<std::string> gpu_spec;  // allowed models; empty = any
  Qos qos = Qos::kUnknown;
  std::string phase;
  bool has_times = false;     // false for the 5-column variant
  int64_t creation_time = 0;  // seconds
  int64_t deletion_time = 0;
  std::optional<int64_t> scheduled_time;
};

// Parse the text of a file; `file` is only used in error messages.
Result<std::vector<TraceNode>> ParseNodeList(std::string_view text, std::string_view file);
Result<std::vector<TracePod>> ParsePodList(std::string_view text, std::string_view file);
// Read and parse a file (NotFound when it cannot be read).
Result<std::vector<TraceNode>> LoadNodeList(const std::string& path);
Result<std::vector<TracePod>> LoadPodList(const std::string& path);

// GPU memory the trace does not give, by model (MiB); 16 GiB when the model is unknown. Pods never ask for it.
int64_t TraceGpuMemoryMib(std::string_view model);

// One Node per TraceNode (GPU devices of the node's model, sharing unlimited by count) in file order.
Result<ClusterState> BuildCluster(const std::vector<TraceNode>& nodes);

// The request of one replica of a pod: cpu, memory, num_gpu devices with gpu_milli compute each, and the
// allowed models as an include list.
TaskRequest PodRequest(const TracePod& pod);

// GPU milli a pod asks for in total (num_gpu × gpu_milli).
inline int64_t PodGpuMilli(const TracePod& pod) { return pod.num_gpu * pod.gpu_milli; }

}  // namespace xpool::sim
