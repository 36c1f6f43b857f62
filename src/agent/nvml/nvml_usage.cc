#include "agent/nvml/nvml_usage.h"

#include <dlfcn.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "agent/internal/nvml_api.h"
#include "agent/nvml/internal/nvml_symbols.h"

namespace xpool::agent {
namespace {

constexpr unsigned long long kBytesPerMib = 1ull << 20;
constexpr unsigned long long kValueNotAvailable = ~0ull;  // NVML_VALUE_NOT_AVAILABLE
constexpr xpool_nvmlReturn_t kInsufficientSize = 7;       // NVML_ERROR_INSUFFICIENT_SIZE
constexpr int kMaxAncestry = 64;                          // process tree depth searched for a task's top process

int64_t MibRoundedUp(unsigned long long bytes) {
  return static_cast<int64_t>((bytes + kBytesPerMib - 1) / kBytesPerMib);
}

}  // namespace

struct NvmlUsageProbe::Api {
  xpool_nvmlInit_v2_fn init = nullptr;
  xpool_nvmlShutdown_fn shutdown = nullptr;
  xpool_nvmlDeviceGetHandleByIndex_v2_fn get_handle = nullptr;
  xpool_nvmlDeviceGetMemoryInfo_fn get_memory = nullptr;
  // Optional.
  xpool_nvmlDeviceGetHandleByUUID_fn get_handle_by_uuid = nullptr;
  xpool_nvmlDeviceGetUtilizationRates_fn get_utilization = nullptr;
  xpool_nvmlDeviceGetComputeRunningProcesses_v3_fn get_processes = nullptr;
};

NvmlUsageProbe::NvmlUsageProbe(std::string library, std::string proc)
    : library_(std::move(library)), proc_(std::move(proc)) {}

NvmlUsageProbe::~NvmlUsageProbe() {
  if (api_) api_->shutdown();
  if (handle_ != nullptr) dlclose(handle_);
}

Status NvmlUsageProbe::Load() {
  if (api_) return Status::Ok();
  if (handle_ == nullptr) handle_ = dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) return UnavailableError("no NVML to measure use: " + std::string(dlerror()));
  auto api = std::make_unique<Api>();
  auto resolve = [this](const char* symbol, auto* out) { return nvml_internal::Resolve(handle_, symbol, out); };
  if (!resolve("nvmlInit_v2", &api->init) || !resolve("nvmlShutdown", &api->shutdown) ||
      !resolve("nvmlDeviceGetHandleByIndex_v2", &api->get_handle) ||
      !resolve("nvmlDeviceGetMemoryInfo", &api->get_memory)) {
    return FailedPreconditionError("NVML library " + library_ + " lacks what measuring use needs");
  }
  resolve("nvmlDeviceGetHandleByUUID", &api->get_handle_by_uuid);
  resolve("nvmlDeviceGetUtilizationRates", &api->get_utilization);
  if (!resolve("nvmlDeviceGetComputeRunningProcesses_v3", &api->get_processes)) {
    resolve("nvmlDeviceGetComputeRunningProcesses_v2", &api->get_processes);  // the same layout
  }
  if (xpool_nvmlReturn_t rc = api->init(); rc != XPOOL_NVML_SUCCESS) {
    return UnavailableError("nvmlInit_v2 failed (" + std::to_string(rc) + ")");
  }
  api_ = std::move(api);
  return Status::Ok();
}

std::string NvmlUsageProbe::TaskOfProcess(pid_t pid, const std::map<pid_t, std::string>& task_pids) const {
  for (int depth = 0; depth < kMaxAncestry && pid > 1; ++depth) {
    if (auto it = task_pids.find(pid); it != task_pids.end()) return it->second;
    std::ifstream in(proc_ + "/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // "<pid> (<comm>) <state> <ppid> ...": comm may hold spaces and parentheses; the last ')' ends it.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) return "";
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    pid_t parent = 0;
    if (!(rest >> state >> parent)) return "";
    pid = parent;
  }
  return "";
}

Result<UsageSample> NvmlUsageProbe::Sample(const Node& node, const std::vector<TaskOnNode>& tasks) {
  RETURN_IF_ERROR(Load());
  std::map<pid_t, std::string> task_pids;
  for (const TaskOnNode& t : tasks) {
    if (t.pid > 0) task_pids[t.pid] = t.task_id;
  }
  UsageSample sample;
  std::map<std::string, int64_t> process_memory;  // per task, from NVML's process lists
  // With MIG instances among the devices, positions are not NVML's numbers (nvml/mig_layout.h): each device is
  // found by its uuid (an instance's MIG-... uuid gives its MIG device handle).
  const bool by_uuid =
      std::any_of(node.devices.begin(), node.devices.end(), [](const Device& d) { return d.mode == DeviceMode::kMig; });
  for (const Device& d : node.devices) {
    xpool_nvmlDevice_t handle = nullptr;
    xpool_nvmlMemory_t memory{};
    const xpool_nvmlReturn_t found = !by_uuid ? api_->get_handle(static_cast<unsigned int>(d.index), &handle)
                                     : api_->get_handle_by_uuid ? api_->get_handle_by_uuid(d.uuid.c_str(), &handle)
                                                                : XPOOL_NVML_ERROR_NOT_SUPPORTED;
    if (found != XPOOL_NVML_SUCCESS || api_->get_memory(handle, &memory) != XPOOL_NVML_SUCCESS) {
      continue;  // lost or not queryable: not measured
    }
    DeviceUse& use = sample.devices[d.index];
    use.used_memory_mib = static_cast<int64_t>(memory.used / kBytesPerMib);
    xpool_nvmlUtilization_t utilization{};
    if (api_->get_utilization && api_->get_utilization(handle, &utilization) == XPOOL_NVML_SUCCESS) {
      use.sm_permille = std::min<int64_t>(1000, int64_t{utilization.gpu} * 10);
    }
    if (!api_->get_processes || task_pids.empty()) continue;
    std::vector<xpool_nvmlProcessInfo_t> infos(64);
    unsigned int count = static_cast<unsigned int>(infos.size());
    xpool_nvmlReturn_t rc = api_->get_processes(handle, &count, infos.data());
    if (rc == kInsufficientSize) {  // more processes than room: once more with room for them all
      infos.resize(count + 8);
      count = static_cast<unsigned int>(infos.size());
      rc = api_->get_processes(handle, &count, infos.data());
    }
    if (rc != XPOOL_NVML_SUCCESS) continue;
    for (unsigned int i = 0; i < count && i < infos.size(); ++i) {
      if (infos[i].usedGpuMemory == kValueNotAvailable) continue;
      std::string task = TaskOfProcess(static_cast<pid_t>(infos[i].pid), task_pids);
      if (!task.empty()) process_memory[task] += MibRoundedUp(infos[i].usedGpuMemory);
    }
  }
  sample.task_memory = std::move(process_memory);
  for (const auto& [task, mib] : TaskMemoryFromRegions(tasks)) sample.task_memory[task] = mib;  // per-vGPU first
  return sample;
}

}  // namespace xpool::agent
