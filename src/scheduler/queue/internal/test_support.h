#pragma once
// Test support for the queue and preemption tests (not used by production code):
//   - FirstFitPlacer: a deliberately simple JobPlacer double — first node, first devices with room,
//   whole
//     replicas booked on a scratch copy one after another — so the tests of order, quotas and
//     victim rules do not depend on a placement policy's scoring. The production JobPlacer is the
//     scheduler's Schedule().
//   - builders for jobs, tenants and small clusters.
// Header-only; thread-compatible.
#include <string>
#include <utility>
#include <vector>

#include "model/cluster_state.h"
#include "model/node_builder.h"
#include "scheduler/queue/job_placer.h"
#include "scheduler/queue/queue_types.h"

namespace xpool::testing_support {

class FirstFitPlacer final : public JobPlacer {
 public:
  JobPlacement Place(ClusterState& state, const TaskRequest& request, int replicas) override {
    ++calls;
    ClusterState scratch = state;
    JobPlacement out;
    for (int r = 0; r < replicas; ++r) {
      Allocation a;
      if (!FindOnAnyNode(scratch, request, &a) || !scratch.Apply(a).ok()) {
        out.kind = NeverFitsEvenEmpty(state, request) ? OutcomeKind::kNeverFits : OutcomeKind::kWait;
        out.reason = out.kind == OutcomeKind::kWait ? "no room now" : "no node is large enough";
        out.allocations.clear();
        return out;
      }
      out.allocations.push_back(std::move(a));
    }
    out.kind = OutcomeKind::kPlaced;
    return out;
  }
  int calls = 0;

 private:
  static bool FitsOnNode(const ClusterState& s, int n, const TaskRequest& q, bool empty, Allocation* a) {
    const Node& node = s.node(n);
    const NodeUsage& u = s.usage(n);
    const int64_t free_cpu = node.cpu_milli - (empty ? 0 : u.cpu_milli);
    const int64_t free_mem = node.memory_mib - (empty ? 0 : u.memory_mib);
    if (q.cpu_milli > free_cpu || q.memory_mib > free_mem) return false;
    a->node = n;
    a->cpu_milli = q.cpu_milli;
    a->memory_mib = q.memory_mib;
    a->devices.clear();
    for (int d = 0; d < static_cast<int>(node.devices.size()) && static_cast<int>(a->devices.size()) < q.device_count;
         ++d) {
      const Device& dev = node.devices[d];
      const DeviceUsage du = empty ? DeviceUsage{} : u.devices[d];
      const int64_t compute = q.exclusive() ? dev.compute_milli : q.device_compute_milli;
      const int64_t memory = q.exclusive()             ? dev.memory_mib
                             : q.device_memory_mib > 0 ? q.device_memory_mib
                                                       : dev.memory_mib * q.device_memory_percent / 100;
      if (du.exclusive || du.sharers >= dev.max_sharers) continue;
      if (q.exclusive() && du.sharers > 0) continue;
      if (du.memory_mib + memory > dev.memory_mib || du.compute_milli + compute > dev.compute_milli) continue;
      a->devices.push_back({d, memory, compute});
    }
    return static_cast<int>(a->devices.size()) == q.device_count;
  }
  static bool FindOnAnyNode(const ClusterState& s, const TaskRequest& q, Allocation* a) {
    for (int n = 0; n < s.node_count(); ++n) {
      if (FitsOnNode(s, n, q, false, a)) return true;
    }
    return false;
  }
  static bool NeverFitsEvenEmpty(const ClusterState& s, const TaskRequest& q) {
    Allocation a;
    for (int n = 0; n < s.node_count(); ++n) {
      if (FitsOnNode(s, n, q, true, &a)) return false;
    }
    return true;
  }
};

// A request for `gpus` whole GPUs (or `gpus` devices at `compute_milli` each) and some CPU.
inline TaskRequest GpuRequest(int gpus, int64_t compute_milli = 1000, int64_t cpu_milli = 1000) {
  TaskRequest q;
  q.cpu_milli = cpu_milli;
  q.memory_mib = 1024;
  q.device_count = gpus;
  q.device_compute_milli = gpus > 0 ? compute_milli : 0;
  q.device_memory_mib = gpus > 0 && compute_milli < 1000 ? 1024 : 0;
  return q;
}

inline QueueJob Waiting(int64_t id, int64_t tenant, int priority, TimeMicros submit, TaskRequest request,
                        int replicas = 1) {
  QueueJob j;
  j.id = JobId(id);
  j.tenant = TenantId(tenant);
  j.priority = priority;
  j.first_submit = submit;
  j.request = std::move(request);
  j.replicas = replicas;
  return j;
}

inline Tenant MakeTenant(int64_t id, std::string name, int64_t guaranteed_gpu_milli = 0,
                         int64_t limit_gpu_milli = kUnlimitedAmount) {
  Tenant t;
  t.id = TenantId(id);
  t.name = std::move(name);
  t.guaranteed.gpu_compute_milli = guaranteed_gpu_milli;
  if (guaranteed_gpu_milli > 0) {  // a GPU guarantee comes with room for the CPU and memory that go with it
    t.guaranteed.gpu_memory_mib = kUnlimitedAmount / 4;
    t.guaranteed.cpu_milli = kUnlimitedAmount / 4;
  }
  t.limit.gpu_compute_milli = limit_gpu_milli;
  return t;
}

// `nodes` nodes of `gpus` GPUs (80 GiB each), 64 cores, 256 GiB.
inline ClusterState MakeCluster(int nodes, int gpus) {
  ClusterState s;
  for (int i = 0; i < nodes; ++i) {
    CheckOk(s.AddNode(MakeNode("n" + std::to_string(i)).WithGpus(gpus, "A100", 81920).Build()), "distinct valid nodes");
  }
  return s;
}

// Places `job` with the placer, books it in `state` and marks it running since `start`.
inline bool StartJob(ClusterState& state, JobPlacer& placer, QueueJob& job, TimeMicros start) {
  JobPlacement p = placer.Place(state, job.request, job.replicas);
  if (p.kind != OutcomeKind::kPlaced) return false;
  for (const Allocation& a : p.allocations) {
    if (!state.Apply(a).ok()) return false;
  }
  job.allocations = std::move(p.allocations);
  job.state = QueueJobState::kRunning;
  job.last_start = start;
  return true;
}

}  // namespace xpool::testing_support
