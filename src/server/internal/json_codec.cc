#include "server/internal/json_codec.h"

#include <charconv>
#include <cstdio>
#include <ctime>

#include "common/nesting.h"
#include "common/units.h"
#include "model/job_state.h"

namespace xpool::server::internal {
namespace {

Status TypeError(const std::string& path, const char* want) { return InvalidArgumentError(path + " must be " + want); }

Result<std::string> GetString(const Json& j, const std::string& path) {
  if (!j.is_string()) return TypeError(path, "a string");
  return j.get<std::string>();
}

Result<int64_t> GetInt(const Json& j, const std::string& path, int64_t lo, int64_t hi) {
  if (!j.is_number_integer()) return TypeError(path, "an integer");
  int64_t v = j.get<int64_t>();
  if (v < lo || v > hi)
    return InvalidArgumentError(path + " must be " + std::to_string(lo) + ".." + std::to_string(hi));
  return v;
}

Result<bool> GetBool(const Json& j, const std::string& path) {
  if (!j.is_boolean()) return TypeError(path, "true or false");
  return j.get<bool>();
}

// A string read by `parse` (ParseVendor, ParseDeviceMode, ...); its error is prefixed with the path.
template <typename T>
Result<T> GetParsed(const Json& j, const std::string& path, Result<T> (*parse)(std::string_view)) {
  ASSIGN_OR_RETURN(std::string text, GetString(j, path));
  Result<T> v = parse(text);
  if (!v.ok()) return InvalidArgumentError(path + ": " + v.status().message());
  return v;
}

// "8Gi", "512Mi" or an integer of MiB.
Result<int64_t> GetMemory(const Json& j, const std::string& path) {
  if (j.is_number_integer()) return GetInt(j, path, 0, int64_t{1} << 40);
  if (!j.is_string()) return TypeError(path, "a memory size such as \"80Gi\" or an integer of MiB");
  auto mib = ParseMemoryMiB(j.get<std::string>());
  if (!mib.ok()) return InvalidArgumentError(path + ": " + mib.status().message());
  return *mib;
}

// "500m", "2", 2 or 1.5 cores → millicores.
Result<int64_t> GetCpu(const Json& j, const std::string& path) {
  std::string text;
  if (j.is_number_integer())
    text = std::to_string(j.get<int64_t>());
  else if (j.is_number_float())
    text = j.dump();
  else if (j.is_string())
    text = j.get<std::string>();
  else
    return TypeError(path, "a CPU amount such as \"500m\" or 2");
  auto milli = ParseCpuMilli(text);
  if (!milli.ok()) return InvalidArgumentError(path + ": " + milli.status().message());
  return *milli;
}

Result<Device> DeviceFromJson(const Json& j, const std::string& path) {
  if (!j.is_object()) return TypeError(path, "an object");
  RETURN_IF_ERROR(CheckKeys(j, path, {"model", "memory", "uuid", "vendor", "cores", "numa", "max_sharers", "mode"}));
  Device d;
  if (!j.contains("model")) return InvalidArgumentError(path + ".model is required");
  ASSIGN_OR_RETURN(d.model, GetString(j["model"], path + ".model"));
  if (!j.contains("memory")) return InvalidArgumentError(path + ".memory is required");
  ASSIGN_OR_RETURN(d.memory_mib, GetMemory(j["memory"], path + ".memory"));
  if (j.contains("uuid")) {
    ASSIGN_OR_RETURN(d.uuid, GetString(j["uuid"], path + ".uuid"));
  }
  if (j.contains("vendor")) {
    ASSIGN_OR_RETURN(d.vendor, GetParsed(j["vendor"], path + ".vendor", &ParseVendor));
  }
  d.max_sharers = ProfileFor(d.vendor).default_max_sharers;
  if (j.contains("cores")) {
    // 0 only for a free MIG slot (mode mig-slot): ValidateNode refuses it elsewhere.
    ASSIGN_OR_RETURN(d.compute_milli, GetInt(j["cores"], path + ".cores", 0, 1000));
  }
  if (j.contains("numa")) {
    ASSIGN_OR_RETURN(int64_t numa, GetInt(j["numa"], path + ".numa", 0, 63));
    d.numa_node = static_cast<int>(numa);
  }
  if (j.contains("max_sharers")) {
    ASSIGN_OR_RETURN(int64_t s, GetInt(j["max_sharers"], path + ".max_sharers", 1, 1024));
    d.max_sharers = static_cast<int>(s);
  }
  if (j.contains("mode")) {
    ASSIGN_OR_RETURN(d.mode, GetParsed(j["mode"], path + ".mode", &ParseDeviceMode));
  }
  return d;
}

// Scanners over text already known to be JSON (Json::accept): they find where values end without reading them.
size_t SkipSpace(std::string_view t, size_t i) {
  while (i < t.size() && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) ++i;
  return i;
}

// `i` is at a string's opening quote; returns the index past its closing quote.
size_t SkipString(std::string_view t, size_t i) {
  for (++i; i < t.size() && t[i] != '"'; ++i) {
    if (t[i] == '\\') ++i;
  }
  return i + 1;
}

// `i` is at a value's first character; returns the index past its last.
size_t SkipValue(std::string_view t, size_t i) {
  if (t[i] == '"') return SkipString(t, i);
  if (t[i] != '{' && t[i] != '[') {
    while (i < t.size() && std::string_view(",]} \t\r\n").find(t[i]) == std::string_view::npos) ++i;
    return i;
  }
  int depth = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (c == '"') {
      i = SkipString(t, i);
      continue;
    }
    depth += (c == '{' || c == '[') ? 1 : (c == '}' || c == ']') ? -1 : 0;
    ++i;
    if (depth == 0) break;
  }
  return i;
}

}  // namespace

