// ControlPlane: the metrics it declares, the gauges it sets at each scrape and the per-device series it renders
// itself (docs/api.md, "Metrics"). Kept apart from control_plane.cc; same class, same locking rules (mu_ guards
// the queue and the ClusterState; device_metrics_mu_ the device series' label cache).
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "model/vendor.h"
#include "server/control_plane.h"

namespace xpool::server {
namespace {

// Quantities are integers inside; they become base units only here, at rendering.
double MibToBytes(int64_t mib) { return double(mib) * double(int64_t{1} << 20); }
double MilliToRatio(int64_t milli) { return double(milli) / double(kWholeDeviceMilli); }

// DCGM exporter's device labels (UUID, gpu = the index, device = "nvidia<index>" — the vendor's name for others —,
// Hostname) and HAMi's (deviceuuid, deviceidx, nodeid), with `node` and `model`: the same values under each's
// names, so each joins without label_replace. `Hostname` is the xpool node name (DCGM's is the exporter's host
// name: equal when nodes are named after their hosts); UUIDs are unique across a cluster, so `on(UUID)` is the
// join to use. DCGM's `modelName` is left out: camelCase fails `promtool check metrics`; a join brings it in
// (group_left(modelName)).
Labels DeviceLabels(const std::string& node, const Device& device) {
  const std::string index = std::to_string(device.index);
  return {{"node", node},
          {"Hostname", node},
          {"UUID", device.uuid},
          {"gpu", index},
          {"device", std::string(VendorName(device.vendor)) + index},
          {"model", device.model},
          {"deviceuuid", device.uuid},
          {"deviceidx", index},
          {"nodeid", node}};
}

// The per-device families, in base units (bytes; compute as a ratio of one device), labelled as DCGM exporter
// and HAMi label theirs (DeviceLabels), so that PromQL joins them `on(UUID)` or `on(deviceuuid)`. A device's
// values are read in this order (DeviceValues).
struct DeviceFamily {
  const char* name;
  const char* help;
  bool bytes;  // MiB shown as bytes; else milli shown as a ratio of one device
};
constexpr DeviceFamily kDeviceFamilies[] = {
    {"xpool_device_memory_capacity_bytes", "Device memory capacity (bytes).", true},
    {"xpool_device_memory_allocated_bytes", "Device memory allocated to tasks (bytes).", true},
    {"xpool_device_core_capacity_ratio", "Device compute capacity, in devices (1 = the whole device).", false},
    {"xpool_device_core_allocated_ratio", "Device compute allocated to tasks, in devices.", false},
};
constexpr size_t kDeviceFamilyCount = std::size(kDeviceFamilies);

}  // namespace

void ControlPlane::AppendDeviceMetrics(std::string* out) const {
  // One scrape at a time renders from the label cache; under mu_ only the numbers are copied (and the labels
  // rebuilt when a node joined or changed its description), so heartbeats and passes wait microseconds.
  std::lock_guard cache_lock(device_metrics_mu_);
  std::vector<int64_t> values;
  {
    std::lock_guard lock(mu_);
    if (device_labels_identity_ != state_.identity() || device_labels_version_ != state_.description_version()) {
      device_labels_.clear();
      for (int i = 0; i < state_.node_count(); ++i) {
        for (const Device& device : state_.node(i).devices) {
          device_labels_.push_back(FormatSeriesName("", DeviceLabels(state_.node(i).name, device)));
        }
      }
      device_labels_identity_ = state_.identity();
      device_labels_version_ = state_.description_version();
    }
    values.reserve(device_labels_.size() * kDeviceFamilyCount);
    for (int i = 0; i < state_.node_count(); ++i) {
      const Node& n = state_.node(i);
      for (size_t d = 0; d < n.devices.size(); ++d) {
        const DeviceUsage& u = state_.usage(i).devices[d];
        values.insert(values.end(),
                      {n.devices[d].memory_mib, u.memory_mib, n.devices[d].compute_milli, u.compute_milli});
      }
    }
  }
  size_t size = out->size();
  for (const std::string& labels : device_labels_) size += kDeviceFamilyCount * (labels.size() + 64);
  out->reserve(size);
  for (size_t f = 0; f < kDeviceFamilyCount; ++f) {
    const DeviceFamily& family = kDeviceFamilies[f];
    out->append("# HELP ").append(family.name).append(" ").append(family.help).append("\n");
    out->append("# TYPE ").append(family.name).append(" gauge\n");
    for (size_t d = 0; d < device_labels_.size(); ++d) {
      const int64_t v = values[d * kDeviceFamilyCount + f];
      out->append(family.name).append(device_labels_[d]).push_back(' ');
      AppendMetricValue(out, family.bytes ? MibToBytes(v) : MilliToRatio(v));
      out->push_back('\n');
    }
  }
}

void ControlPlane::DeclareMetrics(MetricsRegistry& m) {
  m.DeclareCounter("xpool_jobs_submitted_total", "Jobs accepted (committed) through the API.");
  m.DeclareCounter("xpool_placements_total", "Jobs placed by the scheduling loop (all replicas at once).");
  m.CounterAdd("xpool_jobs_submitted_total", {}, 0);
  m.CounterAdd("xpool_placements_total", {}, 0);
  m.DeclareHistogram("xpool_scheduling_latency_seconds", "Time of one scheduling pass over the waiting jobs.",
                     MetricsRegistry::LatencyBuckets());
  m.DeclareGauge("xpool_queue_length", "Queued jobs per tenant.");
  m.DeclareGauge("xpool_nodes", "Nodes by condition.");
  // The device series are not in the registry: AppendDeviceMetrics renders them (kDeviceFamilies).
  m.DeclareCounter("xpool_preemptions_total", "Waiting jobs for which the scheduler suspended running jobs.");
  m.DeclareCounter("xpool_suspensions_total",
                   "Running jobs asked to suspend; cause: scheduler (a preemption or a move) or user (by hand).");
  m.DeclareCounter("xpool_moves_total",
                   "Running jobs the scheduler moved to make room (a suspension, then a restart).");
  m.CounterAdd("xpool_preemptions_total", {}, 0);
  m.CounterAdd("xpool_suspensions_total", {{"cause", "scheduler"}}, 0);
  m.CounterAdd("xpool_suspensions_total", {{"cause", "user"}}, 0);
  m.CounterAdd("xpool_moves_total", {}, 0);
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
  int64_t ready = 0, not_ready = 0, cordoned = 0;
  for (int i = 0; i < state_.node_count(); ++i) {
    const Node& n = state_.node(i);
    (n.ready ? ready : not_ready)++;
    if (n.cordoned) cordoned++;
  }
  m.GaugeSet("xpool_nodes", {{"condition", "ready"}}, double(ready));
  m.GaugeSet("xpool_nodes", {{"condition", "not_ready"}}, double(not_ready));
  m.GaugeSet("xpool_nodes", {{"condition", "cordoned"}}, double(cordoned));
}

}  // namespace xpool::server
