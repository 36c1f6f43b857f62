#pragma once
// FakeApiServer: just enough of a kube-apiserver, over real HTTP, for the extender's and the device plugin's
// end-to-end tests:
//   GET   /api/v1/nodes, /api/v1/pods                 list (metadata.resourceVersion + items); pods also with
//                                                     fieldSelector=spec.nodeName=N
//   PATCH /api/v1/nodes/NAME                          JSON merge patch (the device plugin's annotation)
//   GET   ...?watch=1&resourceVersion=RV              watch: newline-delimited events after RV, chunked; the
//                                                     stream ends after timeoutSeconds or when the server goes down
//   GET   /api/v1/namespaces/NS/pods/NAME             one pod
//   PATCH /api/v1/namespaces/NS/pods/NAME             JSON merge patch (the extender only sets annotations)
//   POST  /api/v1/namespaces/NS/pods/NAME/binding     sets spec.nodeName (409 when already bound)
//   POST  /api/v1/namespaces/NS/pods/NAME/eviction    a policy/v1 Eviction: marks the pod for deletion
//                                                     (deletionTimestamp, deletionGracePeriodSeconds) and records it
//   POST  /api/v1/nodes, /api/v1/namespaces/NS/pods   create (201; 409 when it exists; 422 on a bad quantity);
//                                                     a pod is defaulted (uid, phase Pending, schedulerName,
//                                                     grace 30 s, priority from its priorityClassName) and sent
//                                                     through the mutating webhook when one is set (a denial is
//                                                     400 with its message, a patch is applied)
//   GET   /api/v1/nodes/NAME                          one node
// Like the real API server it stores and returns quantities in canonical form (k8s/canonical_objects.h:
// 8000 → "8k", 1024Mi → "1Gi"; numbers become strings), for objects created over HTTP and through AddNode/AddPod
// alike (a malformed quantity is refused over HTTP; AddPod keeps it, for tests of what the extender does then).
// Tests drive it directly (AddNode, AddPod, DeletePod, SetDown to play an unreachable server). One mutex guards
// the objects and the event log; thread-safe.
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace httplib {
class Server;
}

namespace xpool::k8s::testing {

class FakeApiServer {
 public:
  FakeApiServer();
  ~FakeApiServer();
  // Serves on 127.0.0.1, any free port. Returns the port (0 on failure).
  int Start();
  void Stop();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // The mutating admission webhook pods created over HTTP go through: AdmissionReview JSON in, out.
  void SetMutatingWebhook(std::function<std::string(const std::string&)> webhook);
  void AddPriorityClass(const std::string& name, int value);

  void AddNode(nlohmann::json node);
  void AddPod(nlohmann::json pod);
  void DeletePod(const std::string& ns, const std::string& name);
  // Replaces a pod's status.phase (e.g. "Succeeded") and emits MODIFIED.
  void SetPodPhase(const std::string& ns, const std::string& name, const std::string& phase);
  nlohmann::json Pod(const std::string& ns, const std::string& name) const;
  nlohmann::json Node(const std::string& name) const;
  // While down every request is answered 503 and open watches end.
  void SetDown(bool down);
  int bindings() const;
  // Evictions received: (namespace/name, grace period seconds), in order.
  std::vector<std::pair<std::string, int64_t>> evictions() const;
  int requests() const;

 private:
  struct Event {
    int64_t rv;
    bool node;  // else pod
    std::string type;
    nlohmann::json object;
  };
  void Emit(bool node, const std::string& type, nlohmann::json& object);  // stamps resourceVersion
  void Routes();

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, nlohmann::json> nodes_;  // name → object
  std::map<std::string, nlohmann::json> pods_;   // ns/name → object
  std::vector<Event> events_;
  std::function<std::string(const std::string&)> webhook_;  // guarded by mu_ (called without it)
  std::map<std::string, int> priority_classes_;
  int64_t rv_ = 100;
  bool down_ = false;
  bool stopping_ = false;
  int bindings_ = 0;
  std::vector<std::pair<std::string, int64_t>> evictions_;
  int requests_ = 0;
  int port_ = 0;
  std::unique_ptr<httplib::Server> server_;
  std::unique_ptr<std::thread> thread_;
};

}  // namespace xpool::k8s::testing