Result<Json> ParseJsonObject(std::string_view body) {
  RETURN_IF_ERROR(CheckNesting(body, NestingSyntax::kJson, "body"));
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError("body: malformed JSON");
  if (!j.is_object()) return InvalidArgumentError("body must be a JSON object");
  return j;
}

Result<std::vector<std::string_view>> JsonListItems(std::string_view body, std::string_view key) {
  RETURN_IF_ERROR(CheckNesting(body, NestingSyntax::kJson, "body"));
  if (!Json::accept(body)) return InvalidArgumentError("body: malformed JSON");
  size_t i = SkipSpace(body, 0);
  if (body[i] != '{') return InvalidArgumentError("body must be a JSON object");
  std::string_view list;  // the last `key` field's value
  for (i = SkipSpace(body, i + 1); body[i] != '}'; i = SkipSpace(body, i + 1)) {
    const size_t key_end = SkipString(body, i);
    std::string name(body.substr(i + 1, key_end - i - 2));
    if (name.find('\\') != std::string::npos) name = Json::parse(body.substr(i, key_end - i)).get<std::string>();
    const size_t value = SkipSpace(body, SkipSpace(body, key_end) + 1);  // past the ':'
    i = SkipValue(body, value);
    if (name != key) return InvalidArgumentError("unknown field '" + name + "'");
    list = body.substr(value, i - value);
    i = SkipSpace(body, i);
    if (body[i] == '}') break;  // else a ','
  }
  std::vector<std::string_view> items;
  if (list.empty() || list[0] != '[') return items;
  for (size_t j = SkipSpace(list, 1); list[j] != ']'; j = SkipSpace(list, j + 1)) {
    const size_t end = SkipValue(list, j);
    items.push_back(list.substr(j, end - j));
    j = SkipSpace(list, end);
    if (list[j] == ']') break;  // else a ','
  }
  return items;
}

Status CheckKeys(const Json& object, const std::string& path, std::initializer_list<std::string_view> allowed) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool known = false;
    for (std::string_view a : allowed) known = known || it.key() == a;
    if (!known) {
      std::string where = path.empty() ? it.key() : path + "." + it.key();
      return InvalidArgumentError("unknown field '" + where + "'");
    }
  }
  return Status::Ok();
}

