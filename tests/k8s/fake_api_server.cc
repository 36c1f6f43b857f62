#include "fake_api_server.h"

#include <httplib.h>

#include <chrono>
#include <thread>

#include "k8s/canonical_objects.h"
#include "k8s/webhook.h"

namespace xpool::k8s::testing {

using nlohmann::json;

FakeApiServer::FakeApiServer() : server_(std::make_unique<httplib::Server>()) { Routes(); }

FakeApiServer::~FakeApiServer() { Stop(); }

int FakeApiServer::Start() {
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) return 0;
  thread_ = std::make_unique<std::thread>([this] { server_->listen_after_bind(); });
  for (int i = 0; i < 5000 && !server_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return port_;
}

void FakeApiServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (server_) server_->stop();
  if (thread_ && thread_->joinable()) thread_->join();
  thread_.reset();
}

void FakeApiServer::Emit(bool node, const std::string& type, json& object) {
  object["metadata"]["resourceVersion"] = std::to_string(++rv_);
  events_.push_back({rv_, node, type, object});
  changed_.notify_all();
}

void FakeApiServer::SetMutatingWebhook(std::function<std::string(const std::string&)> webhook) {
  std::lock_guard<std::mutex> lock(mu_);
  webhook_ = std::move(webhook);
}

void FakeApiServer::AddPriorityClass(const std::string& name, int value) {
  std::lock_guard<std::mutex> lock(mu_);
  priority_classes_[name] = value;
}

void FakeApiServer::AddNode(json node) {
  (void)CanonicalizeQuantities(&node);  // a malformed quantity is kept (see the header)
  std::lock_guard<std::mutex> lock(mu_);
  const std::string name = node["metadata"]["name"];
  const bool existed = nodes_.count(name) != 0;
  Emit(true, existed ? "MODIFIED" : "ADDED", node);
  nodes_[name] = node;
}

void FakeApiServer::AddPod(json pod) {
  (void)CanonicalizeQuantities(&pod);
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key =
      pod["metadata"].value("namespace", "default") + "/" + pod["metadata"]["name"].get<std::string>();
  Emit(false, "ADDED", pod);
  pods_[key] = pod;
}

void FakeApiServer::DeletePod(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(ns + "/" + name);
  if (it == pods_.end()) return;
  json pod = it->second;
  pods_.erase(it);
  Emit(false, "DELETED", pod);
}

void FakeApiServer::SetPodPhase(const std::string& ns, const std::string& name, const std::string& phase) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(ns + "/" + name);
  if (it == pods_.end()) return;
  it->second["status"]["phase"] = phase;
  Emit(false, "MODIFIED", it->second);
}

json FakeApiServer::Pod(const std::string& ns, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(ns + "/" + name);
  return it == pods_.end() ? json() : it->second;
}

json FakeApiServer::Node(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(name);
  return it == nodes_.end() ? json() : it->second;
}

void FakeApiServer::SetDown(bool down) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    down_ = down;
  }
  changed_.notify_all();
}

std::vector<std::pair<std::string, int64_t>> FakeApiServer::evictions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evictions_;
}

int FakeApiServer::bindings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bindings_;
}

int FakeApiServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

namespace {

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

json StatusBody(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
          {"code", code},     {"reason", reason},   {"message", message}};
}

}  // namespace

