#pragma once
// FakeKubeApi: an in-memory KubeApi for unit tests — pods by "ns/name", the annotation patches and bindings it
// received, and hooks to make calls fail or block. Like the real API server it stores pods' quantities in
// canonical form (canonical_objects.h: "8000" comes back as "8k"), so tests read what production reads; a
// malformed quantity, which the real server refuses, is kept as given for tests of what the readers do then.
// Thread-safe (one mutex; hooks run without it held).
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "k8s/canonical_objects.h"
#include "k8s/kube_api.h"

namespace xpool::k8s {

class FakeKubeApi final : public KubeApi {
 public:
  struct Binding {
    std::string key, uid, node;
  };
  struct Eviction {
    std::string key;
    int64_t grace_seconds = 0;
  };

  void PutPod(PodInfo pod) {
    (void)CanonicalizeQuantities(&pod);  // a malformed quantity stays (see above)
    std::lock_guard<std::mutex> lock(mu_);
    pods_[pod.Key()] = std::move(pod);
  }
  std::optional<PodInfo> Pod(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(key);
    if (it == pods_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<Binding> bindings() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bindings_;
  }
  std::vector<Eviction> evictions() const {
    std::lock_guard<std::mutex> lock(mu_);
    return evictions_;
  }
  // Runs before CreateBinding does its work (may block or return an error to fail the call).
  std::function<Status(const std::string& node)> before_binding;
  std::function<Status()> before_patch;
  std::function<Status()> before_list;  // runs before ListPodsOnNode
  std::function<Status()> before_get;   // runs before GetPod
  std::function<Status()> before_evict;

  Result<ListResult> List(ResourceKind) override { return UnavailableError("FakeKubeApi has no list"); }
  Status Watch(ResourceKind, const std::string&, const std::function<void(const WatchEvent&)>&,
               const std::atomic<bool>&) override {
    return UnavailableError("FakeKubeApi has no watch");
  }
  Result<PodInfo> GetPod(const std::string& ns, const std::string& name) override {
    if (before_get) RETURN_IF_ERROR(before_get());
    std::optional<PodInfo> p = Pod(ns + "/" + name);
    if (!p) return NotFoundError("pod " + ns + "/" + name + " not found");
    return *p;
  }
  Status PatchPodAnnotations(const std::string& ns, const std::string& name,
                             const std::map<std::string, std::optional<std::string>>& annotations) override {
    if (before_patch) RETURN_IF_ERROR(before_patch());
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(ns + "/" + name);
    if (it == pods_.end()) return NotFoundError("pod " + ns + "/" + name + " not found");
    for (const auto& [k, v] : annotations) {
      if (v) {
        it->second.annotations[k] = *v;
      } else {
        it->second.annotations.erase(k);
      }
    }
    return Status::Ok();
  }
  Result<std::vector<PodInfo>> ListPodsOnNode(const std::string& node) override {
    if (before_list) RETURN_IF_ERROR(before_list());
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<PodInfo> out;
    for (const auto& [key, pod] : pods_) {
      if (pod.node_name == node) out.push_back(pod);
    }
    return out;
  }
  Status PatchNodeAnnotations(const std::string& node,
                              const std::map<std::string, std::optional<std::string>>& annotations) override {
    if (before_patch) RETURN_IF_ERROR(before_patch());
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, v] : annotations) {
      if (v) {
        node_annotations_[node][k] = *v;
      } else {
        node_annotations_[node].erase(k);
      }
    }
    return Status::Ok();
  }
  std::map<std::string, std::string> NodeAnnotations(const std::string& node) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = node_annotations_.find(node);
    return it == node_annotations_.end() ? std::map<std::string, std::string>{} : it->second;
  }
  // Marks the pod as being deleted (as the API server does for an eviction; the tests play kubelet).
  Status EvictPod(const std::string& ns, const std::string& name, int64_t grace_seconds) override {
    if (before_evict) RETURN_IF_ERROR(before_evict());
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(ns + "/" + name);
    if (it == pods_.end()) return NotFoundError("pod " + ns + "/" + name + " not found");
    it->second.deleting = true;
    evictions_.push_back({ns + "/" + name, grace_seconds});
    return Status::Ok();
  }
  Status CreateBinding(const std::string& ns, const std::string& name, const std::string& uid,
                       const std::string& node) override {
    if (before_binding) RETURN_IF_ERROR(before_binding(node));
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(ns + "/" + name);
    if (it == pods_.end()) return NotFoundError("pod " + ns + "/" + name + " not found");
    if (!it->second.node_name.empty()) return AlreadyExistsError("pod is already bound");
    it->second.node_name = node;
    bindings_.push_back({ns + "/" + name, uid, node});
    return Status::Ok();
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, PodInfo> pods_;
  std::vector<Binding> bindings_;
  std::vector<Eviction> evictions_;
  std::map<std::string, std::map<std::string, std::string>> node_annotations_;
};

}  // namespace xpool::k8s
