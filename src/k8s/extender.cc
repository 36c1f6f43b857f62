#include "k8s/extender.h"

#include <algorithm>
#include <functional>
#include <map>

#include "k8s/extender_types.h"
#include "k8s/internal/prometheus.h"
#include "k8s/pod_demand.h"
#include "k8s/time_share_loop.h"

namespace xpool::k8s {
namespace {

HttpReply Json(std::string body) { return HttpReply{200, std::move(body)}; }

HttpReply FilterError(std::string message) {
  ExtenderFilterResult r;
  r.error = std::move(message);
  return Json(EncodeFilterResult(r));
}

// Per device and per pod container, in base units (bytes, ratio of a device), labelled to join with HAMi's
// (deviceuuid, nodeid) and DCGM's (UUID, Hostname) series. Every device of every known node is present, at zero
// when nothing is booked on it.
void DeviceMetrics(const KubeCluster& cluster, std::string* out) {
  using internal::MilliText;
  const std::vector<DeviceBooking> devices = cluster.Devices();
  std::map<std::string, std::string> labels_of;  // uuid → device labels
  for (const DeviceBooking& d : devices) labels_of[d.uuid] = internal::DeviceLabels(d.node, d.uuid, d.index, d.model);
  struct Family {
    const char* name;
    const char* help;
    std::function<std::string(const DeviceBooking&)> value;
  };
  constexpr int64_t kMiB = 1 << 20;
  const Family families[] = {
      {"xpool_device_memory_capacity_bytes", "device memory (capacity)",
       [](const DeviceBooking& d) { return std::to_string(d.memory_mib * kMiB); }},
      {"xpool_device_memory_allocated_bytes", "device memory granted to pods",
       [](const DeviceBooking& d) { return std::to_string(d.allocated_memory_mib * kMiB); }},
      {"xpool_device_core_allocated_ratio", "compute granted to pods, in devices (1 = the whole device)",
       [](const DeviceBooking& d) { return MilliText(d.allocated_compute_milli); }},
      {"xpool_device_shared_num", "containers holding a grant on the device",
       [](const DeviceBooking& d) { return std::to_string(d.sharers); }},
  };
  for (const Family& f : families) {
    *out += internal::PromHeader(f.name, f.help);
    for (const DeviceBooking& d : devices)
      *out += std::string(f.name) + "{" + labels_of[d.uuid] + "} " + f.value(d) + "\n";
  }
  const std::vector<ContainerBooking> containers = cluster.Containers();
  *out += internal::PromHeader("xpool_pod_device_memory_allocated_bytes", "device memory granted to a pod's container");
  std::string cores = internal::PromHeader("xpool_pod_device_core_allocated_ratio",
                                           "compute granted to a pod's container, in devices (0: shared freely)");
  for (const ContainerBooking& c : containers) {
    const std::string device = labels_of.count(c.uuid) != 0 ? labels_of[c.uuid]
                                                            : "deviceuuid=\"" + internal::PromLabel(c.uuid) +
                                                                  "\",UUID=\"" + internal::PromLabel(c.uuid) + "\"";
    const std::string labels = internal::PodLabels(c.pod_key, c.pod_uid, c.container) + "," + device;
    *out += "xpool_pod_device_memory_allocated_bytes{" + labels + "} " + std::to_string(c.memory_mib * kMiB) + "\n";
    cores += "xpool_pod_device_core_allocated_ratio{" + labels + "} " + MilliText(c.compute_milli) + "\n";
  }
  *out += cores;
}

HttpReply PlainError(int status, const std::string& message) {
  return HttpReply{status, message + "\n", "text/plain; charset=utf-8"};
}

}  // namespace

void Extender::RememberPod(const PodInfo& pod) {
  if (pod.uid.empty()) return;
  std::lock_guard<std::mutex> lock(pods_mu_);
  if (pods_.size() > 10000) pods_.clear();  // bounded: bind falls back to a GET when the pod is not here
  pods_[pod.uid] = pod;
}

std::optional<PodInfo> Extender::TakePod(const std::string& uid) {
  std::lock_guard<std::mutex> lock(pods_mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return std::nullopt;
  PodInfo out = std::move(it->second);
  pods_.erase(it);
  return out;
}

HttpReply Extender::Filter(std::string_view body) {
  ++counters_.filter;
  Result<ExtenderArgs> args = ParseExtenderArgs(body);
  if (!args.ok()) {
    ++counters_.bad_requests;
    return FilterError("xpool: bad ExtenderArgs: " + args.status().message());
  }
  ExtenderFilterResult r;
  r.use_node_names = !args->has_nodes;
  const std::vector<std::string> names = args->CandidateNames();
  auto pass = [&](size_t i) {
    if (r.use_node_names) {
      r.node_names.push_back(names[i]);
    } else {
      r.nodes.push_back(args->nodes[i]);
    }
  };
  if (!RequestsManagedResources(args->pod)) {  // not ours: every candidate passes
    for (size_t i = 0; i < names.size(); ++i) pass(i);
    return Json(EncodeFilterResult(r));
  }
  Result<PodDemand> demand = PodToDemand(args->pod);
  if (!demand.ok()) {
    for (const std::string& n : names) r.failed_and_unresolvable_nodes[n] = demand.status().message();
    return Json(EncodeFilterResult(r));
  }
  std::optional<PodTerms> terms;
  if (time_share_ != nullptr) {
    Result<PodTerms> t = PodTermsOf(args->pod);
    if (!t.ok()) {
      for (const std::string& n : names) r.failed_and_unresolvable_nodes[n] = t.status().message();
      return Json(EncodeFilterResult(r));
    }
    terms = std::move(t).value();
  }
  if (Status s = sync_.Check(); !s.ok()) return FilterError(s.message());
  if (std::string over = terms ? time_share_->LimitReason(args->pod, *terms, *demand) : ""; !over.empty()) {
    for (const std::string& n : names) r.failed_nodes[n] = over;  // waits until its namespace's use drops
    return Json(EncodeFilterResult(r));
  }
  for (const NodeEntry& n : args->nodes) {
    if (!cluster_.HasNode(n.node.name)) cluster_.UpsertNode(n.node);  // the watch may lag the scheduler's cache
  }
  const std::vector<NodeFit> fits = cluster_.Evaluate(args->pod.uid, *demand, names);
  for (size_t i = 0; i < names.size(); ++i) {
    switch (fits[i].kind) {
      case NodeFit::Kind::kFits:
        if (std::string held = terms ? time_share_->HoldReason(args->pod, *terms, names[i]) : ""; !held.empty()) {
          r.failed_nodes[names[i]] = held;
          break;
        }
        pass(i);
        break;
      case NodeFit::Kind::kWait:
        r.failed_nodes[names[i]] = fits[i].reason;
        break;
      case NodeFit::Kind::kNeverFits:
        r.failed_and_unresolvable_nodes[names[i]] = fits[i].reason;
        break;
    }
  }
  RememberPod(args->pod);
  return Json(EncodeFilterResult(r));
}

HttpReply Extender::Prioritize(std::string_view body) {
  ++counters_.prioritize;
  Result<ExtenderArgs> args = ParseExtenderArgs(body);
  if (!args.ok()) {
    ++counters_.bad_requests;
    return PlainError(400, "xpool: bad ExtenderArgs: " + args.status().message());
  }
  const std::vector<std::string> names = args->CandidateNames();
  std::vector<HostPriority> out;
  for (const std::string& n : names) out.push_back({n, 0});
  if (!RequestsManagedResources(args->pod)) return Json(EncodeHostPriorityList(out));
  Result<PodDemand> demand = PodToDemand(args->pod);
  if (!demand.ok()) return Json(EncodeHostPriorityList(out));
  if (Status s = sync_.Check(); !s.ok()) return PlainError(503, s.message());
  const std::vector<NodeFit> fits = cluster_.Evaluate(args->pod.uid, *demand, names);
  bool any = false;
  int64_t lo = 0, hi = 0;
  for (const NodeFit& f : fits) {
    if (f.kind != NodeFit::Kind::kFits) continue;
    lo = any ? std::min(lo, f.score) : f.score;
    hi = any ? std::max(hi, f.score) : f.score;
    any = true;
  }
  for (size_t i = 0; i < fits.size(); ++i) {
    if (fits[i].kind != NodeFit::Kind::kFits) continue;
    // Linear onto 0..10; when every fitting node scores the same they all get the top score. Scores are
    // int64 policy units, so scale in a wide type to avoid overflow.
    out[i].score =
        hi == lo ? kMaxExtenderPriority
                 : static_cast<int64_t>(static_cast<__int128>(fits[i].score - lo) * kMaxExtenderPriority / (hi - lo));
  }
  return Json(EncodeHostPriorityList(out));
}

HttpReply Extender::Bind(std::string_view body) {
  ++counters_.bind;
  Result<ExtenderBindingArgs> args = ParseBindingArgs(body);
  if (!args.ok()) {
    ++counters_.bad_requests;
    ++counters_.bind_failed;
    return Json(EncodeBindingResult("xpool: bad ExtenderBindingArgs: " + args.status().message()));
  }
  auto fail = [&](const std::string& message) {
    ++counters_.bind_failed;
    return Json(EncodeBindingResult(message));
  };
  std::optional<PodInfo> pod = args->pod_uid.empty() ? std::nullopt : TakePod(args->pod_uid);
  if (!pod) {
    Result<PodInfo> fetched = api_.GetPod(args->pod_namespace, args->pod_name);
    if (!fetched.ok())
      return fail("xpool: cannot read pod " + args->pod_namespace + "/" + args->pod_name + ": " +
                  fetched.status().message());
    if (!args->pod_uid.empty() && fetched->uid != args->pod_uid) {
      return fail("xpool: pod " + fetched->Key() + " has uid " + fetched->uid + ", the scheduler asked for " +
                  args->pod_uid + " (recreated?)");
    }
    pod = std::move(fetched).value();
  }
  const std::string uid = args->pod_uid.empty() ? pod->uid : args->pod_uid;
  Result<PodDemand> demand = PodToDemand(*pod);
  if (!demand.ok()) return fail("xpool: " + demand.status().message());
  if (!demand->managed()) {  // not ours: bind as the default binder would
    Status s = api_.CreateBinding(args->pod_namespace, args->pod_name, uid, args->node);
    return s.ok() ? Json(EncodeBindingResult("")) : fail("xpool: binding failed: " + s.message());
  }
  if (Status s = sync_.Check(); !s.ok()) return fail(s.message());
  Result<PodAssignment> assignment = cluster_.Reserve(uid, *demand, args->node);
  if (!assignment.ok()) {
    RememberPod(*pod);  // kube-scheduler will retry the pod; keep it for the next filter/bind
    return fail("xpool: " + assignment.status().message());
  }
  // The API calls happen with no lock held: other binds proceed meanwhile.
  const std::string annotation(kAllocationAnnotation);
  const std::string bind_time(kBindTimeAnnotation);
  Status patched = api_.PatchPodAnnotations(
      args->pod_namespace, args->pod_name,
      {{annotation, EncodeAssignment(*assignment)}, {bind_time, std::to_string(clock_.NowMicros())}});
  if (!patched.ok()) {
    IgnoreError(cluster_.Unreserve(uid), "NotFound only: the pod was deleted meanwhile and its booking with it");
    return fail("xpool: recording the devices on the pod failed: " + patched.message());
  }
  Status bound = api_.CreateBinding(args->pod_namespace, args->pod_name, uid, args->node);
  if (!bound.ok()) {
    // An annotation left on an unbound pod is harmless: the pod's next bind writes its own.
    IgnoreError(api_.PatchPodAnnotations(args->pod_namespace, args->pod_name,
                                         {{annotation, std::nullopt}, {bind_time, std::nullopt}}),
                "best effort: the next bind overwrites it");
    IgnoreError(cluster_.Unreserve(uid), "NotFound only: the pod was deleted meanwhile and its booking with it");
    return fail("xpool: binding failed: " + bound.message());
  }
  return Json(EncodeBindingResult(""));
}

HttpReply Extender::Preempt(std::string_view body) {
  ++counters_.preempt;
  Result<ExtenderPreemptionArgs> args = ParsePreemptionArgs(body);
  if (!args.ok()) {
    ++counters_.bad_requests;
    return PlainError(400, "xpool: bad ExtenderPreemptionArgs: " + args.status().message());
  }
  if (!RequestsManagedResources(args->pod)) return Json(EncodePreemptionResult(args->victims));
  std::map<std::string, MetaVictims> out;
  Result<PodDemand> demand = PodToDemand(args->pod);
  if (!demand.ok()) return Json(EncodePreemptionResult(out));  // no eviction can help a malformed pod
  if (Status s = sync_.Check(); !s.ok()) return PlainError(503, s.message());
  if (time_share_ == nullptr) {
    for (const auto& [node, victims] : args->victims) {
      NodeFit fit = cluster_.EvaluateWithout(*demand, node, victims.pod_uids);
      if (fit.kind == NodeFit::Kind::kFits) out.emplace(node, victims);
    }
    return Json(EncodePreemptionResult(out));
  }
  Result<PodTerms> terms = PodTermsOf(args->pod);
  if (!terms.ok()) return Json(EncodePreemptionResult(out));  // no eviction for a pod the filter refuses
  for (const auto& [node, victims] : args->victims) {
    Result<VictimPlan> plan = time_share_->ChooseOnNode(args->pod, *terms, *demand, node);
    if (!plan.ok() || (!plan->fits_now && !plan->found)) continue;
    MetaVictims kept;
    kept.num_pdb_violations = victims.num_pdb_violations;
    for (const std::string& uid : victims.pod_uids) {
      if (!cluster_.Holds(uid)) kept.pod_uids.push_back(uid);  // kube-scheduler's own reasons: not ours to judge
    }
    for (const PodVictim& v : plan->victims) kept.pod_uids.push_back(v.uid);
    out.emplace(node, std::move(kept));
  }
  return Json(EncodePreemptionResult(out));
}

std::string Extender::Metrics() const {
  const KubeClusterStats s = cluster_.Stats();
  std::string out;
  auto line = [&](const char* name, const char* help, int64_t value, const char* type = "counter") {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " +
           std::to_string(value) + "\n";
  };
  line("xpool_extender_filter_total", "filter calls", counters_.filter.load());
  line("xpool_extender_prioritize_total", "prioritize calls", counters_.prioritize.load());
  line("xpool_extender_bind_total", "bind calls", counters_.bind.load());
  line("xpool_extender_bind_failed_total", "bind calls answered with an error", counters_.bind_failed.load());
  line("xpool_extender_preempt_total", "preempt calls", counters_.preempt.load());
  line("xpool_extender_bad_requests_total", "requests that could not be parsed", counters_.bad_requests.load());
  line("xpool_extender_reserve_refused_total", "binds refused because the node no longer fit", s.reserve_refused);
  line("xpool_extender_allocation_conflicts_total", "pods whose recorded allocation no longer fit",
       s.observed_conflicts);
  line("xpool_extender_nodes", "nodes known", s.nodes, "gauge");
  line("xpool_extender_pods_holding_devices", "pods holding devices", s.bookings, "gauge");
  line("xpool_extender_synced", "1 when the view follows the API server", sync_.Check().ok() ? 1 : 0, "gauge");
  if (time_share_ != nullptr) {
    const TimeShareStats t = time_share_->Stats();
    line("xpool_timeshare_passes_total", "time-sharing passes", t.passes);
    line("xpool_timeshare_skipped_unsynced_total", "passes that did nothing: the view was not synced",
         t.skipped_unsynced);
    line("xpool_timeshare_suspended_total", "pods given the suspend annotation", t.suspended);
    line("xpool_timeshare_evicted_total", "pods evicted after their suspend deadline", t.evicted);
    line("xpool_timeshare_eviction_refused_total", "evictions a disruption budget refused (retried)",
         t.eviction_refused);
    line("xpool_timeshare_api_errors_total", "API calls of the loop that failed", t.api_errors);
    line("xpool_timeshare_suspending_pods", "pods told to suspend that still hold devices", t.in_flight, "gauge");
  }
  DeviceMetrics(cluster_, &out);
  return out;
}

}  // namespace xpool::k8s
