#include "agent/http_client.h"

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <utility>

namespace xpool::agent {
namespace {

using Json = nlohmann::json;

Status ErrorFromResponse(int http_status, const std::string& body, const std::string& what) {
  std::string message = body;
  try {
    Json j = Json::parse(body);
    if (j.contains("error") && j["error"].contains("message"))
      message = j["error"]["message"].get<std::string>();
  } catch (const Json::exception&) {
  }
  const std::string text = what + ": HTTP " + std::to_string(http_status) + ": " + message;
  switch (http_status) {
    case 400:
      return InvalidArgumentError(text);
    case 401:
      return UnauthenticatedError(what + ": the server rejected the node token (HTTP 401)");
    case 403:
      return PermissionDeniedError(text);
    case 404:
      return NotFoundError(text);
    case 409:
      return FailedPreconditionError(text);
    default:
      return http_status >= 500 ? UnavailableError(text) : InternalError(text);
  }
}

// Reads an optional field of type T; a present field of the wrong type is an error naming it.
template <typename T>
Status Get(const Json& j, const char* key, const std::string& where, T* out) {
  if (!j.contains(key) || j[key].is_null()) return Status::Ok();
  try {
    *out = j[key].get<T>();
  } catch (const Json::exception&) {
    return InvalidArgumentError("heartbeat reply: " + where + "." + key + " has the wrong type");
  }
  return Status::Ok();
}

Result<TaskAssignment> AssignmentFromJson(const Json& t, const std::string& where) {
  if (!t.is_object())
    return InvalidArgumentError("heartbeat reply: " + where + " is not an object");
  TaskAssignment a;
  std::string action = "run";
  RETURN_IF_ERROR(Get(t, "action", where, &action));
  if (action == "run") {
    a.action = TaskAssignment::Action::kRun;
  } else if (action == "stop") {
    a.action = TaskAssignment::Action::kStop;
  } else if (action == "suspend") {
    a.action = TaskAssignment::Action::kSuspend;
  } else {
    return InvalidArgumentError("heartbeat reply: " + where + ".action \"" + action +
                                "\" is not run/stop/suspend");
  }
  LaunchSpec& s = a.spec;
  RETURN_IF_ERROR(Get(t, "task_id", where, &s.task_id));
  RETURN_IF_ERROR(Get(t, "job_id", where, &s.job_id));
  RETURN_IF_ERROR(Get(t, "replica", where, &s.replica));
  RETURN_IF_ERROR(Get(t, "restart_count", where, &s.restart_count));
  RETURN_IF_ERROR(Get(t, "command", where, &s.argv));
  RETURN_IF_ERROR(Get(t, "workdir", where, &s.workdir));
  RETURN_IF_ERROR(Get(t, "env", where, &s.env));
  RETURN_IF_ERROR(Get(t, "cpu_milli", where, &s.cpu_milli));
  RETURN_IF_ERROR(Get(t, "memory_mib", where, &s.memory_mib));
  std::string vendor = "nvidia";
  RETURN_IF_ERROR(Get(t, "vendor", where, &vendor));
  auto v = ParseVendor(vendor);
  if (!v.ok())
    return InvalidArgumentError("heartbeat reply: " + where + ".vendor: " + v.status().message());
  s.vendor = *v;
  int64_t grace_s = 30;
  RETURN_IF_ERROR(Get(t, "grace_s", where, &grace_s));
  a.grace_micros = grace_s * kMicrosPerSecond;
  if (t.contains("devices")) {
    if (!t["devices"].is_array())
      return InvalidArgumentError("heartbeat reply: " + where + ".devices is not a list");
    for (size_t i = 0; i < t["devices"].size(); ++i) {
      const Json& d = t["devices"][i];
      const std::string dw = where + ".devices[" + std::to_string(i) + "]";
      if (!d.is_object())
        return InvalidArgumentError("heartbeat reply: " + dw + " is not an object");
      TaskDevice dev;
      int64_t compute_milli = 0;
      RETURN_IF_ERROR(Get(d, "index", dw, &dev.index));
      RETURN_IF_ERROR(Get(d, "memory_mib", dw, &dev.memory_mib));
      RETURN_IF_ERROR(Get(d, "compute_milli", dw, &compute_milli));
      if (compute_milli > 0 && compute_milli < kWholeDeviceMilli) {
        dev.core_percent = static_cast<int>((compute_milli + 9) / 10);
      }
      bool shared = compute_milli < kWholeDeviceMilli;
      RETURN_IF_ERROR(Get(d, "shared", dw, &shared));
      if (shared) s.shares_device = true;
      s.devices.push_back(dev);
    }
  }
  if (t.contains("distributed") && !t["distributed"].is_null()) {
    const Json& d = t["distributed"];
    const std::string dw = where + ".distributed";
    DistributedEnv dist;
    RETURN_IF_ERROR(Get(d, "master_addr", dw, &dist.master_addr));
    RETURN_IF_ERROR(Get(d, "master_port", dw, &dist.master_port));
    RETURN_IF_ERROR(Get(d, "world_size", dw, &dist.world_size));
    RETURN_IF_ERROR(Get(d, "rank", dw, &dist.rank));
    RETURN_IF_ERROR(Get(d, "local_rank", dw, &dist.local_rank));
    s.distributed = dist;
  }
  return a;
}

}  // namespace

std::string RegisterBody(const Node& node) {
  // Only the fields the server's node codec accepts today (docs/api.md); links and health follow in
  // heartbeats once the server takes them.
  Json j;
  j["name"] = node.name;
  j["cpu"] = std::to_string(node.cpu_milli) + "m";
  j["memory"] = std::to_string(node.memory_mib) + "Mi";
  j["simulated"] = node.simulated;
  if (!node.labels.empty()) j["labels"] = node.labels;
  j["devices"] = Json::array();
  for (const Device& d : node.devices) {
    j["devices"].push_back({{"model", d.model},
                            {"memory", std::to_string(d.memory_mib) + "Mi"},
                            {"uuid", d.uuid},
                            {"vendor", std::string(VendorName(d.vendor))},
                            {"numa", d.numa_node},
                            {"max_sharers", d.max_sharers}});
  }
  return j.dump();
}

std::string HeartbeatBody(const Node& node, const std::vector<TaskReport>& tasks) {
  Json j;
  j["devices"] = Json::array();
  for (const Device& d : node.devices)
    j["devices"].push_back({{"index", d.index}, {"healthy", d.healthy}});
  j["tasks"] = Json::array();
  for (const TaskReport& r : tasks) {
    const TaskStatus& s = r.status;
    j["tasks"].push_back({{"task_id", s.task_id},
                          {"job_id", r.job_id},
                          {"replica", r.replica},
                          {"restart_count", r.restart_count},
                          {"state", std::string(TaskStateName(s.state))},
                          {"exit_code", s.exit_code},
                          {"signal", s.signal},
                          {"error", s.error},
                          {"log_note", s.log_note},
                          {"pid", s.pid},
                          {"started_at", s.started_at},
                          {"ended_at", s.ended_at}});
  }
  return j.dump();
}

Result<HeartbeatReply> ParseHeartbeatReply(std::string_view body) {
  Json j;
  try {
    j = Json::parse(body);
  } catch (const Json::exception& e) {
    return InvalidArgumentError(std::string("heartbeat reply is not JSON: ") + e.what());
  }
  if (!j.is_object()) return InvalidArgumentError("heartbeat reply is not a JSON object");
  HeartbeatReply reply;
  int64_t interval_ms = 2000;
  RETURN_IF_ERROR(Get(j, "heartbeat_interval_ms", "reply", &interval_ms));
  if (interval_ms > 0) reply.interval_micros = interval_ms * 1000;
  if (!j.contains("tasks")) {
    reply.has_tasks = false;
    return reply;
  }
  if (!j["tasks"].is_array()) return InvalidArgumentError("heartbeat reply: tasks is not a list");
  for (size_t i = 0; i < j["tasks"].size(); ++i) {
    ASSIGN_OR_RETURN(TaskAssignment a,
                     AssignmentFromJson(j["tasks"][i], "tasks[" + std::to_string(i) + "]"));
    reply.tasks.push_back(std::move(a));
  }
  return reply;
}

HttpControlPlaneClient::HttpControlPlaneClient(HttpClientOptions options)
    : options_(std::move(options)) {}

Result<std::string> HttpControlPlaneClient::Post(const std::string& path, const std::string& body) {
  httplib::Client client(options_.server_url);
  if (!client.is_valid())
    return InvalidArgumentError("bad server URL \"" + options_.server_url + "\"");
  const auto seconds = options_.timeout_micros / kMicrosPerSecond;
  const auto micros = options_.timeout_micros % kMicrosPerSecond;
  client.set_connection_timeout(seconds, micros);
  client.set_read_timeout(seconds, micros);
  client.set_write_timeout(seconds, micros);
  httplib::Headers headers;
  if (!options_.token.empty()) headers.emplace("Authorization", "Bearer " + options_.token);
  auto res = client.Post(path.c_str(), headers, body, "application/json");
  if (!res) {
    return UnavailableError("cannot reach the server at " + options_.server_url + " (" +
                            httplib::to_string(res.error()) + ")");
  }
  if (res->status < 200 || res->status >= 300)
    return ErrorFromResponse(res->status, res->body, "POST " + path);
  return res->body;
}

Status HttpControlPlaneClient::Register(const Node& node) {
  return Post("/api/v1/nodes", RegisterBody(node)).status();
}

Result<HeartbeatReply> HttpControlPlaneClient::Heartbeat(const Node& node,
                                                         const std::vector<TaskReport>& tasks) {
  ASSIGN_OR_RETURN(std::string body,
                   Post("/api/v1/nodes/" + node.name + "/heartbeat", HeartbeatBody(node, tasks)));
  return ParseHeartbeatReply(body);
}

}  // namespace xpool::agent