Result<Node> NodeFromJson(const Json& j) {
  RETURN_IF_ERROR(CheckKeys(j, "", {"name", "cpu", "memory", "labels", "simulated", "devices", "gpus"}));
  Node n;
  n.simulated = true;
  if (!j.contains("name")) return InvalidArgumentError("name is required");
  ASSIGN_OR_RETURN(n.name, GetString(j["name"], "name"));
  n.cpu_milli = 64000;
  n.memory_mib = 262144;
  if (j.contains("cpu")) {
    ASSIGN_OR_RETURN(n.cpu_milli, GetCpu(j["cpu"], "cpu"));
  }
  if (j.contains("memory")) {
    ASSIGN_OR_RETURN(n.memory_mib, GetMemory(j["memory"], "memory"));
  }
  if (j.contains("simulated")) {
    ASSIGN_OR_RETURN(n.simulated, GetBool(j["simulated"], "simulated"));
  }
  if (j.contains("labels")) {
    if (!j["labels"].is_object()) return TypeError("labels", "an object of strings");
    for (auto it = j["labels"].begin(); it != j["labels"].end(); ++it) {
      ASSIGN_OR_RETURN(n.labels[it.key()], GetString(it.value(), "labels." + it.key()));
    }
  }
  if (j.contains("devices")) {
    if (!j["devices"].is_array()) return TypeError("devices", "a list");
    if (j["devices"].size() > 256) return InvalidArgumentError("devices: at most 256 per node");
    for (size_t i = 0; i < j["devices"].size(); ++i) {
      ASSIGN_OR_RETURN(Device d, DeviceFromJson(j["devices"][i], "devices[" + std::to_string(i) + "]"));
      n.devices.push_back(std::move(d));
    }
  }
  if (j.contains("gpus")) {
    const Json& g = j["gpus"];
    if (!g.is_object()) return TypeError("gpus", "an object");
    RETURN_IF_ERROR(CheckKeys(g, "gpus", {"count", "model", "memory", "vendor", "cores", "max_sharers"}));
    if (!g.contains("count")) return InvalidArgumentError("gpus.count is required");
    ASSIGN_OR_RETURN(int64_t count, GetInt(g["count"], "gpus.count", 1, 256));
    Json one = g;
    one.erase("count");
    for (int64_t i = 0; i < count; ++i) {
      ASSIGN_OR_RETURN(Device d, DeviceFromJson(one, "gpus"));
      n.devices.push_back(std::move(d));
    }
  }
  for (size_t i = 0; i < n.devices.size(); ++i) {
    n.devices[i].index = static_cast<int>(i);
    if (n.devices[i].uuid.empty()) n.devices[i].uuid = n.name + "-gpu" + std::to_string(i);
  }
  Status valid = ValidateNode(n);
  if (!valid.ok()) return InvalidArgumentError(valid.message());
  return n;
}

Json NodeViewToJson(const NodeView& v) {
  Json j;
  j["name"] = v.node.name;
  j["labels"] = v.node.labels;
  j["ready"] = v.node.ready;
  j["cordoned"] = v.node.cordoned;
  j["simulated"] = v.node.simulated;
  j["cpu_milli"] = v.node.cpu_milli;
  j["memory_mib"] = v.node.memory_mib;
  j["cpu_allocated_milli"] = v.usage.cpu_milli;
  j["memory_allocated_mib"] = v.usage.memory_mib;
  j["last_seen_us"] = v.last_seen_us;
  j["devices"] = Json::array();
  for (size_t i = 0; i < v.node.devices.size(); ++i) {
    const Device& d = v.node.devices[i];
    const DeviceUsage& u = v.usage.devices[i];
    j["devices"].push_back({{"index", d.index},
                            {"uuid", d.uuid},
                            {"model", d.model},
                            {"vendor", std::string(VendorName(d.vendor))},
                            {"memory_mib", d.memory_mib},
                            {"compute_milli", d.compute_milli},
                            {"memory_allocated_mib", u.memory_mib},
                            {"compute_allocated_milli", u.compute_milli},
                            {"sharers", u.sharers},
                            {"max_sharers", d.max_sharers},
                            {"numa_node", d.numa_node},
                            {"mode", std::string(DeviceModeName(d.mode))},
                            {"healthy", d.healthy}});
  }
  return j;
}

Result<TenantQuota> QuotaFromJson(const Json& j, const std::string& path, TenantQuota q) {
  if (!j.is_object()) return TypeError(path, "an object");
  RETURN_IF_ERROR(CheckKeys(j, path, {"devices", "device_memory", "device_compute_milli", "cpu", "memory"}));
  auto field = [&](const char* key, int64_t* target, int kind) -> Status {
    if (!j.contains(key)) return Status::Ok();
    const Json& v = j[key];
    std::string p = path + "." + key;
    if (v.is_null() || (v.is_number_integer() && v.get<int64_t>() == -1)) {
      *target = kUnlimited;
      return Status::Ok();
    }
    Result<int64_t> r = kind == 0 ? GetInt(v, p, 0, int64_t{1} << 40) : kind == 1 ? GetMemory(v, p) : GetCpu(v, p);
    if (!r.ok()) return r.status();
    *target = *r;
    return Status::Ok();
  };
  RETURN_IF_ERROR(field("devices", &q.devices, 0));
  RETURN_IF_ERROR(field("device_memory", &q.device_memory_mib, 1));
  RETURN_IF_ERROR(field("device_compute_milli", &q.device_compute_milli, 0));
  RETURN_IF_ERROR(field("cpu", &q.cpu_milli, 2));
  RETURN_IF_ERROR(field("memory", &q.memory_mib, 1));
  return q;
}

