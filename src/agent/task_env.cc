#include "agent/task_env.h"

#include "model/job_spec.h"
#include "vgpu/vgpu_env.h"

namespace xpool::agent {
namespace {

// MPS clients (mps.h): the first MPS device's daemon, its cores request as the thread percentage, and a pinned
// memory limit per MPS device, numbered as the task sees its devices.
void AddMpsEnv(const LaunchSpec& spec, const TaskPaths& paths, std::map<std::string, std::string>* env) {
  std::string limits;
  bool first = true;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const TaskDevice& d = spec.devices[i];
    auto pipe = paths.mps_pipe_dirs.find(d.index);
    if (pipe == paths.mps_pipe_dirs.end()) continue;
    if (first) {
      (*env)["CUDA_MPS_PIPE_DIRECTORY"] = pipe->second;
      if (d.core_percent > 0 && d.core_percent < 100) {
        (*env)["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(d.core_percent);
      }
      first = false;
    }
    if (d.memory_mib > 0)
      limits += (limits.empty() ? "" : ",") + std::to_string(i) + "=" + std::to_string(d.memory_mib) + "M";
  }
  if (!limits.empty()) (*env)["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = limits;
}

}  // namespace

std::map<int, std::string> VisibleDeviceNames(const Node& node) {
  std::map<int, std::string> names;
  bool any_mig = false;
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const Device& d = node.devices[i];
    any_mig = any_mig || (d.mode == DeviceMode::kMig && d.uuid.rfind("MIG-", 0) == 0);
    names[static_cast<int>(i)] = d.uuid;
  }
  if (!any_mig) names.clear();
  return names;
}

std::map<std::string, std::string> BuildTaskEnv(const LaunchSpec& spec, const TaskPaths& paths,
                                                const std::string& inherited_ld_preload) {
  std::map<std::string, std::string> env;
  std::string visible;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    if (i > 0) visible += ",";
    auto name = paths.visible_names.find(spec.devices[i].index);
    visible += name != paths.visible_names.end() ? name->second : std::to_string(spec.devices[i].index);
  }
  env[std::string(ProfileFor(spec.vendor).visible_devices_env)] = visible;
  if (spec.vendor == Vendor::kNvidia) {
    env["NVIDIA_VISIBLE_DEVICES"] = spec.devices.empty() ? "void" : visible;
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  }
  // Limits are numbered in visible-device order (the task sees its devices as 0..n-1).
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const TaskDevice& d = spec.devices[i];
    if (d.memory_mib > 0) {
      env[XPOOL_ENV_DEVICE_MEMORY_LIMIT_PREFIX + std::to_string(i)] = std::to_string(d.memory_mib);
    }
    if (d.core_percent > 0 && d.core_percent < 100) {
      env[XPOOL_ENV_DEVICE_CORE_LIMIT_PREFIX + std::to_string(i)] = std::to_string(d.core_percent);
    }
  }
  env[XPOOL_ENV_JOB_ID] = std::to_string(spec.job_id);
  env[XPOOL_ENV_REPLICA] = std::to_string(spec.replica);
  env[XPOOL_ENV_RESTART_COUNT] = std::to_string(spec.restart_count);
  if (!paths.suspend_file.empty()) env[XPOOL_ENV_SUSPEND_FILE] = paths.suspend_file;
  if (!spec.suspend_signal.empty()) env["XPOOL_SUSPEND_SIGNAL"] = spec.suspend_signal;
  if (spec.shares_device && !spec.devices.empty()) {
    if (!paths.shared_region.empty()) env[XPOOL_ENV_SHARED_REGION] = paths.shared_region;
    if (!paths.vgpu_library.empty()) {
      env["LD_PRELOAD"] =
          inherited_ld_preload.empty() ? paths.vgpu_library : paths.vgpu_library + ":" + inherited_ld_preload;
    }
  }
  if (spec.vendor == Vendor::kNvidia) AddMpsEnv(spec, paths, &env);
  if (spec.distributed) {
    const DistributedEnv& d = *spec.distributed;
    env["MASTER_ADDR"] = d.master_addr.empty() ? "127.0.0.1" : d.master_addr;
    env["MASTER_PORT"] = std::to_string(d.master_port);
    env["WORLD_SIZE"] = std::to_string(d.world_size);
    env["RANK"] = std::to_string(d.rank);
    env["LOCAL_RANK"] = std::to_string(d.local_rank);
    env["LOCAL_WORLD_SIZE"] = std::to_string(d.local_world_size);
    env["NODE_RANK"] = std::to_string(d.node_rank);
  }
  return env;
}

}  // namespace xpool::agent
