#pragma once
// The queue's vocabulary: jobs as a scheduling pass sees them, tenants and their quotas, amounts of
// the quota resources. Plain value types filled by the caller — the server from its store, the
// simulator from a trace — so both run the same pass over the same structs. Thread-compatible.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "model/job_spec.h"
#include "model/task_request.h"

namespace xpool {

// Priorities 0..100 (low = 10, normal = 50, high = 90) and ParsePriority come from
// model/job_spec.h.
inline constexpr int kMinPriority = 0;

inline constexpr int64_t kUnlimitedAmount = std::numeric_limits<int64_t>::max();

// Amounts of the resources quotas and fair share count. Used for usage, demand, limits and
// guarantees alike.
struct ResourceAmounts {
  int64_t gpu_compute_milli = 0;
  int64_t gpu_memory_mib = 0;
  int64_t cpu_milli = 0;
  int64_t running_jobs = 0;

  static ResourceAmounts Unlimited() {
    return {kUnlimitedAmount, kUnlimitedAmount, kUnlimitedAmount, kUnlimitedAmount};
  }
  void Add(const ResourceAmounts& o);
  void Subtract(const ResourceAmounts& o);
  friend bool operator==(const ResourceAmounts&, const ResourceAmounts&) = default;
};

// A limit that applies only to the tenant's jobs whose priority is in [min_priority, max_priority]
// — HAI Platform's per-group-per-priority quota ("at most 4 GPUs of this tenant at high priority").
struct PriorityLimit {
  int min_priority = kMinPriority;
  int max_priority = kMaxPriority;
  ResourceAmounts limit = ResourceAmounts::Unlimited();
};

struct Tenant {
  TenantId id;
  std::string name;
  // Always obtainable: a job that keeps the tenant within these amounts may suspend other tenants'
  // work that runs above their guarantee, even at equal priority. running_jobs is not guaranteed
  // (ignored here).
  ResourceAmounts guaranteed;
  // Never exceeded by new work. May be below current use (running work is not stopped for it).
  ResourceAmounts limit = ResourceAmounts::Unlimited();
  std::vector<PriorityLimit> priority_limits;
};

// Rejects negative amounts, a guarantee above the limit, and priority bands outside 0..100 or
// upside down.
Status ValidateTenant(const Tenant& tenant);

enum class QueueJobState : uint8_t {
  kPending,    // never ran
  kSuspended,  // ran, was suspended, waits again keeping its first submit time
  kRunning,    // holds `allocations` in the ClusterState
};

struct QueueJob {
  JobId id;
  TenantId tenant;
  int priority = kPriorityNormal;  // 0..100
  TimeMicros first_submit = 0;     // the first submit: a suspended job keeps its place in line
  TaskRequest request;             // per replica
  int replicas = 1;                // > 1: a gang, placed all at once or not at all
  QueueJobState state = QueueJobState::kPending;
  bool preemptible = true;
  TimeMicros last_start = 0;            // kRunning: when it last started (work since then is lost by a suspend)
  int suspensions_last_hour = 0;        // how often it was suspended in the hour before `now`
  std::vector<Allocation> allocations;  // kRunning: one per replica, as booked in the ClusterState
};

// Bad input the pass refuses for one job (the others still schedule): priority out of range, no
// replicas, an invalid request, a running job without one allocation per replica.
Status ValidateQueueJob(const QueueJob& job);

// What a set of allocations (one job's replicas) holds; running_jobs = 1.
ResourceAmounts AmountsOf(const std::vector<Allocation>& allocations);
// What a running job holds: AmountsOf(job.allocations).
inline ResourceAmounts HeldBy(const QueueJob& job) { return AmountsOf(job.allocations); }
// What a waiting job asks for, all replicas together (running_jobs = 1). A memory request in
// percent is counted against `largest_device_memory_mib`, the most it could take, since the device
// is not chosen yet.
ResourceAmounts DemandOf(const QueueJob& job, int64_t largest_device_memory_mib);

}  // namespace xpool
