#pragma once
// ClusterWatcher: keeps a KubeCluster following the API server — list, then watch, of nodes and of pods, each in
// its own thread — and reports in a SyncState whether the view can be trusted.
//
// Per resource: list → replace the view → watch from the list's resourceVersion; when the server ends the watch
// it is re-opened from the last version seen; when the watch fails (410 Gone, connection lost) the resource is
// listed again. A failed list marks the view unsynced (the extender then answers with an error) and is retried
// with a capped exponential backoff; the next successful list resyncs everything. Pods are listed only after the
// nodes have been, so every recorded allocation finds its node.
// Owns its two threads; Start/Stop from one thread. The KubeCluster and SyncState are thread-safe.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "k8s/extender.h"
#include "k8s/kube_api.h"
#include "k8s/kube_cluster.h"

namespace xpool::k8s {

class ClusterWatcher {
 public:
  struct Options {
    int64_t initial_backoff_ms = 200;
    int64_t max_backoff_ms = 10'000;
  };
  ClusterWatcher(KubeApi& api, KubeCluster& cluster, SyncState& sync, Options options)
      : api_(api), cluster_(cluster), sync_(sync), options_(options) {}
  ~ClusterWatcher() { Stop(); }

  void Start();
  void Stop();

  // Completed lists per resource (for tests and metrics).
  int64_t node_lists() const { return node_lists_.load(); }
  int64_t pod_lists() const { return pod_lists_.load(); }

 private:
  void Loop(ResourceKind kind);
  Status ListOnce(ResourceKind kind, std::string* resource_version);
  void Apply(ResourceKind kind, const WatchEvent& event, std::string* resource_version);
  void Report(ResourceKind kind, const Status& status);
  void Sleep(int64_t ms);

  KubeApi& api_;
  KubeCluster& cluster_;
  SyncState& sync_;
  const Options options_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> node_lists_{0}, pod_lists_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool nodes_ok_ = false;           // guarded by mu_
  bool pods_ok_ = false;            // guarded by mu_
  bool nodes_listed_once_ = false;  // guarded by mu_
  std::thread nodes_thread_, pods_thread_;
};

}  // namespace xpool::k8s
