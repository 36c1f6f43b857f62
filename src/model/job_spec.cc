// JobSpec: validation of limits, conversion to TaskRequest, canonical JSON. The YAML/JSON reader is in
// job_spec_parse.cc.
#include "model/job_spec.h"

#include <algorithm>
#include <csignal>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/units.h"
#include "model/device.h"
#include "model/internal/job_spec_limits.h"
#include "model/mig_profile.h"

namespace xpool {
namespace {

using namespace job_spec_limits;  // NOLINT: the limits are this file's vocabulary

Status CheckStringList(const std::vector<std::string>& list, const std::string& path) {
  if (list.size() > static_cast<size_t>(kMaxSelectorItems)) {
    return InvalidArgumentError(path + " must have at most " + std::to_string(kMaxSelectorItems) + " items");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    RETURN_IF_ERROR(CheckText(list[i], path + "[" + std::to_string(i) + "]", 1, kMaxSelectorLength));
  }
  return Status::Ok();
}

// `mig` names a profile some model has and stands alone: one instance, held whole, on an NVIDIA device.
Status ValidateMig(const ResourceSpec& r) {
  if (r.mig.empty()) return Status::Ok();
  RETURN_IF_ERROR(CheckText(r.mig, "resources.mig", 1, kMaxMigProfileLength));
  RETURN_IF_ERROR(ValidateMigProfileName(r.mig).WithContext("resources.mig"));
  const char* share = r.gpumem_mib != 0          ? "gpumem"
                      : r.gpumem_percentage != 0 ? "gpumem-percentage"
                      : r.gpucores != 0          ? "gpucores"
                                                 : nullptr;
  if (share != nullptr) {
    return InvalidArgumentError(std::string("resources.mig and resources.") + share +
                                " are exclusive: a MIG instance has its profile's memory and compute");
  }
  if (r.gpu > 1) return InvalidArgumentError("resources.gpu must be 1 with resources.mig (one instance per replica)");
  if (r.vendor.has_value() && *r.vendor != Vendor::kNvidia) {
    return InvalidArgumentError("resources.mig needs vendor nvidia (or no vendor)");
  }
  return Status::Ok();
}

Status ValidateResources(const ResourceSpec& r) {
  RETURN_IF_ERROR(CheckRange(r.cpu_milli, 0, kMaxCpuMilli, "resources.cpu", "0..1024 cores"));
  RETURN_IF_ERROR(CheckRange(r.memory_mib, 0, kMaxMemoryMiB, "resources.memory", "0..64Ti"));
  RETURN_IF_ERROR(CheckRange(r.gpu, 0, kMaxDevicesPerReplica, "resources.gpu", "0..64"));
  if (r.gpumem_mib != 0) {
    RETURN_IF_ERROR(CheckRange(r.gpumem_mib, 1, kMaxDeviceMemoryMiB, "resources.gpumem", "1Mi..1Ti"));
  }
  if (r.gpumem_percentage != 0) {
    RETURN_IF_ERROR(CheckRange(r.gpumem_percentage, 1, 100, "resources.gpumem-percentage", "1..100"));
  }
  if (r.gpucores != 0) RETURN_IF_ERROR(CheckRange(r.gpucores, 1, 100, "resources.gpucores", "1..100"));
  RETURN_IF_ERROR(CheckStringList(r.gpu_type, "resources.gpu-type"));
  RETURN_IF_ERROR(CheckStringList(r.gpu_type_exclude, "resources.gpu-type-exclude"));
  RETURN_IF_ERROR(CheckStringList(r.gpu_uuid, "resources.gpu-uuid"));
  if (r.gpumem_mib != 0 && r.gpumem_percentage != 0) {
    return InvalidArgumentError("resources.gpumem and resources.gpumem-percentage are exclusive: give one");
  }
  RETURN_IF_ERROR(ValidateMig(r));
  if (r.gpu == 0 && r.mig.empty()) {
    const char* field = r.gpumem_mib != 0             ? "gpumem"
                        : r.gpumem_percentage != 0    ? "gpumem-percentage"
                        : r.gpucores != 0             ? "gpucores"
                        : !r.gpu_type.empty()         ? "gpu-type"
                        : !r.gpu_type_exclude.empty() ? "gpu-type-exclude"
                        : !r.gpu_uuid.empty()         ? "gpu-uuid"
                        : r.numa_bind                 ? "numa-bind"
                        : r.vendor.has_value()        ? "vendor"
                                                      : nullptr;
    if (field != nullptr) {
      return InvalidArgumentError(std::string("resources.") + field + " needs resources.gpu of at least 1");
    }
  }
  if (r.cpu_milli == 0 && r.memory_mib == 0 && r.gpu == 0 && r.mig.empty()) {
    return InvalidArgumentError("resources must ask for something: cpu, memory, gpu or mig");
  }
  RETURN_IF_ERROR(ValidateTaskRequest(r.ToTaskRequest()).WithContext("resources"));
  return Status::Ok();
}

Status ValidateCommand(const JobSpec& spec) {
  if (spec.command.empty()) return InvalidArgumentError("command is required (an argv list or a string)");
  if (spec.command_is_shell) {
    if (spec.command.size() != 1) return InvalidArgumentError("command: a shell command is one string");
    return CheckText(spec.command[0], "command", 1, kMaxShellCommandLength);
  }
  if (spec.command.size() > static_cast<size_t>(kMaxArgs)) {
    return InvalidArgumentError("command must have at most " + std::to_string(kMaxArgs) + " arguments");
  }
  RETURN_IF_ERROR(CheckText(spec.command[0], "command[0]", 1, kMaxArgLength));
  for (size_t i = 1; i < spec.command.size(); ++i) {
    RETURN_IF_ERROR(CheckText(spec.command[i], "command[" + std::to_string(i) + "]", 0, kMaxArgLength));
  }
  return Status::Ok();
}

Status ValidateEnv(const std::map<std::string, std::string>& env) {
  if (env.size() > static_cast<size_t>(kMaxEnv)) {
    return InvalidArgumentError("env must have at most " + std::to_string(kMaxEnv) + " variables");
  }
  for (const auto& [name, value] : env) {
    RETURN_IF_ERROR(CheckEnvName(name));
    RETURN_IF_ERROR(CheckText(value, "env." + name, 0, kMaxEnvValueLength));
  }
  return Status::Ok();
}

Status ValidateInteractive(const JobSpec& spec) {
  const InteractiveSpec& i = *spec.interactive;
  if (spec.replicas != 1) return InvalidArgumentError("replicas must be 1 for kind: interactive");
  RETURN_IF_ERROR(CheckRange(i.port, 1, 65535, "interactive.port", "1..65535"));
  const std::string range = std::to_string(kMinInteractiveSeconds) + ".." + std::to_string(kMaxInteractiveSeconds);
  RETURN_IF_ERROR(
      CheckRange(i.ttl_seconds, kMinInteractiveSeconds, kMaxInteractiveSeconds, "interactive.ttl", range + " seconds"));
  if (i.idle_timeout_seconds != 0) {
    RETURN_IF_ERROR(CheckRange(i.idle_timeout_seconds, kMinInteractiveSeconds, kMaxInteractiveSeconds,
                               "interactive.idle-timeout", "0 (never) or " + range + " seconds"));
  }
  return Status::Ok();
}

}  // namespace

TaskRequest ResourceSpec::ToTaskRequest() const {
  TaskRequest t;
  t.cpu_milli = cpu_milli;
  t.memory_mib = memory_mib;
  t.device_count = gpu;
  t.device_memory_mib = gpumem_mib;
  t.device_memory_percent = gpumem_percentage;
  t.device_compute_milli = static_cast<int64_t>(gpucores) * 10;
  if (gpu > 0 && gpumem_mib == 0 && gpumem_percentage == 0) {
    t.device_memory_percent = 100;  // HAMi's nvidia.defaultMem 0: no memory given = the device's whole memory
  }
  if (gpu > 0 && gpucores == 0 && t.device_memory_percent == 100) {
    // HAMi's admission rule: whole memory and no gpucores = gpucores 100, the device held exclusively.
    t.device_compute_milli = kWholeDeviceMilli;
  }
  t.vendor = vendor;
  t.type_include = gpu_type;
  t.type_exclude = gpu_type_exclude;
  t.uuid_include = gpu_uuid;
  t.numa_bind = numa_bind;
  if (!mig.empty()) {  // one instance of the profile, held whole
    t.mig_profile = mig;
    t.device_count = 1;
    t.device_memory_mib = 0;
    t.device_memory_percent = 100;
    t.device_compute_milli = kWholeDeviceMilli;
  }
  return t;
}

std::vector<std::string> JobSpec::Argv() const {
  if (command_is_shell && !command.empty()) return {"/bin/sh", "-c", command[0]};
  return command;
}

Status ValidateJobSpec(const JobSpec& spec) {
  RETURN_IF_ERROR(CheckName(spec.name, "name"));
  if (!spec.tenant.empty()) RETURN_IF_ERROR(CheckName(spec.tenant, "tenant"));
  RETURN_IF_ERROR(CheckRange(spec.priority, 0, kMaxPriority, "priority", "0..100 (or low, normal, high)"));
  RETURN_IF_ERROR(CheckRange(spec.replicas, 1, kMaxReplicas, "replicas", "1..1024"));
  RETURN_IF_ERROR(ValidateResources(spec.resources));
  RETURN_IF_ERROR(ValidateCommand(spec));
  if (!spec.workdir.empty()) {
    RETURN_IF_ERROR(CheckText(spec.workdir, "workdir", 1, kMaxPathLength));
    if (spec.workdir[0] != '/') return InvalidArgumentError("workdir must be an absolute path");
  }
  RETURN_IF_ERROR(ValidateEnv(spec.env));
  RETURN_IF_ERROR(
      CheckRange(spec.checkpoint_grace_seconds, 0, kMaxCheckpointGraceSeconds, "checkpoint.grace", "0..3600 seconds"));
  RETURN_IF_ERROR(CheckpointSignalNumber(spec.checkpoint_signal).status());
  RETURN_IF_ERROR(CheckRange(spec.retries, 0, kMaxRetries, "retries", "0..10"));
  RETURN_IF_ERROR(
      CheckRange(spec.retry_backoff_seconds, 1, kMaxRetryBackoffSeconds, "retry-backoff", "1..3600 seconds"));
  if (!spec.image.empty()) RETURN_IF_ERROR(CheckImage(spec.image));
  if (spec.interactive) RETURN_IF_ERROR(ValidateInteractive(spec));
  return Status::Ok();
}

int RetryDelaySeconds(const JobSpec& spec, int attempt) {
  int64_t delay = spec.retry_backoff_seconds;
  for (int i = 1; i < attempt && delay < kMaxRetryBackoffSeconds; ++i) delay *= 2;
  return static_cast<int>(std::min<int64_t>(delay, kMaxRetryBackoffSeconds));
}

std::string JobSpecToJson(const JobSpec& spec) {
  using nlohmann::json;
  json j = json::object();
  j["name"] = spec.name;
  if (!spec.tenant.empty()) j["tenant"] = spec.tenant;
  j["priority"] = spec.priority;
  j["replicas"] = spec.replicas;
  const ResourceSpec& r = spec.resources;
  json res = json::object();
  if (r.cpu_milli != 0) res["cpu"] = std::to_string(r.cpu_milli) + "m";
  if (r.memory_mib != 0) res["memory"] = std::to_string(r.memory_mib) + "Mi";
  if (r.gpu != 0) res["gpu"] = r.gpu;
  if (r.gpumem_mib != 0) res["gpumem"] = std::to_string(r.gpumem_mib) + "Mi";
  if (r.gpumem_percentage != 0) res["gpumem-percentage"] = r.gpumem_percentage;
  if (r.gpucores != 0) res["gpucores"] = r.gpucores;
  if (!r.gpu_type.empty()) res["gpu-type"] = r.gpu_type;
  if (!r.gpu_type_exclude.empty()) res["gpu-type-exclude"] = r.gpu_type_exclude;
  if (!r.gpu_uuid.empty()) res["gpu-uuid"] = r.gpu_uuid;
  if (r.numa_bind) res["numa-bind"] = true;
  if (r.vendor) res["vendor"] = std::string(VendorName(*r.vendor));
  if (!r.mig.empty()) res["mig"] = r.mig;
  j["resources"] = std::move(res);
  if (spec.command_is_shell && spec.command.size() == 1) {
    j["command"] = spec.command[0];
  } else {
    j["command"] = spec.command;
  }
  if (!spec.workdir.empty()) j["workdir"] = spec.workdir;
  if (!spec.env.empty()) j["env"] = spec.env;
  j["preemptible"] = spec.preemptible;
  j["checkpoint"] = json{{"grace", spec.checkpoint_grace_seconds}};
  if (spec.checkpoint_signal != kDefaultCheckpointSignal) j["checkpoint"]["signal"] = spec.checkpoint_signal;
  if (spec.retries != 0) j["retries"] = spec.retries;
  if (spec.retry_backoff_seconds != kDefaultRetryBackoffSeconds) j["retry-backoff"] = spec.retry_backoff_seconds;
  if (!spec.image.empty()) j["image"] = spec.image;
  if (spec.interactive) {
    j["kind"] = "interactive";
    j["interactive"] = json{{"port", spec.interactive->port},
                            {"ttl", spec.interactive->ttl_seconds},
                            {"idle-timeout", spec.interactive->idle_timeout_seconds}};
  }
  // Strings were checked to be UTF-8 when parsed; `replace` keeps a spec built in code from throwing.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<int> CheckpointSignalNumber(std::string_view name) {
  static constexpr std::pair<std::string_view, int> kSignals[] = {
      {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGINT", SIGINT}, {"SIGTERM", SIGTERM}, {"SIGHUP", SIGHUP}};
  for (const auto& [n, number] : kSignals) {
    if (name == n) return number;
  }
  return InvalidArgumentError("checkpoint.signal must be SIGUSR1, SIGUSR2, SIGINT, SIGTERM or SIGHUP, not '" +
                              Printable(name) + "'");
}

Result<int> ParsePriority(std::string_view text) {
  if (text == "low") return kPriorityLow;
  if (text == "normal") return kPriorityNormal;
  if (text == "high") return kPriorityHigh;
  Result<int64_t> n = ParseNonNegativeInt(text);
  if (!n.ok() || *n > kMaxPriority) {
    return InvalidArgumentError("priority must be 0..100 or low, normal, high");
  }
  return static_cast<int>(*n);
}

}  // namespace xpool
