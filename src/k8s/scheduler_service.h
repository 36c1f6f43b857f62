#pragma once
// SchedulerService: `xpool k8s scheduler` assembled — the API-server client, the KubeCluster it keeps in sync
// (ClusterWatcher), the Extender, its time-sharing loop (TimeShareLoop, unless turned off) and the HTTP server
// that exposes the extender:
//   POST <prefix>filter | prioritize | bind | preempt     the extender verbs (kube-scheduler's urlPrefix + verb)
//   GET  /healthz                                        200 while the process serves
//   GET  /readyz                                         200 when synced with the API server, else 503
//   GET  /metrics                                        Prometheus text
// With `metrics_listen` the three GETs are served there instead, so the verbs can listen on loopback only (beside
// kube-scheduler in its pod: nothing else can call bind) while probes and Prometheus reach the pod's address.
// Owns everything it starts; Stop (or the destructor) ends the threads. Thread-safe after Start.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "k8s/cluster_watcher.h"
#include "k8s/extender.h"
#include "k8s/http_kube_api.h"
#include "k8s/http_server.h"
#include "k8s/kube_cluster.h"
#include "k8s/time_share_loop.h"

namespace xpool::k8s {

struct SchedulerServiceOptions {
  std::string listen = "127.0.0.1:8888";  // loopback: only a kube-scheduler on this host can call bind
  std::string url_prefix = "/";           // the verbs are served at <prefix><verb>
  std::string tls_cert, tls_key;
  std::string metrics_listen;  // "" = health and metrics on `listen`
  KubeCluster::Options cluster;
  ClusterWatcher::Options watch;
  std::optional<TimeShareOptions> time_share = TimeShareOptions{};  // nullopt: no time-sharing
};

class SchedulerService {
 public:
  // Starts watching through `api` and serving. Fails on a bad listen address, an unknown policy, or a port
  // that cannot be bound.
  static Result<std::unique_ptr<SchedulerService>> Start(SchedulerServiceOptions options, std::unique_ptr<KubeApi> api);
  ~SchedulerService() { Stop(); }
  void Stop();

  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }  // 0 without metrics_listen
  Extender& extender() { return *extender_; }
  KubeCluster& cluster() { return *cluster_; }
  const SyncState& sync() const { return sync_; }
  const ClusterWatcher& watcher() const { return *watcher_; }
  TimeShareLoop* time_share() { return time_share_.get(); }  // nullptr without time-sharing

 private:
  SchedulerService() = default;

  std::unique_ptr<KubeApi> api_;
  std::unique_ptr<KubeCluster> cluster_;
  SyncState sync_;
  std::unique_ptr<Extender> extender_;
  std::unique_ptr<ClusterWatcher> watcher_;
  std::unique_ptr<TimeShareLoop> time_share_;
  HttpServer server_;
  HttpServer metrics_server_;
  int port_ = 0;
  int metrics_port_ = 0;
};

}  // namespace xpool::k8s
