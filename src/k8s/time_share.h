#pragma once
// Time-sharing on Kubernetes: what a pod says about itself (priority, whether it may be suspended, its tenant and
// the owner that recreates it) and the extender's tenant configuration (guarantees and limits per namespace, as
// the server's tenant quotas). Formats and the suspend contract are in docs/kubernetes.md, "Time-sharing on
// Kubernetes".
//
//   priority     the pod's spec.priority (the API server resolves priorityClassName into it), clamped to xpool's
//                0..100; overridden by the annotation xpool.io/priority ("0".."100", "low", "normal", "high");
//                no spec.priority and no annotation: normal (50)
//   preemptible  annotation xpool.io/preemptible "true" (default "false": a pod is never a victim unless it opts in)
//   tenant       the pod's namespace
//   owner        its controller ("Job/ns/name", "ReplicaSet/ns/name", ...); "" for a bare pod
//
// Stateless functions and value types; thread-safe.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "k8s/kube_objects.h"
#include "scheduler/queue/queue_types.h"

namespace xpool::k8s {

inline constexpr std::string_view kPriorityAnnotation = "xpool.io/priority";
inline constexpr std::string_view kPreemptibleAnnotation = "xpool.io/preemptible";
// Written by the extender on a victim: the time (RFC 3339, UTC) by which it must have checkpointed and exited;
// the pod is evicted with its grace period then. The pod's helper watches it (downward API volume).
inline constexpr std::string_view kSuspendAnnotation = "xpool.io/suspend-by";

struct PodTerms {
  int priority = kPriorityNormal;  // 0..100
  bool preemptible = false;
  std::string tenant;  // the namespace
  std::string owner;   // "Kind/namespace/name" of the controller; "" for a bare pod
};

// The pod's terms. A malformed annotation is InvalidArgument naming it, e.g.
//   annotation xpool.io/priority: "urgent" is not a priority (0..100, low, normal or high)
Result<PodTerms> PodTermsOf(const PodInfo& pod);

// Who the pod is in line as: its owner, or for a bare pod "Pod/namespace/name" (it has no other identity that
// survives, and nobody recreates it anyway).
std::string QueueKey(const PodInfo& pod, const PodTerms& terms);

// Per-namespace guarantees and limits, in the server's units and rules (docs/time-sharing.md). The text is JSON:
//   {"tenants": [{"namespace": "team-a",
//                 "guaranteed": {"devices": 2},
//                 "quota": {"devices": 8, "device_memory": "320Gi", "device_compute_milli": 8000, "cpu": "64"},
//                 "priority_quotas": [{"min_priority": 80, "max_priority": 100, "quota": {"devices": 4}}]}]}
// devices count 1000 compute-milli each; device_memory is "80Gi" or an integer of MiB; cpu is "500m" or cores.
// A namespace not listed is a tenant with no guarantee and no limit.
class TenantConfig {
 public:
  // Every field is checked; an error names it ("tenants[1].guaranteed.devices: must be a non-negative integer").
  static Result<TenantConfig> Parse(std::string_view text);

  // The tenants, ids 1..n in the order given.
  const std::vector<Tenant>& tenants() const { return tenants_; }
  // The tenant of a namespace; nullptr when not configured.
  const Tenant* Find(const std::string& ns) const;

 private:
  std::vector<Tenant> tenants_;
  std::map<std::string, size_t> by_namespace_;
};

// RFC 3339 UTC with seconds: "2026-12-02T13:05:51Z".
std::string FormatRfc3339(TimeMicros us);

}  // namespace xpool::k8s