Status CheckGuaranteeWithinQuota(const TenantQuota& g, const TenantQuota& q) {
  const struct {
    const char* name;
    int64_t guaranteed, limit;
  } fields[] = {{"devices", g.devices, q.devices},
                {"device_memory", g.device_memory_mib, q.device_memory_mib},
                {"device_compute_milli", g.device_compute_milli, q.device_compute_milli},
                {"cpu", g.cpu_milli, q.cpu_milli},
                {"memory", g.memory_mib, q.memory_mib}};
  for (const auto& f : fields) {
    if (f.guaranteed != kUnlimited && f.limit != kUnlimited && f.guaranteed > f.limit) {
      return InvalidArgumentError(std::string("guaranteed.") + f.name + " (" + std::to_string(f.guaranteed) +
                                  ") is above quota." + f.name + " (" + std::to_string(f.limit) + ")");
    }
  }
  return Status::Ok();
}

Json QuotaToJson(const TenantQuota& q) {
  Json j = Json::object();
  auto put = [&](const char* key, int64_t v) {
    if (v != kUnlimited) j[key] = v;
  };
  put("devices", q.devices);
  put("device_memory_mib", q.device_memory_mib);
  put("device_compute_milli", q.device_compute_milli);
  put("cpu_milli", q.cpu_milli);
  put("memory_mib", q.memory_mib);
  return j;
}

Result<std::vector<TenantPriorityQuota>> PriorityQuotasFromJson(const Json& j, const std::string& path) {
  std::vector<TenantPriorityQuota> out;
  if (j.is_null()) return out;
  if (!j.is_array()) return TypeError(path, "a list of {min_priority, max_priority, quota}");
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    const Json& e = j[i];
    if (!e.is_object()) return TypeError(p, "an object {min_priority, max_priority, quota}");
    RETURN_IF_ERROR(CheckKeys(e, p, {"min_priority", "max_priority", "quota"}));
    TenantPriorityQuota q;
    for (auto [key, target] : {std::pair<const char*, int*>{"min_priority", &q.min_priority},
                               std::pair<const char*, int*>{"max_priority", &q.max_priority}}) {
      if (!e.contains(key)) continue;
      const Json& v = e[key];
      Result<int> priority =
          v.is_string() ? ParsePriority(v.get<std::string>()) : Result<int>(InvalidArgumentError(""));
      if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= kMaxPriority) {
        priority = static_cast<int>(v.get<int64_t>());
      }
      if (!priority.ok()) return InvalidArgumentError(p + "." + key + " must be 0..100 or low, normal, high");
      *target = *priority;
    }
    if (q.min_priority > q.max_priority) {
      return InvalidArgumentError(p + ": min_priority " + std::to_string(q.min_priority) + " is above max_priority " +
                                  std::to_string(q.max_priority));
    }
    if (!e.contains("quota")) return InvalidArgumentError(p + ".quota is required");
    ASSIGN_OR_RETURN(q.quota, QuotaFromJson(e["quota"], p + ".quota", TenantQuota{}));
    out.push_back(q);
  }
  return out;
}

Json TenantToJson(const TenantRecord& t) {
  Json priority_quota = Json::array();
  for (const TenantPriorityQuota& q : t.priority_quotas) {
    priority_quota.push_back(
        {{"min_priority", q.min_priority}, {"max_priority", q.max_priority}, {"quota", QuotaToJson(q.quota)}});
  }
  return Json{{"id", t.id.value()},
              {"name", t.name},
              {"admin", t.admin},
              {"quota", QuotaToJson(t.quota)},
              {"guaranteed", QuotaToJson(t.guaranteed)},
              {"priority_quota", priority_quota},
              {"created_at", FormatTime(t.created_us)}};
}

Json SpecJson(const JobSpec& spec) {
  Json out = Json::parse(JobSpecToJson(spec), nullptr, false);
  return out.is_discarded() ? Json() : out;
}

