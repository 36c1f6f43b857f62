#pragma once
// KubeApi: the few API-server calls xpool's Kubernetes components make, behind an interface so the extender can
// be tested with an in-memory fake and run against a real (or the tests' fake HTTP) API server.
//
//   GET   /api/v1/nodes, /api/v1/pods                         list (items + resourceVersion)
//   GET   ...?watch=1&resourceVersion=RV                      watch (one JSON event per line)
//   GET   /api/v1/namespaces/NS/pods/NAME                     one pod
//   PATCH /api/v1/namespaces/NS/pods/NAME                     annotations (application/merge-patch+json)
//   POST  /api/v1/namespaces/NS/pods/NAME/binding             a v1.Binding
//   POST  /api/v1/namespaces/NS/pods/NAME/eviction            a policy/v1 Eviction (time-sharing)
//   GET   /api/v1/pods?fieldSelector=spec.nodeName=N          the pods bound to one node (device plugin)
//   PATCH /api/v1/nodes/NAME                                  annotations (device plugin)
// Implementations are thread-safe: concurrent binds call them from several threads.
#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "k8s/kube_objects.h"

namespace xpool::k8s {

enum class ResourceKind : uint8_t { kNodes, kPods };

struct ListResult {
  std::string resource_version;
  std::vector<std::string> items;  // each item's JSON text
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  std::string object_json;
};

class KubeApi {
 public:
  virtual ~KubeApi() = default;
  virtual Result<ListResult> List(ResourceKind kind) = 0;
  // Streams events from `resource_version` until the server ends the stream, `stop` becomes true, or an error
  // occurs (returned; e.g. 410 Gone → Aborted, asking for a relist). `on_event` runs on the calling thread.
  virtual Status Watch(ResourceKind kind, const std::string& resource_version,
                       const std::function<void(const WatchEvent&)>& on_event, const std::atomic<bool>& stop) = 0;
  virtual Result<PodInfo> GetPod(const std::string& ns, const std::string& name) = 0;
  // Sets (value) or removes (nullopt) annotations.
  virtual Status PatchPodAnnotations(const std::string& ns, const std::string& name,
                                     const std::map<std::string, std::optional<std::string>>& annotations) = 0;
  virtual Status CreateBinding(const std::string& ns, const std::string& name, const std::string& uid,
                               const std::string& node) = 0;
  // The pods bound to `node` (spec.nodeName). The default lists every pod and keeps that node's.
  virtual Result<std::vector<PodInfo>> ListPodsOnNode(const std::string& node) {
    ASSIGN_OR_RETURN(ListResult list, List(ResourceKind::kPods));
    std::vector<PodInfo> out;
    for (const std::string& item : list.items) {
      Result<PodInfo> pod = ParsePod(item);
      if (pod.ok() && pod->node_name == node) out.push_back(std::move(*pod));
    }
    return out;
  }
  // Evicts the pod through the Eviction API (its PodDisruptionBudgets apply) with `grace_seconds` as the
  // deletion's grace period. NotFound when the pod is gone; a budget's refusal (429) is ResourceExhausted.
  virtual Status EvictPod(const std::string& /*ns*/, const std::string& /*name*/, int64_t /*grace_seconds*/) {
    return FailedPreconditionError("this KubeApi cannot evict pods");
  }
  // Sets (value) or removes (nullopt) annotations of a Node.
  virtual Status PatchNodeAnnotations(const std::string& /*node*/,
                                      const std::map<std::string, std::optional<std::string>>& /*annotations*/) {
    return FailedPreconditionError("this KubeApi cannot patch nodes");
  }
  // Interrupts every Watch in progress (they return promptly); used at shutdown.
  virtual void CancelWatches() {}
};

}  // namespace xpool::k8s
