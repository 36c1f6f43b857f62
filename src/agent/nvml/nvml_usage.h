#pragma once
// NvmlUsageProbe: measured use of NVIDIA devices through NVML (loaded with dlopen, like NvmlDiscovery).
//
// Per device (NVML index = the node's device index): memory in use (nvmlDeviceGetMemoryInfo, MiB) and SM
// utilisation (nvmlDeviceGetUtilizationRates, percent × 10 = permille). Per task: the runtime library's shared
// region when the task has one (what each vGPU's processes were charged); else the memory NVML lists for the
// task's processes (nvmlDeviceGetComputeRunningProcesses_v3), a process belonging to the task whose top process
// is its ancestor (read from <proc>/<pid>/stat). A device NVML cannot query is left out of the sample; an absent
// utilisation or process call leaves that part unmeasured.
//
// The library is opened and initialised at the first Sample() and kept until destruction. Owned by the agent's
// main loop; not thread-safe.
#include <memory>
#include <string>

#include "agent/usage/usage_probe.h"

namespace xpool::agent {

class NvmlUsageProbe final : public UsageProbe {
 public:
  // `library`: as NvmlDiscovery's. `proc`: where process information lives (tests point it elsewhere).
  explicit NvmlUsageProbe(std::string library = "libnvidia-ml.so.1", std::string proc = "/proc");
  ~NvmlUsageProbe() override;
  NvmlUsageProbe(const NvmlUsageProbe&) = delete;
  NvmlUsageProbe& operator=(const NvmlUsageProbe&) = delete;

  Result<UsageSample> Sample(const Node& node, const std::vector<TaskOnNode>& tasks) override;

 private:
  struct Api;
  Status Load();
  // The task whose top process is `pid` or an ancestor of it; empty when none.
  std::string TaskOfProcess(pid_t pid, const std::map<pid_t, std::string>& task_pids) const;

  const std::string library_;
  const std::string proc_;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;  // set once Load succeeded
};

}  // namespace xpool::agent
