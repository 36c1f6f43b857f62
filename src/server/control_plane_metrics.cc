// ControlPlane: the metrics it declares and the gauges it sets at each scrape (docs/api.md, "Metrics").
// Kept apart from control_plane.cc; same class, same locking rules (mu_ guards the queue and the ClusterState).
#include <map>
#include <string>
#include <vector>

#include "server/control_plane.h"

namespace xpool::server {

void ControlPlane::DeclareMetrics(MetricsRegistry& m) {
  m.DeclareCounter("xpool_jobs_submitted_total", "Jobs accepted (committed) through the API.");
  m.DeclareCounter("xpool_placements_total", "Jobs placed by the scheduling loop (all replicas at once).");
  m.CounterAdd("xpool_jobs_submitted_total", {}, 0);
  m.CounterAdd("xpool_placements_total", {}, 0);
  m.DeclareHistogram("xpool_scheduling_latency_seconds", "Time to place (or fail to place) one job.",
                     MetricsRegistry::LatencyBuckets());
  m.DeclareGauge("xpool_queue_length", "Queued jobs per tenant.");
  m.DeclareGauge("xpool_nodes", "Nodes by condition.");
  m.DeclareGauge("xpool_device_memory_capacity_mib", "Device memory capacity (MiB).");
  m.DeclareGauge("xpool_device_memory_allocated_mib", "Device memory allocated to tasks (MiB).");
  m.DeclareGauge("xpool_device_cores_capacity_milli", "Device compute capacity (milli-devices; 1000 = whole).");
  m.DeclareGauge("xpool_device_cores_allocated_milli", "Device compute allocated to tasks (milli-devices).");
}

void ControlPlane::ExportGauges(MetricsRegistry& m) const {
  // Every tenant's series, 0 when nothing is queued; read before the lock, as store calls are.
  Result<std::vector<TenantRecord>> tenants = store_.ListTenants();
  std::lock_guard lock(mu_);
  std::map<std::string, int64_t> per_tenant;
  if (tenants.ok()) {
    for (const TenantRecord& t : *tenants) per_tenant[t.name] = 0;
  }
  for (const auto& [id, job] : queued_) per_tenant[TenantName(job.tenant)]++;
  m.GaugeClear("xpool_queue_length");
  for (const auto& [tenant, n] : per_tenant) m.GaugeSet("xpool_queue_length", {{"tenant", tenant}}, double(n));
  for (const char* g : {"xpool_device_memory_capacity_mib", "xpool_device_memory_allocated_mib",
                        "xpool_device_cores_capacity_milli", "xpool_device_cores_allocated_milli"}) {
    m.GaugeClear(g);
  }
  int64_t ready = 0, not_ready = 0, cordoned = 0;
  for (int i = 0; i < state_.node_count(); ++i) {
    const Node& n = state_.node(i);
    (n.ready ? ready : not_ready)++;
    if (n.cordoned) cordoned++;
    for (size_t d = 0; d < n.devices.size(); ++d) {
      Labels l = {{"node", n.name}, {"device", std::to_string(d)}, {"model", n.devices[d].model}};
      const DeviceUsage& u = state_.usage(i).devices[d];
      m.GaugeSet("xpool_device_memory_capacity_mib", l, double(n.devices[d].memory_mib));
      m.GaugeSet("xpool_device_memory_allocated_mib", l, double(u.memory_mib));
      m.GaugeSet("xpool_device_cores_capacity_milli", l, double(n.devices[d].compute_milli));
      m.GaugeSet("xpool_device_cores_allocated_milli", l, double(u.compute_milli));
    }
  }
  m.GaugeSet("xpool_nodes", {{"condition", "ready"}}, double(ready));
  m.GaugeSet("xpool_nodes", {{"condition", "not_ready"}}, double(not_ready));
  m.GaugeSet("xpool_nodes", {{"condition", "cordoned"}}, double(cordoned));
}

}  // namespace xpool::server
