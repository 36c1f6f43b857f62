#include "k8s/http_kube_api.h"

#include <httplib.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "k8s/internal/kube_json.h"

namespace xpool::k8s {
namespace {

using internal::Json;

// Percent-encodes everything but unreserved characters (RFC 3986), for path segments and query values.
std::string Escape(const std::string& text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

const char* KindPath(ResourceKind kind) { return kind == ResourceKind::kNodes ? "/api/v1/nodes" : "/api/v1/pods"; }

std::string PodPath(const std::string& ns, const std::string& name) {
  return "/api/v1/namespaces/" + Escape(ns) + "/pods/" + Escape(name);
}

// Maps an HTTP status (and the metav1.Status body the API server sends with errors) to a Status.
Status HttpStatus(int code, const std::string& response_body, const std::string& what) {
  if (code >= 200 && code < 300) return Status::Ok();
  std::string message = what + ": HTTP " + std::to_string(code);
  Result<Json> body = internal::ParseJson(response_body, "response");
  if (body.ok()) {
    Result<std::string> m = internal::StringField(*body, "message", "");
    if (m.ok() && !m->empty()) message += ": " + *m;
  }
  if (code == 404) return NotFoundError(message);
  if (code == 409) return AlreadyExistsError(message);
  if (code == 410) return AbortedError(message);
  if (code == 401) return UnauthenticatedError(message);
  if (code == 403) return PermissionDeniedError(message);
  if (code >= 400 && code < 500) return InvalidArgumentError(message);
  return UnavailableError(message);
}

// Maps a transport failure or an HTTP status to a Status naming the call.
Status CallStatus(const httplib::Result& r, const std::string& what) {
  if (!r) return UnavailableError(what + ": " + httplib::to_string(r.error()));
  return HttpStatus(r->status, r->body, what);
}

class HttpKubeApi final : public KubeApi {
 public:
  explicit HttpKubeApi(KubeApiConfig config) : config_(std::move(config)) {}

  Result<ListResult> List(ResourceKind kind) override {
    auto client = NewClient(config_.timeout_seconds);
    httplib::Result r = client->Get(KindPath(kind));
    RETURN_IF_ERROR(CallStatus(r, std::string("list ") + KindPath(kind)));
    ASSIGN_OR_RETURN(Json body, internal::ParseJson(r->body, "list response"));
    ListResult out;
    const Json* meta = internal::Field(body, "metadata");
    if (meta != nullptr) {
      ASSIGN_OR_RETURN(out.resource_version, internal::StringField(*meta, "resourceVersion", ""));
    }
    const Json* items = internal::Field(body, "items");
    if (items != nullptr && items->is_array()) {
      for (const Json& item : *items) out.items.push_back(item.dump());
    }
    return out;
  }

  Status Watch(ResourceKind kind, const std::string& resource_version,
               const std::function<void(const WatchEvent&)>& on_event, const std::atomic<bool>& stop) override {
    auto client = NewClient(config_.watch_timeout_seconds + config_.timeout_seconds);
    {
      std::lock_guard<std::mutex> lock(mu_);
      watches_.insert(client.get());
    }
    if (stop.load()) {  // stopped before registration: CancelWatches may have run already
      std::lock_guard<std::mutex> lock(mu_);
      watches_.erase(client.get());
      return Status::Ok();
    }
    std::string buffer;
    Status stream_error;
    const std::string path = std::string(KindPath(kind)) + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=" +
                             std::to_string(config_.watch_timeout_seconds) +
                             "&resourceVersion=" + Escape(resource_version);
    int status = 0;
    httplib::Result r = client->Get(
        path,
        [&](const httplib::Response& response) {
          status = response.status;
          return true;
        },
        [&](const char* data, size_t length) {
          if (stop.load()) return false;
          if (status != 200) {  // an error body, read whole below
            buffer.append(data, length);
            return true;
          }
          buffer.append(data, length);
          size_t newline;
          while ((newline = buffer.find('\n')) != std::string::npos) {
            std::string line = buffer.substr(0, newline);
            buffer.erase(0, newline + 1);
            if (line.empty()) continue;
            Result<Json> event = internal::ParseJson(line, "watch event");
            if (!event.ok()) {
              stream_error = event.status();
              return false;
            }
            WatchEvent e;
            e.type = internal::StringField(*event, "type", "").value_or("");
            const Json* object = internal::Field(*event, "object");
            e.object_json = object != nullptr ? object->dump() : "{}";
            if (e.type == "ERROR") {
              // A metav1.Status: 410 Gone means the resource version is too old — relist.
              const Json* code = object != nullptr ? internal::Field(*object, "code") : nullptr;
              const bool gone = code != nullptr && code->is_number_integer() && code->get<int>() == 410;
              stream_error = gone ? AbortedError("watch expired (410 Gone): relist")
                                  : UnavailableError("watch error event: " + e.object_json);
              return false;
            }
            on_event(e);
          }
          return true;
        });
    {
      std::lock_guard<std::mutex> lock(mu_);
      watches_.erase(client.get());
    }
    if (!stream_error.ok()) return stream_error;
    if (stop.load()) return Status::Ok();
    if (!r) return UnavailableError(std::string("watch ") + KindPath(kind) + ": " + httplib::to_string(r.error()));
    if (status != 200) return HttpStatus(status, buffer, std::string("watch ") + KindPath(kind));
    return Status::Ok();  // the server ended the stream (timeoutSeconds): the caller re-opens it
  }

  Result<PodInfo> GetPod(const std::string& ns, const std::string& name) override {
    auto client = NewClient(config_.timeout_seconds);
    httplib::Result r = client->Get(PodPath(ns, name));
    RETURN_IF_ERROR(CallStatus(r, "get pod " + ns + "/" + name));
    return ParsePod(r->body);
  }

  Status PatchPodAnnotations(const std::string& ns, const std::string& name,
                             const std::map<std::string, std::optional<std::string>>& annotations) override {
    Json values = Json::object();
    for (const auto& [k, v] : annotations) values[k] = v ? Json(*v) : Json(nullptr);
    const Json patch = {{"metadata", {{"annotations", values}}}};
    auto client = NewClient(config_.timeout_seconds);
    httplib::Result r = client->Patch(PodPath(ns, name), patch.dump(), "application/merge-patch+json");
    return CallStatus(r, "patch pod " + ns + "/" + name);
  }

  Result<std::vector<PodInfo>> ListPodsOnNode(const std::string& node) override {
    auto client = NewClient(config_.timeout_seconds);
    httplib::Result r = client->Get("/api/v1/pods?fieldSelector=" + Escape("spec.nodeName=" + node));
    RETURN_IF_ERROR(CallStatus(r, "list pods on node " + node));
    ASSIGN_OR_RETURN(Json body, internal::ParseJson(r->body, "pod list response"));
    std::vector<PodInfo> out;
    const Json* items = internal::Field(body, "items");
    if (items != nullptr && items->is_array()) {
      for (const Json& item : *items) {
        Result<PodInfo> pod = ParsePod(item.dump());
        // The server filters; the check keeps a server that ignores fieldSelector (the tests' fake) correct.
        if (pod.ok() && pod->node_name == node) out.push_back(std::move(*pod));
      }
    }
    return out;
  }

  Status PatchNodeAnnotations(const std::string& node,
                              const std::map<std::string, std::optional<std::string>>& annotations) override {
    Json values = Json::object();
    for (const auto& [k, v] : annotations) values[k] = v ? Json(*v) : Json(nullptr);
    const Json patch = {{"metadata", {{"annotations", values}}}};
    auto client = NewClient(config_.timeout_seconds);
    httplib::Result r = client->Patch("/api/v1/nodes/" + Escape(node), patch.dump(), "application/merge-patch+json");
    return CallStatus(r, "patch node " + node);
  }

  Status CreateBinding(const std::string& ns, const std::string& name, const std::string& uid,
                       const std::string& node) override {
    Json metadata = {{"name", name}, {"namespace", ns}};
    if (!uid.empty()) metadata["uid"] = uid;
    const Json binding = {{"apiVersion", "v1"},
                          {"kind", "Binding"},
                          {"metadata", metadata},
                          {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
    auto client = NewClient(config_.timeout_seconds);
    httplib::Result r = client->Post(PodPath(ns, name) + "/binding", binding.dump(), "application/json");
    return CallStatus(r, "bind pod " + ns + "/" + name + " to " + node);
  }

  Status EvictPod(const std::string& ns, const std::string& name, int64_t grace_seconds) override {
    const Json eviction = {{"apiVersion", "policy/v1"},
                           {"kind", "Eviction"},
                           {"metadata", {{"name", name}, {"namespace", ns}}},
                           {"deleteOptions", {{"gracePeriodSeconds", grace_seconds}}}};
    auto client = NewClient(config_.timeout_seconds);
    httplib::Result r = client->Post(PodPath(ns, name) + "/eviction", eviction.dump(), "application/json");
    return CallStatus(r, "evict pod " + ns + "/" + name);
  }

  void CancelWatches() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (httplib::Client* c : watches_) c->stop();
  }

 private:
  std::unique_ptr<httplib::Client> NewClient(int64_t read_timeout_seconds) const {
    auto client = std::make_unique<httplib::Client>(config_.server);
    client->set_connection_timeout(static_cast<time_t>(config_.timeout_seconds), 0);
    client->set_read_timeout(static_cast<time_t>(read_timeout_seconds), 0);
    client->set_write_timeout(static_cast<time_t>(config_.timeout_seconds), 0);
    if (!config_.token.empty()) client->set_bearer_token_auth(config_.token);
    if (!config_.ca_file.empty()) client->set_ca_cert_path(config_.ca_file);
    client->enable_server_certificate_verification(!config_.insecure_skip_verify);
    client->set_keep_alive(false);
    return client;
  }

  const KubeApiConfig config_;
  std::mutex mu_;
  std::set<httplib::Client*> watches_;  // guarded by mu_
};

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return FailedPreconditionError("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<KubeApiConfig> InClusterConfig() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr) {
    return FailedPreconditionError(
        "not running in a Kubernetes pod (KUBERNETES_SERVICE_HOST is unset); "
        "give --api-server");
  }
  constexpr const char* kAccount = "/var/run/secrets/kubernetes.io/serviceaccount/";
  KubeApiConfig config;
  const std::string h(host);
  config.server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
  ASSIGN_OR_RETURN(std::string token, ReadFile(std::string(kAccount) + "token"));
  while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
  config.token = token;
  config.ca_file = std::string(kAccount) + "ca.crt";
  return config;
}

std::unique_ptr<KubeApi> MakeHttpKubeApi(KubeApiConfig config) {
  return std::make_unique<HttpKubeApi>(std::move(config));
}

}  // namespace xpool::k8s
