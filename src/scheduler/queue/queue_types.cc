#include "scheduler/queue/queue_types.h"

#include <string>

namespace xpool {
namespace {

// Saturating: kUnlimitedAmount stays kUnlimitedAmount.
int64_t SatAdd(int64_t a, int64_t b) {
  if (a == kUnlimitedAmount || b == kUnlimitedAmount) return kUnlimitedAmount;
  if (b > 0 && a > kUnlimitedAmount - b) return kUnlimitedAmount;
  return a + b;
}
int64_t SatSub(int64_t a, int64_t b) { return a == kUnlimitedAmount ? kUnlimitedAmount : a - b; }

Status CheckNonNegative(const ResourceAmounts& r, std::string_view what) {
  if (r.gpu_compute_milli < 0 || r.gpu_memory_mib < 0 || r.cpu_milli < 0 || r.running_jobs < 0) {
    return InvalidArgumentError(std::string(what) + " must not be negative");
  }
  return Status::Ok();
}

}  // namespace

void ResourceAmounts::Add(const ResourceAmounts& o) {
  gpu_compute_milli = SatAdd(gpu_compute_milli, o.gpu_compute_milli);
  gpu_memory_mib = SatAdd(gpu_memory_mib, o.gpu_memory_mib);
  cpu_milli = SatAdd(cpu_milli, o.cpu_milli);
  running_jobs = SatAdd(running_jobs, o.running_jobs);
}

void ResourceAmounts::Subtract(const ResourceAmounts& o) {
  gpu_compute_milli = SatSub(gpu_compute_milli, o.gpu_compute_milli);
  gpu_memory_mib = SatSub(gpu_memory_mib, o.gpu_memory_mib);
  cpu_milli = SatSub(cpu_milli, o.cpu_milli);
  running_jobs = SatSub(running_jobs, o.running_jobs);
}

Status ValidateTenant(const Tenant& t) {
  const std::string who = "tenant " + (t.name.empty() ? t.id.ToString() : t.name);
  if (!t.id.valid()) return InvalidArgumentError(who + ": id must be positive");
  RETURN_IF_ERROR(CheckNonNegative(t.guaranteed, who + ": guaranteed amounts"));
  RETURN_IF_ERROR(CheckNonNegative(t.limit, who + ": limits"));
  const ResourceAmounts& g = t.guaranteed;
  const ResourceAmounts& l = t.limit;
  if (g.gpu_compute_milli > l.gpu_compute_milli || g.gpu_memory_mib > l.gpu_memory_mib || g.cpu_milli > l.cpu_milli) {
    return InvalidArgumentError(who + ": a guarantee is above its limit");
  }
  for (const PriorityLimit& p : t.priority_limits) {
    if (p.min_priority < kMinPriority || p.max_priority > kMaxPriority || p.min_priority > p.max_priority) {
      return InvalidArgumentError(who + ": priority limit band " + std::to_string(p.min_priority) + ".." +
                                  std::to_string(p.max_priority) + " is not within 0..100 or is upside down");
    }
    RETURN_IF_ERROR(CheckNonNegative(p.limit, who + ": priority limits"));
  }
  return Status::Ok();
}

Status ValidateQueueJob(const QueueJob& job) {
  // Named only on error: a pass validates every job of a long queue.
  const auto who = [&job] { return "job " + job.id.ToString(); };
  if (job.priority < kMinPriority || job.priority > kMaxPriority) {
    return InvalidArgumentError(who() + ": priority " + std::to_string(job.priority) + " is out of range 0..100");
  }
  if (job.replicas < 1) return InvalidArgumentError(who() + ": replicas must be at least 1");
  if (Status s = ValidateTaskRequest(job.request); !s.ok()) return s.WithContext(who());
  if (job.state == QueueJobState::kRunning && static_cast<int>(job.allocations.size()) != job.replicas) {
    return InvalidArgumentError(who() + ": running with " + std::to_string(job.allocations.size()) +
                                " allocations for " + std::to_string(job.replicas) + " replicas");
  }
  return Status::Ok();
}

ResourceAmounts AmountsOf(const std::vector<Allocation>& allocations) {
  ResourceAmounts r;
  r.running_jobs = 1;
  for (const Allocation& a : allocations) {
    r.cpu_milli += a.cpu_milli;
    for (const DeviceGrant& g : a.devices) {
      r.gpu_compute_milli += g.compute_milli;
      r.gpu_memory_mib += g.memory_mib;
    }
  }
  return r;
}

ResourceAmounts DemandOf(const QueueJob& job, int64_t largest_device_memory_mib) {
  const TaskRequest& q = job.request;
  const int64_t device_memory =
      q.device_memory_mib > 0 ? q.device_memory_mib : largest_device_memory_mib * q.device_memory_percent / 100;
  ResourceAmounts r;
  r.running_jobs = 1;
  r.cpu_milli = q.cpu_milli * job.replicas;
  r.gpu_compute_milli = q.device_compute_milli * q.device_count * job.replicas;
  r.gpu_memory_mib = device_memory * q.device_count * job.replicas;
  return r;
}

}  // namespace xpool
