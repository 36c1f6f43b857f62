#include "protocol/task.h"

#include "model/job_spec.h"

namespace xpool::protocol {

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

std::string_view TaskStateName(TaskState state) {
  switch (state) {
    case TaskState::kRunning:
      return "running";
    case TaskState::kSucceeded:
      return "succeeded";
    case TaskState::kFailed:
      return "failed";
    case TaskState::kStopped:
      return "stopped";
    case TaskState::kSuspended:
      return "suspended";
  }
  return "unknown";
}

}  // namespace xpool::protocol
