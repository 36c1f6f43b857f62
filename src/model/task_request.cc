#include "model/task_request.h"

#include "model/mig_profile.h"

namespace xpool {

bool AsksDynamicMigBySize(const TaskRequest& r) {
  return r.wants_devices() && r.mig_profile.empty() && (!r.vendor || *r.vendor == Vendor::kNvidia) &&
         r.device_memory_percent == 0 && (r.device_memory_mib > 0 || r.device_compute_milli > 0) &&
         r.type_include.empty() && r.type_exclude.empty() && r.uuid_include.empty() && r.uuid_exclude.empty();
}

Status ValidateTaskRequest(const TaskRequest& r) {
  if (r.cpu_milli < 0) return InvalidArgumentError("cpu must not be negative");
  if (r.memory_mib < 0) return InvalidArgumentError("memory must not be negative");
  if (r.device_count < 0) return InvalidArgumentError("device count must not be negative");
  if (r.device_memory_mib < 0) return InvalidArgumentError("device memory must not be negative");
  if (r.device_memory_percent < 0 || r.device_memory_percent > 100) {
    return InvalidArgumentError("device memory percentage must be 1..100");
  }
  if (r.device_memory_mib > 0 && r.device_memory_percent > 0) {
    return InvalidArgumentError("give device memory in MiB or as a percentage, not both");
  }
  if (r.device_compute_milli < 0 || r.device_compute_milli > 1000) {
    return InvalidArgumentError("device cores must be 0..100 percent");
  }
  const bool device_fields = r.device_memory_mib > 0 || r.device_memory_percent > 0 || r.device_compute_milli > 0 ||
                             !r.type_include.empty() || !r.uuid_include.empty() || r.numa_bind;
  if (r.device_count == 0 && device_fields) {
    return InvalidArgumentError("device memory, cores or selectors are set but the device count is 0");
  }
  if (!r.mig_profile.empty()) {
    RETURN_IF_ERROR(ValidateMigProfileName(r.mig_profile));
    if (r.device_count != 1) return InvalidArgumentError("a MIG request asks for exactly one instance");
    const bool share = r.device_memory_mib > 0 || (r.device_memory_percent != 0 && r.device_memory_percent != 100) ||
                       (r.device_compute_milli != 0 && r.device_compute_milli != 1000);
    if (share) {
      return InvalidArgumentError("a MIG instance is held whole: no device memory or cores share with it");
    }
  }
  if (r.cpu_milli == 0 && r.memory_mib == 0 && r.device_count == 0) {
    return InvalidArgumentError("the request asks for nothing (cpu, memory and devices are all 0)");
  }
  return Status::Ok();
}

}  // namespace xpool
