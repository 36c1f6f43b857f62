#include "k8s/cluster_watcher.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace xpool::k8s {

void ClusterWatcher::Start() {
  stop_ = false;
  nodes_thread_ = std::thread([this] { Loop(ResourceKind::kNodes); });
  pods_thread_ = std::thread([this] { Loop(ResourceKind::kPods); });
}

void ClusterWatcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  api_.CancelWatches();
  if (nodes_thread_.joinable()) nodes_thread_.join();
  if (pods_thread_.joinable()) pods_thread_.join();
}

void ClusterWatcher::Sleep(int64_t ms) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stop_.load(); });
}

void ClusterWatcher::Report(ResourceKind kind, const Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  bool& ok = kind == ResourceKind::kNodes ? nodes_ok_ : pods_ok_;
  ok = status.ok();
  if (!status.ok()) {
    sync_.SetError(status.message());
  } else if (nodes_ok_ && pods_ok_) {
    sync_.SetSynced();
  }
  if (kind == ResourceKind::kNodes && status.ok()) nodes_listed_once_ = true;
  cv_.notify_all();
}

Status ClusterWatcher::ListOnce(ResourceKind kind, std::string* resource_version) {
  ASSIGN_OR_RETURN(ListResult list, api_.List(kind));
  if (kind == ResourceKind::kNodes) {
    std::vector<KubeNode> nodes;
    for (const std::string& item : list.items) {
      Result<KubeNode> n = ParseKubeNode(item);
      if (n.ok()) nodes.push_back(std::move(n).value());  // a node without a name cannot be scheduled to anyway
    }
    cluster_.ReplaceNodes(nodes);
    ++node_lists_;
  } else {
    std::vector<PodInfo> pods;
    for (const std::string& item : list.items) {
      Result<PodInfo> p = ParsePod(item);
      if (p.ok()) pods.push_back(std::move(p).value());
    }
    cluster_.ReplacePods(pods);
    ++pod_lists_;
  }
  *resource_version = list.resource_version;
  return Status::Ok();
}

void ClusterWatcher::Apply(ResourceKind kind, const WatchEvent& event, std::string* resource_version) {
  if (kind == ResourceKind::kNodes) {
    Result<KubeNode> n = ParseKubeNode(event.object_json);
    if (!n.ok()) return;
    if (!n->resource_version.empty()) *resource_version = n->resource_version;
    if (event.type == "BOOKMARK") return;
    if (event.type == "DELETED") {
      cluster_.RemoveNode(n->name);
    } else {
      cluster_.UpsertNode(*n);
    }
    return;
  }
  Result<PodInfo> p = ParsePod(event.object_json);
  if (!p.ok()) return;
  if (!p->resource_version.empty()) *resource_version = p->resource_version;
  if (event.type == "BOOKMARK") return;
  if (event.type == "DELETED") {
    cluster_.ForgetPod(p->uid);
  } else {
    cluster_.ObservePod(*p);
  }
}

void ClusterWatcher::Loop(ResourceKind kind) {
  if (kind == ResourceKind::kPods) {  // recorded allocations need their nodes
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return stop_.load() || nodes_listed_once_; });
  }
  int64_t backoff = options_.initial_backoff_ms;
  while (!stop_.load()) {
    std::string version;
    Status listed = ListOnce(kind, &version);
    Report(kind, listed);
    if (!listed.ok()) {
      Sleep(backoff);
      backoff = std::min(backoff * 2, options_.max_backoff_ms);
      continue;
    }
    backoff = options_.initial_backoff_ms;
    // Watch until it fails; a stream the server simply ended is re-opened from the last version seen.
    while (!stop_.load()) {
      const auto started = std::chrono::steady_clock::now();
      Status watched = api_.Watch(
          kind, version, [&](const WatchEvent& e) { Apply(kind, e, &version); }, stop_);
      if (!watched.ok()) break;  // relist
      // A server that ends every watch at once must not turn this loop into a busy one.
      if (std::chrono::steady_clock::now() - started < std::chrono::milliseconds(50)) {
        Sleep(options_.initial_backoff_ms);
      }
    }
  }
}

}  // namespace xpool::k8s
