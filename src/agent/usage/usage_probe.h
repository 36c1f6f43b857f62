#pragma once
// UsageProbe: what the node agent measures of its devices' actual use for each heartbeat — device memory in use
// (MiB) and SM utilisation (permille) per device, and the device memory each task's processes hold (MiB).
//
// One implementation per source:
//   SimulatedUsageProbe  (this file) deterministic numbers from the tasks' grants, for simulated nodes and tests
//   NvmlUsageProbe       (nvml_usage.h) NVML's device memory and utilisation, per-process memory mapped to tasks
//                        by process ancestry, and the runtime library's shared regions for per-vGPU task memory
// A source that cannot measure something leaves it out (the heartbeat then says "not measured"), never guesses.
//
// Implementations are owned by the agent's main loop (NodeAgent calls Sample once per Tick); not thread-safe.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/device.h"
#include "protocol/task.h"

namespace xpool::agent {

// A running task as the probe sees it: its id, its top process, the devices it was granted (empty for a task
// adopted from an earlier agent: its grants are not known) and where its runtime library keeps its shared region.
struct TaskOnNode {
  std::string task_id;
  pid_t pid = 0;
  std::vector<protocol::TaskDevice> devices;
  std::string region_path;  // the launcher's "<task dir>/vgpu.region"; the file exists once the task used a GPU
};

struct DeviceUse {
  int64_t used_memory_mib = -1;  // -1 = not measured
  int64_t sm_permille = -1;
};

struct UsageSample {
  std::map<int, DeviceUse> devices;            // by device index; devices not measured are absent
  std::map<std::string, int64_t> task_memory;  // task id → MiB; tasks not measured are absent
};

class UsageProbe {
 public:
  virtual ~UsageProbe() = default;
  // Measures now. Errors are for a source that is present but fails; the agent then reports nothing measured.
  virtual Result<UsageSample> Sample(const Node& node, const std::vector<TaskOnNode>& tasks) = 0;
};

// Simulated devices: each running task is taken to use half of its memory grant (half the device when the grant
// has no memory limit) and 60 % of its compute grant (of the whole device without a limit). A device's use is the
// sum over its tasks, at most the device. Deterministic, so tests and `--simulate` clusters chart stable numbers.
class SimulatedUsageProbe final : public UsageProbe {
 public:
  Result<UsageSample> Sample(const Node& node, const std::vector<TaskOnNode>& tasks) override;
};

// Each task's device memory from its runtime library's shared region (the bytes charged to its live processes,
// summed over its devices, in MiB rounded up). Tasks without a readable region are absent.
std::map<std::string, int64_t> TaskMemoryFromRegions(const std::vector<TaskOnNode>& tasks);

// The probe for a discovery source (DiscoveryReport::source): "simulated" → SimulatedUsageProbe, "nvml" →
// NvmlUsageProbe over `nvml_library`; null for sources that cannot measure use yet (the other vendors' tools).
std::unique_ptr<UsageProbe> MakeUsageProbe(std::string_view source, const std::string& nvml_library);

}  // namespace xpool::agent
