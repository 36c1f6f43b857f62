#pragma once
// How a tenant's quota, as people write it, becomes the amounts the scheduling pass compares: the one rule the
// server (store quotas) and the Kubernetes extender (namespace quotas from --tenants) share. Free functions,
// pure, thread-safe.
#include <cstdint>

#include "scheduler/queue/queue_types.h"

namespace xpool {

// The GPU compute a quota allows: `devices` whole devices count 1000 milli each and `device_compute_milli`
// counts as given; when both are set the smaller wins; a negative value is not set; `unset` when neither is.
int64_t QuotaGpuComputeMilli(int64_t devices, int64_t device_compute_milli, int64_t unset);

// `guaranteed`'s GPU compute, GPU memory and CPU, each capped at `limit`'s (ValidateTenant rejects a guarantee
// above its limit); running_jobs 0, as it is never guaranteed (Tenant::guaranteed).
ResourceAmounts CapGuaranteeAtLimit(const ResourceAmounts& guaranteed, const ResourceAmounts& limit);

}  // namespace xpool
