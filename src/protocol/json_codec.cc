#include "protocol/json_codec.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "common/nesting.h"
#include "model/job_spec.h"

namespace xpool::protocol {
namespace {

using Json = nlohmann::json;

// Reads an optional field of type T; a present field of the wrong type is an error naming it.
template <typename T>
Status Get(const Json& j, const char* key, const std::string& what, const std::string& where, T* out) {
  if (!j.contains(key) || j[key].is_null()) return Status::Ok();
  try {
    *out = j[key].get<T>();
  } catch (const Json::exception&) {
    return InvalidArgumentError(what + ": " + where + "." + key + " has the wrong type");
  }
  return Status::Ok();
}

// `body` as a JSON object; `what` ("heartbeat body", "heartbeat reply") names it in the error.
Result<Json> ParseObject(std::string_view body, const std::string& what) {
  RETURN_IF_ERROR(CheckNesting(body, NestingSyntax::kJson, what));
  Json j;
  try {
    j = Json::parse(body);
  } catch (const Json::exception& e) {
    return InvalidArgumentError(what + " is not JSON: " + e.what());
  }
  if (!j.is_object()) return InvalidArgumentError(what + " is not a JSON object");
  return j;
}

Status ReplyField(const Json& j, const char* key, const std::string& where, auto* out) {
  return Get(j, key, "heartbeat reply", where, out);
}

Status DevicesFromJson(const Json& t, const std::string& where, LaunchSpec* s) {
  if (!t.contains("devices")) return Status::Ok();
  if (!t["devices"].is_array()) return InvalidArgumentError("heartbeat reply: " + where + ".devices is not a list");
  for (size_t i = 0; i < t["devices"].size(); ++i) {
    const Json& d = t["devices"][i];
    const std::string dw = where + ".devices[" + std::to_string(i) + "]";
    if (!d.is_object()) return InvalidArgumentError("heartbeat reply: " + dw + " is not an object");
    TaskDevice dev;
    int64_t compute_milli = 0;
    RETURN_IF_ERROR(ReplyField(d, "index", dw, &dev.index));
    RETURN_IF_ERROR(ReplyField(d, "memory_mib", dw, &dev.memory_mib));
    RETURN_IF_ERROR(ReplyField(d, "compute_milli", dw, &compute_milli));
    if (compute_milli > 0 && compute_milli < kWholeDeviceMilli) {
      dev.core_percent = static_cast<int>((compute_milli + 9) / 10);
    }
    bool shared = compute_milli < kWholeDeviceMilli;
    RETURN_IF_ERROR(ReplyField(d, "shared", dw, &shared));
    if (shared) s->shares_device = true;
    s->devices.push_back(dev);
  }
  return Status::Ok();
}

Result<TaskAssignment> AssignmentFromJson(const Json& t, const std::string& where) {
  if (!t.is_object()) return InvalidArgumentError("heartbeat reply: " + where + " is not an object");
  TaskAssignment a;
  std::string action = "run";
  RETURN_IF_ERROR(ReplyField(t, "action", where, &action));
  if (action == "run") {
    a.action = TaskAssignment::Action::kRun;
  } else if (action == "stop") {
    a.action = TaskAssignment::Action::kStop;
  } else if (action == "suspend") {
    a.action = TaskAssignment::Action::kSuspend;
  } else {
    return InvalidArgumentError("heartbeat reply: " + where + ".action \"" + action + "\" is not run/stop/suspend");
  }
  LaunchSpec& s = a.spec;
  RETURN_IF_ERROR(ReplyField(t, "task_id", where, &s.task_id));
  RETURN_IF_ERROR(ReplyField(t, "job_id", where, &s.job_id));
  RETURN_IF_ERROR(ReplyField(t, "tenant_id", where, &s.tenant_id));
  RETURN_IF_ERROR(ReplyField(t, "replica", where, &s.replica));
  RETURN_IF_ERROR(ReplyField(t, "restart_count", where, &s.restart_count));
  RETURN_IF_ERROR(ReplyField(t, "command", where, &s.argv));
  RETURN_IF_ERROR(ReplyField(t, "workdir", where, &s.workdir));
  RETURN_IF_ERROR(ReplyField(t, "env", where, &s.env));
  RETURN_IF_ERROR(ReplyField(t, "cpu_milli", where, &s.cpu_milli));
  RETURN_IF_ERROR(ReplyField(t, "memory_mib", where, &s.memory_mib));
  std::string vendor = "nvidia";
  RETURN_IF_ERROR(ReplyField(t, "vendor", where, &vendor));
  auto v = ParseVendor(vendor);
  if (!v.ok()) return InvalidArgumentError("heartbeat reply: " + where + ".vendor: " + v.status().message());
  s.vendor = *v;
  int64_t grace_s = 30;
  RETURN_IF_ERROR(ReplyField(t, "grace_s", where, &grace_s));
  int64_t grace_ms = grace_s * 1000;
  RETURN_IF_ERROR(ReplyField(t, "grace_ms", where, &grace_ms));  // finer, wins when present
  a.grace_micros = grace_ms * 1000;
  RETURN_IF_ERROR(ReplyField(t, "suspend_signal", where, &s.suspend_signal));  // absent: the agent's default
  if (!s.suspend_signal.empty() && !CheckpointSignalNumber(s.suspend_signal).ok()) {
    return InvalidArgumentError("heartbeat reply: " + where + ".suspend_signal \"" + s.suspend_signal +
                                "\" is not SIGUSR1, SIGUSR2, SIGINT, SIGTERM or SIGHUP");
  }
  RETURN_IF_ERROR(DevicesFromJson(t, where, &s));
  RETURN_IF_ERROR(ReplyField(t, "image", where, &s.image));  // absent: on the host
  if (t.contains("distributed") && !t["distributed"].is_null()) {
    const Json& d = t["distributed"];
    const std::string dw = where + ".distributed";
    DistributedEnv dist;
    RETURN_IF_ERROR(ReplyField(d, "master_addr", dw, &dist.master_addr));
    RETURN_IF_ERROR(ReplyField(d, "master_port", dw, &dist.master_port));
    RETURN_IF_ERROR(ReplyField(d, "world_size", dw, &dist.world_size));
    RETURN_IF_ERROR(ReplyField(d, "rank", dw, &dist.rank));
    RETURN_IF_ERROR(ReplyField(d, "local_rank", dw, &dist.local_rank));
    RETURN_IF_ERROR(ReplyField(d, "local_world_size", dw, &dist.local_world_size));
    RETURN_IF_ERROR(ReplyField(d, "node_rank", dw, &dist.node_rank));
    s.distributed = dist;
  }
  return a;
}

const char* ActionName(TaskAssignment::Action a) {
  switch (a) {
    case TaskAssignment::Action::kRun:
      return "run";
    case TaskAssignment::Action::kStop:
      return "stop";
    case TaskAssignment::Action::kSuspend:
      return "suspend";
  }
  return "run";
}

Json AssignmentToJson(const TaskAssignment& a) {
  const LaunchSpec& s = a.spec;
  Json t = {{"task_id", s.task_id},
            {"job_id", s.job_id},
            {"tenant_id", s.tenant_id},
            {"replica", s.replica},
            {"restart_count", s.restart_count},
            {"action", ActionName(a.action)},
            {"grace_s", a.grace_micros / kMicrosPerSecond},
            {"grace_ms", a.grace_micros / 1000},
            {"suspend_signal", s.suspend_signal},
            {"image", s.image},
            {"command", s.argv},
            {"workdir", s.workdir},
            {"env", s.env},
            {"vendor", std::string(VendorName(s.vendor))},
            {"cpu_milli", s.cpu_milli},
            {"memory_mib", s.memory_mib}};
  t["devices"] = Json::array();
  for (const TaskDevice& d : s.devices) {
    const int64_t compute = d.core_percent > 0 && d.core_percent < 100 ? d.core_percent * 10 : kWholeDeviceMilli;
    t["devices"].push_back(
        {{"index", d.index}, {"memory_mib", d.memory_mib}, {"compute_milli", compute}, {"shared", s.shares_device}});
  }
  if (s.distributed) {
    const DistributedEnv& d = *s.distributed;
    t["distributed"] = {{"master_addr", d.master_addr}, {"master_port", d.master_port},
                        {"world_size", d.world_size},   {"rank", d.rank},
                        {"local_rank", d.local_rank},   {"local_world_size", d.local_world_size},
                        {"node_rank", d.node_rank}};
  }
  return t;
}

Result<TaskState> ParseTaskState(const std::string& text, const std::string& where) {
  for (TaskState s :
       {TaskState::kRunning, TaskState::kSucceeded, TaskState::kFailed, TaskState::kStopped, TaskState::kSuspended}) {
    if (TaskStateName(s) == text) return s;
  }
  return InvalidArgumentError("heartbeat: " + where + ".state \"" + text +
                              "\" is not running/succeeded/failed/stopped/suspended");
}

Result<TaskReport> ReportFromJson(const Json& t, const std::string& where) {
  if (!t.is_object()) return InvalidArgumentError("heartbeat: " + where + " is not an object");
  auto field = [&](const char* key, auto* out) { return Get(t, key, "heartbeat", where, out); };
  TaskReport r;
  TaskStatus& s = r.status;
  RETURN_IF_ERROR(field("task_id", &s.task_id));
  if (s.task_id.empty()) return InvalidArgumentError("heartbeat: " + where + ".task_id is required");
  RETURN_IF_ERROR(field("job_id", &r.job_id));
  RETURN_IF_ERROR(field("replica", &r.replica));
  RETURN_IF_ERROR(field("restart_count", &r.restart_count));
  std::string state = "running";
  RETURN_IF_ERROR(field("state", &state));
  ASSIGN_OR_RETURN(s.state, ParseTaskState(state, where));
  RETURN_IF_ERROR(field("exit_code", &s.exit_code));
  RETURN_IF_ERROR(field("signal", &s.signal));
  RETURN_IF_ERROR(field("error", &s.error));
  RETURN_IF_ERROR(field("log_note", &s.log_note));
  RETURN_IF_ERROR(field("pid", &s.pid));
  RETURN_IF_ERROR(field("started_at", &s.started_at));
  RETURN_IF_ERROR(field("ended_at", &s.ended_at));
  RETURN_IF_ERROR(field("fenced", &s.fenced));
  if (t.contains("log") && t["log"].is_object()) {
    const Json& l = t["log"];
    RETURN_IF_ERROR(Get(l, "offset", "heartbeat", where + ".log", &r.log_offset));
    RETURN_IF_ERROR(Get(l, "data", "heartbeat", where + ".log", &r.log_data));
    if (r.log_offset < 0) return InvalidArgumentError("heartbeat: " + where + ".log.offset is negative");
  }
  if (t.contains("log_end")) {
    RETURN_IF_ERROR(Get(t, "log_end", "heartbeat", where, &r.log_end));
    if (r.log_end < 0) return InvalidArgumentError("heartbeat: " + where + ".log_end is negative");
  }
  if (t.contains("used_memory_mib")) {
    RETURN_IF_ERROR(Get(t, "used_memory_mib", "heartbeat", where, &r.used_memory_mib));
    if (r.used_memory_mib < 0) return InvalidArgumentError("heartbeat: " + where + ".used_memory_mib is negative");
  }
  return r;
}

// A device entry's measured use; `sample` keeps -1 for what the entry does not carry.
Status DeviceUsageFromJson(const Json& d, const std::string& where, DeviceUsageSample* sample) {
  for (const char* key : {"used_memory_mib", "sm_permille"}) {  // quantities are integers (MiB, permille)
    if (d.contains(key) && !d[key].is_number_integer()) {
      return InvalidArgumentError("heartbeat: " + where + "." + key + " is not an integer");
    }
  }
  if (d.contains("used_memory_mib")) {
    RETURN_IF_ERROR(Get(d, "used_memory_mib", "heartbeat", where, &sample->used_memory_mib));
    if (sample->used_memory_mib < 0)
      return InvalidArgumentError("heartbeat: " + where + ".used_memory_mib is negative");
  }
  if (d.contains("sm_permille")) {
    RETURN_IF_ERROR(Get(d, "sm_permille", "heartbeat", where, &sample->sm_permille));
    if (sample->sm_permille < 0 || sample->sm_permille > 1000) {
      return InvalidArgumentError("heartbeat: " + where + ".sm_permille is not in [0, 1000]");
    }
  }
  return Status::Ok();
}

// Length of the UTF-8 sequence starting with `lead`, 0 when `lead` cannot start one.
size_t SequenceLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

}  // namespace

std::string SanitizeUtf8(std::string_view data, bool hold_incomplete_tail, size_t* consumed) {
  std::string out(data);
  size_t i = 0;
  while (i < out.size()) {
    const size_t n = SequenceLength(static_cast<unsigned char>(out[i]));
    if (n == 1) {
      ++i;
      continue;
    }
    size_t ok = n == 0 ? 0 : 1;
    while (ok > 0 && ok < n && i + ok < out.size() && (static_cast<unsigned char>(out[i + ok]) & 0xC0) == 0x80) ++ok;
    if (ok == n && n > 0) {
      // Reject overlong 3/4-byte forms and surrogates, as JSON encoders do.
      const auto b0 = static_cast<unsigned char>(out[i]), b1 = static_cast<unsigned char>(out[i + 1]);
      const bool bad = (b0 == 0xE0 && b1 < 0xA0) || (b0 == 0xED && b1 > 0x9F) || (b0 == 0xF0 && b1 < 0x90) ||
                       (b0 == 0xF4 && b1 > 0x8F);
      if (!bad) {
        i += n;
        continue;
      }
      ok = 0;
    }
    if (n > 0 && ok > 0 && i + ok == out.size() && hold_incomplete_tail) {
      out.resize(i);  // an incomplete character at the end: send it with the next read
      break;
    }
    out[i] = '?';
    ++i;
  }
  if (consumed) *consumed = out.size();
  return out;
}

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
                            {"cores", d.compute_milli},
                            {"mode", std::string(DeviceModeName(d.mode))},
                            {"max_sharers", d.max_sharers}});
  }
  return j.dump();
}