Json JobToJson(const JobRecord& job, const std::string& tenant_name, const std::string& reason,
               const std::vector<AllocationRecord>* placement, const Json* spec) {
  Json j;
  j["id"] = job.id.value();
  j["name"] = job.spec.name;
  j["tenant"] = tenant_name;
  j["state"] = std::string(JobStateName(job.state));
  j["priority"] = job.priority;
  j["replicas"] = job.spec.replicas;
  j["submitted_at_us"] = job.submitted_us;
  j["submitted_at"] = FormatTime(job.submitted_us);
  j["updated_at"] = FormatTime(job.updated_us);
  j["restart_count"] = job.restart_count;
  j["reason"] = reason;
  j["state_reason"] = job.state_reason;
  const ResourceSpec& r = job.spec.resources;
  j["resources"] = {{"cpu_milli", r.cpu_milli},
                    {"memory_mib", r.memory_mib},
                    {"gpu", r.gpu},
                    {"gpumem_mib", r.gpumem_mib},
                    {"gpumem_percent", r.gpumem_percentage},
                    {"gpucores", r.gpucores}};
  j["spec"] = spec != nullptr ? *spec : SpecJson(job.spec);
  j["placement"] = Json::array();
  if (placement != nullptr) {
    for (const AllocationRecord& a : *placement) {
      Json p = {{"replica", a.replica}, {"node", a.node}, {"cpu_milli", a.cpu_milli}, {"memory_mib", a.memory_mib}};
      p["devices"] = Json::array();
      for (const DeviceGrantRecord& d : a.devices) {
        p["devices"].push_back(
            {{"uuid", d.device_uuid}, {"memory_mib", d.memory_mib}, {"compute_milli", d.compute_milli}});
      }
      j["placement"].push_back(std::move(p));
    }
  }
  return j;
}

std::string SpecText(const JobSpec& spec) {
  return SpecJson(spec).dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

// `s` as a JSON string exactly as nlohmann's dump writes it (the replace handler, no ASCII escaping): plain
// printable ASCII directly, anything else through nlohmann itself.
void AppendString(std::string* out, std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) {
      out->append(Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace));
      return;
    }
  }
  out->push_back('"');
  out->append(s);
  out->push_back('"');
}

void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, end);
}

// Writes one JSON object's members, in the order given, as nlohmann's dump(-1) does: `{` before the first
// member, `,` between them, `"key":` before each value. Keys are plain ASCII. Owned by the caller, one per object.
class ObjectWriter {
 public:
  explicit ObjectWriter(std::string* out) : out_(out) {}
  // Starts a member; the caller appends its value.
  void Key(std::string_view key) {
    out_->push_back(first_ ? '{' : ',');
    first_ = false;
    out_->push_back('"');
    out_->append(key);
    out_->append("\":");
  }
  void Int(std::string_view key, int64_t v) {
    Key(key);
    AppendInt(out_, v);
  }
  void String(std::string_view key, std::string_view v) {
    Key(key);
    AppendString(out_, v);
  }
  // A member whose key is any text (escaped as a value is), with a string value.
  void AnyString(std::string_view key, std::string_view v) {
    out_->push_back(first_ ? '{' : ',');
    first_ = false;
    AppendString(out_, key);
    out_->push_back(':');
    AppendString(out_, v);
  }
  void Bool(std::string_view key, bool v) {
    Key(key);
    out_->append(v ? "true" : "false");
  }
  void End() { out_->append(first_ ? "{}" : "}"); }

 private:
  std::string* out_;
  bool first_ = true;
};

void AppendPlacementJson(std::string* out, const AllocationRecord& a) {
  ObjectWriter w(out);
  w.Int("cpu_milli", a.cpu_milli);
  w.Key("devices");
  out->push_back('[');
  for (size_t k = 0; k < a.devices.size(); ++k) {
    const DeviceGrantRecord& d = a.devices[k];
    if (k > 0) out->push_back(',');
    ObjectWriter dw(out);
    dw.Int("compute_milli", d.compute_milli);
    dw.Int("memory_mib", d.memory_mib);
    dw.String("uuid", d.device_uuid);
    dw.End();
  }
  out->push_back(']');
  w.Int("memory_mib", a.memory_mib);
  w.String("node", a.node);
  w.Int("replica", a.replica);
  w.End();
}

}  // namespace

