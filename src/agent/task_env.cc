#include "agent/task_env.h"

#include "model/job_spec.h"
#include "vgpu/vgpu_env.h"

namespace xpool::agent {

Status ValidateLaunchSpec(const LaunchSpec& spec) {
  if (spec.task_id.empty() || spec.task_id.size() > 128 || spec.task_id[0] == '.') {
    return InvalidArgumentError("task id \"" + spec.task_id + "\" must be 1..128 characters, not starting with .");
  }
  for (char c : spec.task_id) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return InvalidArgumentError("task id \"" + spec.task_id + "\" may hold only A-Z a-z 0-9 . _ -");
  }
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return InvalidArgumentError("task " + spec.task_id + ": no command");
  }
  for (const auto& [name, value] : spec.env) {
    if (name.empty() || name.find('=') != std::string::npos || name.find('\0') != std::string::npos) {
      return InvalidArgumentError("task " + spec.task_id + ": bad environment variable name \"" + name + "\"");
    }
  }
  for (const TaskDevice& d : spec.devices) {
    if (d.index < 0 || d.memory_mib < 0 || d.core_percent < 0 || d.core_percent > 100) {
      return InvalidArgumentError("task " + spec.task_id + ": bad device limits for device " + std::to_string(d.index));
    }
  }
  if (!spec.suspend_signal.empty()) {
    Status s = CheckpointSignalNumber(spec.suspend_signal).status();
    if (!s.ok()) return InvalidArgumentError("task " + spec.task_id + ": " + s.message());
  }
  if (spec.distributed && (spec.distributed->world_size < 1 || spec.distributed->rank < 0 ||
                           spec.distributed->rank >= spec.distributed->world_size)) {
    return InvalidArgumentError("task " + spec.task_id + ": rank must be in 0..world_size-1");
  }
  if (spec.distributed &&
      (spec.distributed->local_world_size < 1 || spec.distributed->local_rank < 0 ||
       spec.distributed->local_rank >= spec.distributed->local_world_size || spec.distributed->node_rank < 0 ||
       spec.distributed->master_port < 1 || spec.distributed->master_port > 65535)) {
    return InvalidArgumentError("task " + spec.task_id +
                                ": local_rank must be in 0..local_world_size-1, node_rank >= 0, master_port 1..65535");
  }
  return Status::Ok();
}

std::vector<TaskDevice> TaskDevicesFromGrants(const Node& node, const std::vector<DeviceGrant>& grants,
                                              bool* shares_device) {
  std::vector<TaskDevice> out;
  bool shares = false;
  for (const DeviceGrant& g : grants) {
    TaskDevice d;
    d.index = g.device;
    d.memory_mib = g.memory_mib;
    const int64_t device_memory =
        g.device >= 0 && g.device < static_cast<int>(node.devices.size()) ? node.devices[g.device].memory_mib : 0;
    if (g.compute_milli > 0 && g.compute_milli < kWholeDeviceMilli) {
      d.core_percent = static_cast<int>((g.compute_milli + 9) / 10);  // round up: never below the grant
    }
    if (g.compute_milli < kWholeDeviceMilli || (device_memory > 0 && g.memory_mib < device_memory)) shares = true;
    out.push_back(d);
  }
  if (shares_device) *shares_device = shares;
  return out;
}

std::map<std::string, std::string> BuildTaskEnv(const LaunchSpec& spec, const TaskPaths& paths,
                                                const std::string& inherited_ld_preload) {
  std::map<std::string, std::string> env;
  std::string visible;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    if (i > 0) visible += ",";
    visible += std::to_string(spec.devices[i].index);
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