std::string HeartbeatBody(const Node& node, const std::vector<TaskReport>& tasks,
                          const std::vector<DeviceUsageSample>& device_usage) {
  Json j;
  j["devices"] = Json::array();
  for (const Device& d : node.devices) {
    Json entry = {{"index", d.index}, {"healthy", d.healthy}};
    for (const DeviceUsageSample& u : device_usage) {
      if (u.index != d.index) continue;
      if (u.used_memory_mib >= 0) entry["used_memory_mib"] = u.used_memory_mib;
      if (u.sm_permille >= 0) entry["sm_permille"] = u.sm_permille;
    }
    j["devices"].push_back(std::move(entry));
  }
  j["tasks"] = Json::array();
  for (const TaskReport& r : tasks) {
    const TaskStatus& s = r.status;
    Json t = {{"task_id", s.task_id},
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
              {"ended_at", s.ended_at}};
    if (s.fenced) t["fenced"] = true;
    if (!r.log_data.empty()) t["log"] = {{"offset", r.log_offset}, {"data", r.log_data}};
    if (r.log_end >= 0) t["log_end"] = r.log_end;
    if (r.used_memory_mib >= 0) t["used_memory_mib"] = r.used_memory_mib;
    j["tasks"].push_back(std::move(t));
  }
  // Task output is not always UTF-8: replace what is not rather than fail the heartbeat.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<HeartbeatRequest> ParseHeartbeatBody(std::string_view body) {
  HeartbeatRequest req;
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return req;
  ASSIGN_OR_RETURN(Json j, ParseObject(body, "heartbeat body"));
  if (j.contains("devices")) {
    if (!j["devices"].is_array()) return InvalidArgumentError("heartbeat: devices is not a list");
    for (size_t i = 0; i < j["devices"].size(); ++i) {
      const Json& d = j["devices"][i];
      const std::string where = "devices[" + std::to_string(i) + "]";
      if (!d.is_object()) return InvalidArgumentError("heartbeat: " + where + " is not an object");
      int index = static_cast<int>(i);
      bool healthy = true;
      RETURN_IF_ERROR(Get(d, "index", "heartbeat", where, &index));
      RETURN_IF_ERROR(Get(d, "healthy", "heartbeat", where, &healthy));
      req.device_health.emplace_back(index, healthy);
      DeviceUsageSample sample;
      sample.index = index;
      RETURN_IF_ERROR(DeviceUsageFromJson(d, where, &sample));
      if (sample.used_memory_mib >= 0 || sample.sm_permille >= 0) req.device_usage.push_back(sample);
    }
  }
  if (!j.contains("tasks")) return req;
  if (!j["tasks"].is_array()) return InvalidArgumentError("heartbeat: tasks is not a list");
  req.has_tasks = true;
  for (size_t i = 0; i < j["tasks"].size(); ++i) {
    ASSIGN_OR_RETURN(TaskReport r, ReportFromJson(j["tasks"][i], "tasks[" + std::to_string(i) + "]"));
    req.tasks.push_back(std::move(r));
  }
  return req;
}

