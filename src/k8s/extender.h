#pragma once
// Extender: the kube-scheduler extender verbs over a KubeCluster (placement) and a KubeApi (bind's API calls).
//
//   filter      managed pods: nodes that can take every managed container now pass; the others fail with the
//               reason ("container \"main\": not enough device memory on any device"), in FailedAndUnresolvable
//               when even an empty node could not take it. Unmanaged pods pass through untouched. While the
//               cluster view is not synced with the API server, managed pods get an Error (never a guess).
//   prioritize  the policy's scores, scaled to 0..10 over the candidates.
//   bind        reserves the devices on the chosen node (KubeCluster::Reserve: the race is decided there),
//               records them on the pod (xpool.io/allocation), then creates the Binding; a failed API call frees
//               the reservation. Unmanaged pods are just bound.
//   preempt     with time-sharing (SetTimeShare): per node, the victims xpool's rules choose
//               (TimeShareLoop::ChooseOnNode) plus kube-scheduler's proposed victims that hold no xpool devices; a
//               node where the rules find no way is dropped, and a pod holding xpool devices is never a victim unless
//               the rules chose it. Without: keeps the nodes where evicting the proposed victims frees enough devices.
// With time-sharing, filter also refuses a pod whose time-sharing annotations are malformed (naming the
// annotation), makes a pod wait while it would take its namespace past a configured limit, and keeps a pod off a
// node whose devices are being freed for (or are wanted by resumed work) ahead of it in line.
// Each verb takes the request body and returns the HTTP status and response body. Bad input gets a clear error,
// never a crash. Thread-safe (kube-scheduler binds from several goroutines at once).
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "k8s/http_server.h"
#include "k8s/kube_api.h"
#include "k8s/kube_cluster.h"

namespace xpool::k8s {

class TimeShareLoop;

// Whether the cluster view follows the API server (set by the informers). Thread-safe.
class SyncState {
 public:
  void SetSynced() {
    std::lock_guard<std::mutex> lock(mu_);
    synced_ = true;
    error_.clear();
  }
  void SetError(std::string error) {
    std::lock_guard<std::mutex> lock(mu_);
    synced_ = false;
    error_ = std::move(error);
  }
  // OK when synced, else Unavailable with the last error.
  Status Check() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (synced_) return Status::Ok();
    return UnavailableError("xpool's view of the cluster is not synced with the API server" +
                            (error_.empty() ? std::string(" yet") : " (" + error_ + ")") + "; retry later");
  }

 private:
  mutable std::mutex mu_;
  bool synced_ = false;
  std::string error_;
};

struct ExtenderCounters {
  std::atomic<int64_t> filter{0}, prioritize{0}, bind{0}, bind_failed{0}, preempt{0}, bad_requests{0};
};

class Extender {
 public:
  Extender(KubeCluster& cluster, KubeApi& api, const SyncState& sync, const Clock& clock = RealClock::Instance())
      : cluster_(cluster), api_(api), sync_(sync), clock_(clock) {}

  HttpReply Filter(std::string_view body);
  HttpReply Prioritize(std::string_view body);
  HttpReply Bind(std::string_view body);
  HttpReply Preempt(std::string_view body);

  // Turns time-sharing on (see above); `loop` outlives the extender. Call before serving.
  void SetTimeShare(TimeShareLoop* loop) { time_share_ = loop; }

  const ExtenderCounters& counters() const { return counters_; }
  // Prometheus text for /metrics.
  std::string Metrics() const;

 private:
  void RememberPod(const PodInfo& pod);
  std::optional<PodInfo> TakePod(const std::string& uid);

  KubeCluster& cluster_;
  KubeApi& api_;
  const SyncState& sync_;
  const Clock& clock_;
  TimeShareLoop* time_share_ = nullptr;
  ExtenderCounters counters_;
  std::mutex pods_mu_;
  std::unordered_map<std::string, PodInfo> pods_;  // uid → pod seen by filter, for bind; guarded by pods_mu_
};

}  // namespace xpool::k8s