void AppendNodeJsonHead(std::string* out, const Node& node, const NodeUsage& usage) {
  // nlohmann's objects keep their keys sorted: the same order here, up to "last_seen_us".
  ObjectWriter w(out);
  w.Bool("cordoned", node.cordoned);
  w.Int("cpu_allocated_milli", usage.cpu_milli);
  w.Int("cpu_milli", node.cpu_milli);
  w.Key("devices");
  out->push_back('[');
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const Device& d = node.devices[i];
    const DeviceUsage& u = usage.devices[i];
    if (i > 0) out->push_back(',');
    ObjectWriter dw(out);
    dw.Int("compute_allocated_milli", u.compute_milli);
    dw.Int("compute_milli", d.compute_milli);
    dw.Bool("healthy", d.healthy);
    dw.Int("index", d.index);
    dw.Int("max_sharers", d.max_sharers);
    dw.Int("memory_allocated_mib", u.memory_mib);
    dw.Int("memory_mib", d.memory_mib);
    dw.String("mode", DeviceModeName(d.mode));
    dw.String("model", d.model);
    dw.Int("numa_node", d.numa_node);
    dw.Int("sharers", u.sharers);
    dw.String("uuid", d.uuid);
    dw.String("vendor", VendorName(d.vendor));
    dw.End();
  }
  out->push_back(']');
  w.Key("labels");
  ObjectWriter lw(out);
  for (const auto& [key, value] : node.labels) lw.AnyString(key, value);
  lw.End();
  w.Key("last_seen_us");
}

void AppendNodeJsonTail(std::string* out, const Node& node, const NodeUsage& usage) {
  // Continues the head's object: the keys after "last_seen_us".
  out->append(",\"memory_allocated_mib\":");
  AppendInt(out, usage.memory_mib);
  out->append(",\"memory_mib\":");
  AppendInt(out, node.memory_mib);
  out->append(",\"name\":");
  AppendString(out, node.name);
  out->append(node.ready ? ",\"ready\":true" : ",\"ready\":false");
  out->append(node.simulated ? ",\"simulated\":true}" : ",\"simulated\":false}");
}

void AppendJobJson(std::string* out, const JobRecord& job, const std::string& tenant_name, const std::string& reason,
                   const std::vector<AllocationRecord>* placement, std::string_view spec_text) {
  // nlohmann's objects keep their keys sorted: the same order here.
  ObjectWriter w(out);
  w.Int("id", job.id.value());
  w.String("name", job.spec.name);
  w.Key("placement");
  out->push_back('[');
  if (placement != nullptr) {
    for (size_t i = 0; i < placement->size(); ++i) {
      if (i > 0) out->push_back(',');
      AppendPlacementJson(out, (*placement)[i]);
    }
  }
  out->push_back(']');
  w.Int("priority", job.priority);
  w.String("reason", reason);
  w.Int("replicas", job.spec.replicas);
  const ResourceSpec& r = job.spec.resources;
  w.Key("resources");
  ObjectWriter rw(out);
  rw.Int("cpu_milli", r.cpu_milli);
  rw.Int("gpu", r.gpu);
  rw.Int("gpucores", r.gpucores);
  rw.Int("gpumem_mib", r.gpumem_mib);
  rw.Int("gpumem_percent", r.gpumem_percentage);
  rw.Int("memory_mib", r.memory_mib);
  rw.End();
  w.Int("restart_count", job.restart_count);
  w.Key("spec");
  out->append(spec_text);
  w.String("state", JobStateName(job.state));
  w.String("state_reason", job.state_reason);
  w.String("submitted_at", FormatTime(job.submitted_us));
  w.Int("submitted_at_us", job.submitted_us);
  w.String("tenant", tenant_name);
  w.String("updated_at", FormatTime(job.updated_us));
  w.End();
}

Json EventToJson(const EventRecord& e) {
  Json j = {
      {"id", e.id}, {"time", FormatTime(e.time_us)}, {"time_us", e.time_us}, {"kind", e.kind}, {"reason", e.reason}};
  j["from"] = e.from ? Json(std::string(JobStateName(*e.from))) : Json();
  j["to"] = e.to ? Json(std::string(JobStateName(*e.to))) : Json(e.kind);
  return j;
}

Json TasksToJson(const std::vector<TaskRecord>& tasks) {
  Json out = Json::array();
  for (const TaskRecord& t : tasks) {
    Json j = {{"replica", t.replica}, {"state", std::string(JobStateName(t.state))}, {"node", t.node}};
    j["exit_code"] = t.exit_code && *t.exit_code >= 0 ? Json(*t.exit_code) : Json();
    j["signal"] = t.exit_code && *t.exit_code < 0 ? Json(-*t.exit_code) : Json();
    out.push_back(std::move(j));
  }
  return out;
}

std::string FormatTime(TimeMicros us) {
  if (us <= 0) return "";
  time_t secs = static_cast<time_t>(us / 1'000'000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[40];
  size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%03dZ", static_cast<int>((us / 1000) % 1000));
  return buf;
}

}  // namespace xpool::server::internal