std::string HeartbeatReplyBody(const HeartbeatReply& reply) {
  Json j = {{"heartbeat_interval_ms", reply.interval_micros / 1000}};
  if (reply.node_timeout_micros > 0) j["node_timeout_ms"] = reply.node_timeout_micros / 1000;
  if (!reply.mig_geometry.empty()) j["mig_geometry"] = reply.mig_geometry;
  if (reply.has_tasks) {
    j["tasks"] = Json::array();
    for (const TaskAssignment& a : reply.tasks) j["tasks"].push_back(AssignmentToJson(a));
  }
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<HeartbeatReply> ParseHeartbeatReply(std::string_view body) {
  ASSIGN_OR_RETURN(Json j, ParseObject(body, "heartbeat reply"));
  HeartbeatReply reply;
  int64_t interval_ms = 2000;
  RETURN_IF_ERROR(ReplyField(j, "heartbeat_interval_ms", "reply", &interval_ms));
  if (interval_ms > 0) reply.interval_micros = interval_ms * 1000;
  int64_t node_timeout_ms = 0;
  RETURN_IF_ERROR(ReplyField(j, "node_timeout_ms", "reply", &node_timeout_ms));
  if (node_timeout_ms > 0) reply.node_timeout_micros = node_timeout_ms * 1000;
  RETURN_IF_ERROR(ReplyField(j, "mig_geometry", "reply", &reply.mig_geometry));
  if (!j.contains("tasks")) {
    reply.has_tasks = false;
    return reply;
  }
  if (!j["tasks"].is_array()) return InvalidArgumentError("heartbeat reply: tasks is not a list");
  for (size_t i = 0; i < j["tasks"].size(); ++i) {
    ASSIGN_OR_RETURN(TaskAssignment a, AssignmentFromJson(j["tasks"][i], "tasks[" + std::to_string(i) + "]"));
    reply.tasks.push_back(std::move(a));
  }
  return reply;
}

}  // namespace xpool::protocol