void FakeApiServer::Routes() {
  httplib::Server& s = *server_;
  // Every handler first counts the request and answers 503 while the server plays dead.
  auto down = [this](httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    ++requests_;
    if (!down_) return false;
    Reply(res, 503, StatusBody(503, "ServiceUnavailable", "the fake API server is down"));
    return true;
  };
  auto list_or_watch = [this, down](bool node_kind) {
    return [this, down, node_kind](const httplib::Request& req, httplib::Response& res) {
      if (down(res)) return;
      if (req.has_param("watch")) {
        const int64_t since = req.has_param("resourceVersion") && !req.get_param_value("resourceVersion").empty()
                                  ? std::stoll(req.get_param_value("resourceVersion"))
                                  : 0;
        const int timeout = req.has_param("timeoutSeconds") ? std::stoi(req.get_param_value("timeoutSeconds")) : 30;
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
        auto cursor = std::make_shared<int64_t>(since);
        res.set_chunked_content_provider("application/json",
                                         [this, node_kind, cursor, deadline](size_t, httplib::DataSink& sink) {
                                           std::unique_lock<std::mutex> lock(mu_);
                                           changed_.wait_for(lock, std::chrono::milliseconds(100));
                                           if (!sink.is_writable()) return false;  // the client went away
                                           if (down_ || stopping_ || std::chrono::steady_clock::now() > deadline) {
                                             sink.done();
                                             return true;
                                           }
                                           std::string out;
                                           for (const Event& e : events_) {
                                             if (e.rv <= *cursor || e.node != node_kind) continue;
                                             out += json{{"type", e.type}, {"object", e.object}}.dump() + "\n";
                                           }
                                           if (!events_.empty()) *cursor = std::max(*cursor, events_.back().rv);
                                           if (!out.empty() && !sink.write(out.data(), out.size())) return false;
                                           return true;
                                         });
        return;
      }
      std::lock_guard<std::mutex> lock(mu_);
      json items = json::array();
      if (node_kind) {
        for (const auto& [name, n] : nodes_) items.push_back(n);
      } else {
        // fieldSelector=spec.nodeName=N (the device plugin's query); other selectors are not served.
        const std::string selector = req.has_param("fieldSelector") ? req.get_param_value("fieldSelector") : "";
        const std::string prefix = "spec.nodeName=";
        if (!selector.empty() && selector.rfind(prefix, 0) != 0) {
          return Reply(res, 400, StatusBody(400, "BadRequest", "unsupported fieldSelector " + selector));
        }
        for (const auto& [key, p] : pods_) {
          const std::string node = p.contains("spec") ? p["spec"].value("nodeName", "") : "";
          if (selector.empty() || node == selector.substr(prefix.size())) items.push_back(p);
        }
      }
      Reply(res, 200,
            {{"kind", node_kind ? "NodeList" : "PodList"},
             {"apiVersion", "v1"},
             {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
             {"items", items}});
    };
  };
  s.Post("/api/v1/nodes", [this, down](const httplib::Request& req, httplib::Response& res) {
    if (down(res)) return;
    json node = json::parse(req.body, nullptr, false);
    if (node.is_discarded() || !node.is_object() || !node["metadata"].is_object() ||
        !node["metadata"]["name"].is_string()) {
      return Reply(res, 400, StatusBody(400, "BadRequest", "expected a v1.Node with metadata.name"));
    }
    const Status canonical = CanonicalizeQuantities(&node);
    const std::string name = node["metadata"]["name"];
    if (!canonical.ok()) {
      return Reply(res, 422, StatusBody(422, "Invalid", "Node \"" + name + "\" is invalid: " + canonical.message()));
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (nodes_.count(name) != 0) {
      return Reply(res, 409, StatusBody(409, "AlreadyExists", "nodes \"" + name + "\" already exists"));
    }
    node["metadata"]["uid"] = "node-uid-" + name;
    node["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
    Emit(true, "ADDED", node);
    nodes_[name] = node;
    Reply(res, 201, node);
  });
  s.Get(R"(/api/v1/nodes/([^/]+))", [this, down](const httplib::Request& req, httplib::Response& res) {
    if (down(res)) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = nodes_.find(req.matches[1].str());
    if (it == nodes_.end()) return Reply(res, 404, StatusBody(404, "NotFound", "nodes not found"));
    Reply(res, 200, it->second);
  });
  s.Post(R"(/api/v1/namespaces/([^/]+)/pods)", [this, down](const httplib::Request& req, httplib::Response& res) {
    if (down(res)) return;
    json pod = json::parse(req.body, nullptr, false);
    if (pod.is_discarded() || !pod.is_object() || !pod["metadata"].is_object() ||
        !pod["metadata"]["name"].is_string()) {
      return Reply(res, 400, StatusBody(400, "BadRequest", "expected a v1.Pod with metadata.name"));
    }
    const std::string ns = req.matches[1].str();
    const std::string name = pod["metadata"]["name"];
    const Status canonical = CanonicalizeQuantities(&pod);
    if (!canonical.ok()) {
      return Reply(res, 422, StatusBody(422, "Invalid", "Pod \"" + name + "\" is invalid: " + canonical.message()));
    }
    std::function<std::string(const std::string&)> webhook;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pods_.count(ns + "/" + name) != 0) {
        return Reply(res, 409, StatusBody(409, "AlreadyExists", "pods \"" + name + "\" already exists"));
      }
      // Defaulting, as the API server does before admission.
      pod["metadata"]["namespace"] = ns;
      if (!pod["metadata"].contains("uid")) pod["metadata"]["uid"] = "uid-" + name;
      pod["metadata"]["creationTimestamp"] = "2026-01-01T00:00:" + std::to_string(10 + rv_ % 50) + "Z";
      json& spec = pod["spec"];
      if (!spec.contains("schedulerName")) spec["schedulerName"] = "default-scheduler";
      if (!spec.contains("terminationGracePeriodSeconds")) spec["terminationGracePeriodSeconds"] = 30;
      if (spec.contains("priorityClassName")) {
        auto pc = priority_classes_.find(spec["priorityClassName"].get<std::string>());
        if (pc == priority_classes_.end()) {
          return Reply(res, 403,
                       StatusBody(403, "Forbidden",
                                  "no PriorityClass with name " + spec["priorityClassName"].get<std::string>()));
        }
        spec["priority"] = pc->second;
      }
      pod["status"] = {{"phase", "Pending"}};
      webhook = webhook_;
    }
    if (webhook) {  // called without the lock, as a real webhook is a network call
      json review = {{"apiVersion", "admission.k8s.io/v1"},
                     {"kind", "AdmissionReview"},
                     {"request",
                      {{"uid", "review-" + name},
                       {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                       {"operation", "CREATE"},
                       {"namespace", ns},
                       {"object", pod}}}};
      json answer = json::parse(webhook(review.dump()), nullptr, false);
      const json response = answer.is_object() ? answer.value("response", json::object()) : json::object();
      if (!response.value("allowed", false)) {
        const std::string message = response.contains("status") ? response["status"].value("message", "") : "";
        return Reply(res, 400,
                     StatusBody(400, "BadRequest", "admission webhook \"xpool\" denied the request: " + message));
      }
      if (response.contains("patch")) pod = pod.patch(json::parse(Base64Decode(response["patch"].get<std::string>())));
    }
    std::lock_guard<std::mutex> lock(mu_);
    Emit(false, "ADDED", pod);
    pods_[ns + "/" + name] = pod;
    Reply(res, 201, pod);
  });
  s.Get("/api/v1/nodes", list_or_watch(true));
  s.Get("/api/v1/pods", list_or_watch(false));
  s.Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))",
        [this, down](const httplib::Request& req, httplib::Response& res) {
          if (down(res)) return;
          std::lock_guard<std::mutex> lock(mu_);
          auto it = pods_.find(req.matches[1].str() + "/" + req.matches[2].str());
          if (it == pods_.end()) return Reply(res, 404, StatusBody(404, "NotFound", "pods not found"));
          Reply(res, 200, it->second);
        });
  s.Patch(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))",
          [this, down](const httplib::Request& req, httplib::Response& res) {
            if (down(res)) return;
            if (req.get_header_value("Content-Type") != "application/merge-patch+json") {
              return Reply(res, 415, StatusBody(415, "UnsupportedMediaType", "expected a merge patch"));
            }
            json patch = json::parse(req.body, nullptr, false);
            if (patch.is_discarded()) return Reply(res, 400, StatusBody(400, "BadRequest", "invalid JSON"));
            std::lock_guard<std::mutex> lock(mu_);
            auto it = pods_.find(req.matches[1].str() + "/" + req.matches[2].str());
            if (it == pods_.end()) return Reply(res, 404, StatusBody(404, "NotFound", "pods not found"));
            it->second.merge_patch(patch);
            Emit(false, "MODIFIED", it->second);
            Reply(res, 200, it->second);
          });
  s.Patch(R"(/api/v1/nodes/([^/]+))", [this, down](const httplib::Request& req, httplib::Response& res) {
    if (down(res)) return;
    if (req.get_header_value("Content-Type") != "application/merge-patch+json") {
      return Reply(res, 415, StatusBody(415, "UnsupportedMediaType", "expected a merge patch"));
    }
    json patch = json::parse(req.body, nullptr, false);
    if (patch.is_discarded()) return Reply(res, 400, StatusBody(400, "BadRequest", "invalid JSON"));
    std::lock_guard<std::mutex> lock(mu_);
    auto it = nodes_.find(req.matches[1].str());
    if (it == nodes_.end()) return Reply(res, 404, StatusBody(404, "NotFound", "nodes not found"));
    it->second.merge_patch(patch);
    Emit(true, "MODIFIED", it->second);
    Reply(res, 200, it->second);
  });
  s.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/eviction)",
         [this, down](const httplib::Request& req, httplib::Response& res) {
           if (down(res)) return;
           json eviction = json::parse(req.body, nullptr, false);
           if (eviction.is_discarded() || eviction.value("kind", "") != "Eviction" ||
               eviction.value("apiVersion", "") != "policy/v1") {
             return Reply(res, 400, StatusBody(400, "BadRequest", "expected a policy/v1 Eviction"));
           }
           std::lock_guard<std::mutex> lock(mu_);
           const std::string key = req.matches[1].str() + "/" + req.matches[2].str();
           auto it = pods_.find(key);
           if (it == pods_.end()) return Reply(res, 404, StatusBody(404, "NotFound", "pods not found"));
           int64_t grace = it->second["spec"].value("terminationGracePeriodSeconds", int64_t{30});
           const json& options = eviction.contains("deleteOptions") ? eviction["deleteOptions"] : json::object();
           if (options.contains("gracePeriodSeconds") && options["gracePeriodSeconds"].is_number_integer()) {
             grace = options["gracePeriodSeconds"].get<int64_t>();
           }
           // As the API server: the pod is marked for deletion (kubelet stops it, then it is deleted: the tests
           // play kubelet with DeletePod).
           it->second["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
           it->second["metadata"]["deletionGracePeriodSeconds"] = grace;
           evictions_.push_back({key, grace});
           Emit(false, "MODIFIED", it->second);
           Reply(res, 201, StatusBody(201, "", "created"));
         });
  s.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)",
         [this, down](const httplib::Request& req, httplib::Response& res) {
           if (down(res)) return;
           json binding = json::parse(req.body, nullptr, false);
           if (binding.is_discarded() || binding.value("kind", "") != "Binding" || !binding.contains("target")) {
             return Reply(res, 400, StatusBody(400, "BadRequest", "expected a v1.Binding"));
           }
           std::lock_guard<std::mutex> lock(mu_);
           auto it = pods_.find(req.matches[1].str() + "/" + req.matches[2].str());
           if (it == pods_.end()) return Reply(res, 404, StatusBody(404, "NotFound", "pods not found"));
           json& pod = it->second;
           const std::string uid = binding["metadata"].value("uid", "");
           if (!uid.empty() && uid != pod["metadata"].value("uid", "")) {
             return Reply(res, 409, StatusBody(409, "Conflict", "uid precondition failed"));
           }
           if (!pod["spec"].value("nodeName", "").empty()) {
             return Reply(res, 409, StatusBody(409, "Conflict", "pod is already assigned to a node"));
           }
           pod["spec"]["nodeName"] = binding["target"]["name"];
           ++bindings_;
           Emit(false, "MODIFIED", pod);
           Reply(res, 201, StatusBody(201, "", "created"));
         });
}

}  // namespace xpool::k8s::testing
