#include "k8s/webhook.h"

#include <cstdint>
#include <string>

#include "k8s/internal/kube_json.h"
#include "k8s/pod_demand.h"

namespace xpool::k8s {
namespace {

using internal::Field;
using internal::Json;

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The AdmissionReview answer as text. Messages quote the pod's own text, which is valid UTF-8 (it came as JSON);
// should one ever hold a broken sequence it is written as U+FFFD rather than fail the answer.
std::string Review(Json response) {
  return Json{{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"response", std::move(response)}}
      .dump(-1, ' ', false, Json::error_handler_t::replace);
}

HttpReply Allow(const std::string& uid, const Json& patch) {
  Json response = {{"uid", uid}, {"allowed", true}};
  if (!patch.empty()) {
    response["patchType"] = "JSONPatch";
    response["patch"] = Base64Encode(patch.dump());
  }
  return HttpReply{200, Review(std::move(response))};
}

HttpReply Deny(const std::string& uid, const std::string& message) {
  Json response = {{"uid", uid},
                   {"allowed", false},
                   {"status", {{"code", 400}, {"reason", "BadRequest"}, {"message", "xpool: " + message}}}};
  return HttpReply{200, Review(std::move(response))};
}

}  // namespace

std::string Base64Encode(std::string_view data) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    const uint32_t v = (uint8_t(data[i]) << 16) | (uint8_t(data[i + 1]) << 8) | uint8_t(data[i + 2]);
    out += kBase64[v >> 18];
    out += kBase64[(v >> 12) & 63];
    out += kBase64[(v >> 6) & 63];
    out += kBase64[v & 63];
  }
  if (i + 1 == data.size()) {
    const uint32_t v = uint8_t(data[i]) << 16;
    out += kBase64[v >> 18];
    out += kBase64[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == data.size()) {
    const uint32_t v = (uint8_t(data[i]) << 16) | (uint8_t(data[i + 1]) << 8);
    out += kBase64[v >> 18];
    out += kBase64[(v >> 12) & 63];
    out += kBase64[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::string Base64Decode(std::string_view data) {
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : data) {
    const char* p = std::char_traits<char>::find(kBase64, 64, c);
    if (p == nullptr) continue;  // '=' and anything else end or pad
    buffer = (buffer << 6) | static_cast<uint32_t>(p - kBase64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xff);
    }
  }
  return out;
}

HttpReply HandleAdmissionReview(std::string_view body, const WebhookOptions& options) {
  Result<Json> review = internal::ParseJson(body, "AdmissionReview");
  const Json* request = review.ok() ? Field(*review, "request") : nullptr;
  if (request == nullptr || !request->is_object()) {
    return HttpReply{400, "xpool: expected an AdmissionReview (admission.k8s.io/v1) with a request\n",
                     "text/plain; charset=utf-8"};
  }
  const std::string uid = internal::StringField(*request, "uid", "request").value_or("");
  if (uid.empty()) return Deny(uid, "the AdmissionReview request has no uid");
  const Json* kind = Field(*request, "kind");
  const std::string kind_name = kind != nullptr ? internal::StringField(*kind, "kind", "").value_or("") : "";
  if (kind_name != "Pod") return Allow(uid, Json::array());  // registered for pods; anything else is not ours
  const std::string operation = internal::StringField(*request, "operation", "").value_or("");
  if (operation == "DELETE" || operation == "CONNECT") return Allow(uid, Json::array());
  const Json* object = Field(*request, "object");
  if (object == nullptr) return Deny(uid, "the AdmissionReview request has no object");
  Result<PodInfo> pod = internal::PodFromJson(*object);
  if (!pod.ok()) return Deny(uid, "cannot read the pod: " + pod.status().message());
  if (!RequestsManagedResources(*pod)) return Allow(uid, Json::array());
  Result<PodDemand> demand = PodToDemand(*pod);
  if (!demand.ok()) return Deny(uid, demand.status().message());
  if (!demand->managed()) return Allow(uid, Json::array());     // explicit zero counts
  if (operation == "UPDATE") return Allow(uid, Json::array());  // the spec is immutable once created
  if (!pod->node_name.empty()) {
    return Deny(uid, "spec.nodeName is set to " + pod->node_name +
                         ": pods that use xpool-managed devices must be placed by " + options.scheduler_name);
  }
  if (pod->scheduler_name == options.scheduler_name) return Allow(uid, Json::array());
  if (!pod->scheduler_name.empty() && pod->scheduler_name != "default-scheduler") {
    return Deny(uid, "the pod asks for scheduler \"" + pod->scheduler_name +
                         "\" but uses xpool-managed devices, which only " + options.scheduler_name + " can place");
  }
  Json patch = Json::array({{{"op", "add"}, {"path", "/spec/schedulerName"}, {"value", options.scheduler_name}}});
  return Allow(uid, patch);
}

}  // namespace xpool::k8s
