// The user CLI of the control plane: submit, get, describe, cancel, suspend, resume, priority, top, tenants,
// tokens, nodes. Every command talks to `xpool server` over its REST API (docs/api.md). The server URL and token come
// from --server/--token, then XPOOL_SERVER/XPOOL_TOKEN, then ~/.config/xpool/config ("server = ...",
// "token = ..."). Tables are aligned; errors go to stderr with exit code 1 (2 for usage errors).
#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/control_commands.h"
#include "common/flags.h"
#include "common/status.h"
#include "common/units.h"

namespace xpool::cli {
namespace {

using nlohmann::json;

constexpr const char* kDefaultServer = "http://127.0.0.1:8470";

struct Connection {
  std::string server;
  std::string token;
};

std::string Trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(0, s.find_first_not_of(ws));
  s.erase(s.find_last_not_of(ws) + 1);
  return s;
}

// Reads "key = value" (or "key: value") lines; '#' starts a comment.
void ReadConfigFile(std::string* server, std::string* token) {
  const char* home = std::getenv("HOME");
  if (home == nullptr) return;
  std::ifstream in(std::string(home) + "/.config/xpool/config");
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    size_t sep = line.find_first_of("=:");
    // "server: http://host:port" — split on the first separator only.
    if (sep == std::string::npos) continue;
    std::string key = Trim(line.substr(0, sep));
    std::string value = Trim(line.substr(sep + 1));
    if (key == "server" && server->empty()) *server = value;
    if (key == "token" && token->empty()) *token = value;
  }
}

Connection Resolve(const std::string& flag_server, const std::string& flag_token) {
  Connection c{flag_server, flag_token};
  if (c.server.empty()) {
    if (const char* e = std::getenv("XPOOL_SERVER")) c.server = e;
  }
  if (c.token.empty()) {
    if (const char* e = std::getenv("XPOOL_TOKEN")) c.token = e;
  }
  if (c.server.empty() || c.token.empty()) ReadConfigFile(&c.server, &c.token);
  if (c.server.empty()) c.server = kDefaultServer;
  if (c.server.find("://") == std::string::npos) c.server = "http://" + c.server;
  while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
  return c;
}

// One REST call. Non-2xx answers become a Status carrying the server's error message.
Result<json> Call(const Connection& c, const std::string& method, const std::string& path, const std::string& body = "",
                  const std::string& content_type = "application/json") {
  httplib::Client client(c.server);
  if (!client.is_valid()) return InvalidArgumentError("bad server URL \"" + c.server + "\"");
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(30, 0);
  if (!c.token.empty()) client.set_bearer_token_auth(c.token.c_str());
  auto send = [&]() -> httplib::Result {
    if (method == "POST") return client.Post(path.c_str(), body, content_type.c_str());
    if (method == "PATCH") return client.Patch(path.c_str(), body, content_type.c_str());
    if (method == "DELETE") return client.Delete(path.c_str());
    return client.Get(path.c_str());
  };
  httplib::Result res = send();
  if (!res) {
    return UnavailableError("cannot reach the xpool server at " + c.server + " (" + httplib::to_string(res.error()) +
                            "); is `xpool server` running?");
  }
  json parsed = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (res->status >= 200 && res->status < 300) {
    if (parsed.is_discarded()) return InternalError("the server answered something that is not JSON");
    return parsed;
  }
  std::string message = res->body;
  if (!parsed.is_discarded() && parsed.contains("error") && parsed["error"].contains("message")) {
    message = parsed["error"]["message"].get<std::string>();
  }
  StatusCode code = res->status == 401   ? StatusCode::kUnauthenticated
                    : res->status == 404 ? StatusCode::kNotFound
                    : res->status == 503 ? StatusCode::kUnavailable
                                         : StatusCode::kInvalidArgument;
  if (res->status == 401) message += " (set --token, XPOOL_TOKEN or ~/.config/xpool/config)";
  return Status(code, "HTTP " + std::to_string(res->status) + ": " + message);
}

int Fail(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 1;
}

// Common flags of every client command.
struct ClientFlags {
  std::string server, token, output;
  void Add(FlagSet& flags, bool with_output) {
    flags.String("server", &server, "server URL (default: $XPOOL_SERVER, config, " + std::string(kDefaultServer) + ")");
    flags.String("token", &token, "bearer token (default: $XPOOL_TOKEN, then ~/.config/xpool/config)");
    if (with_output) flags.String("o", &output, "output: wide or json (default: a table)");
  }
  Connection connection() const { return Resolve(server, token); }
};

// Pre-splits "-o json" / "-f x" (single dash) into the FlagSet's "--o" form.
Args Normalise(const Args& args) {
  Args out;
  for (const std::string& a : args) {
    if (a.size() == 2 && a[0] == '-' && std::isalpha(static_cast<unsigned char>(a[1])) && a != "-h")
      out.push_back("-" + a);
    else
      out.push_back(a);
  }
  return out;
}

std::string Str(const json& j, const char* key, const std::string& fallback = "") {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return fallback;
  if (j[key].is_string()) return j[key].get<std::string>();
  return j[key].dump();
}

int64_t Int(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return 0;
  return j[key].get<int64_t>();
}

std::string Age(int64_t since_us) {
  if (since_us <= 0) return "-";
  int64_t now =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  int64_t s = std::max<int64_t>(0, (now - since_us) / 1000000);
  if (s < 120) return std::to_string(s) + "s";
  if (s < 7200) return std::to_string(s / 60) + "m";
  if (s < 172800) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

std::string Cpu(int64_t milli) {
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  return std::to_string(milli) + "m";
}

// Prints rows under headers, each column as wide as its widest cell, two spaces apart.
void PrintTable(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(headers.size());
  for (size_t i = 0; i < headers.size(); ++i) width[i] = headers[i].size();
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  auto print_row = [&](const std::vector<std::string>& r) {
    std::string line;
    for (size_t i = 0; i < headers.size(); ++i) {
      std::string cell = i < r.size() ? r[i] : "";
      if (i + 1 < headers.size()) cell.resize(width[i], ' ');
      line += cell;
      if (i + 1 < headers.size()) line += "  ";
    }
    std::printf("%s\n", line.c_str());
  };
  print_row(headers);
  for (const auto& r : rows) print_row(r);
}

std::string Resources(const json& job) {
  const json& r = job.contains("resources") ? job["resources"] : json::object();
  std::string out;
  if (Int(r, "cpu_milli") > 0) out += "cpu=" + Cpu(Int(r, "cpu_milli")) + " ";
  if (Int(r, "memory_mib") > 0) out += "mem=" + FormatMemoryMiB(Int(r, "memory_mib")) + " ";
  if (Int(r, "gpu") > 0) out += "gpu=" + std::to_string(Int(r, "gpu")) + " ";
  if (Int(r, "gpumem_mib") > 0) out += "gpumem=" + FormatMemoryMiB(Int(r, "gpumem_mib")) + " ";
  if (Int(r, "gpumem_percent") > 0) out += "gpumem=" + std::to_string(Int(r, "gpumem_percent")) + "% ";
  if (Int(r, "gpucores") > 0) out += "gpucores=" + std::to_string(Int(r, "gpucores")) + " ";
  if (!out.empty()) out.pop_back();
  return out.empty() ? "-" : out;
}

std::string PlacementSummary(const json& job) {
  if (!job.contains("placement") || job["placement"].empty()) return "-";
  std::string out;
  for (const json& p : job["placement"]) {
    if (!out.empty()) out += ",";
    out += Str(p, "node");
  }
  return out;
}

int PrintJobs(const json& reply, const std::string& output) {
  if (output == "json") {
    std::printf("%s\n", reply.dump(2).c_str());
    return 0;
  }
  bool wide = output == "wide";
  std::vector<std::string> headers = {"ID", "NAME", "TENANT", "STATE", "PRIORITY", "REPLICAS", "AGE"};
  if (wide) headers.insert(headers.end(), {"RESOURCES", "NODES"});
  headers.push_back("REASON");
  std::vector<std::vector<std::string>> rows;
  for (const json& j : reply["jobs"]) {
    std::vector<std::string> row = {Str(j, "id"),
                                    Str(j, "name"),
                                    Str(j, "tenant"),
                                    Str(j, "state"),
                                    Str(j, "priority"),
                                    Str(j, "replicas"),
                                    Age(Int(j, "submitted_at_us"))};
    if (wide) row.insert(row.end(), {Resources(j), PlacementSummary(j)});
    std::string reason = Str(j, "reason", "-");
    if (!wide && reason.size() > 60) reason = reason.substr(0, 57) + "...";
    row.push_back(reason.empty() ? "-" : reason);
    rows.push_back(std::move(row));
  }
  PrintTable(headers, rows);
  return 0;
}

int PrintNodes(const json& reply, const std::string& output) {
  if (output == "json") {
    std::printf("%s\n", reply.dump(2).c_str());
    return 0;
  }
  bool wide = output == "wide";
  std::vector<std::string> headers = {"NAME", "STATUS", "DEVICES", "CPU", "MEMORY"};
  if (wide) headers.insert(headers.end(), {"MODELS", "SIMULATED", "LAST-SEEN"});
  std::vector<std::vector<std::string>> rows;
  for (const json& n : reply["nodes"]) {
    std::string status = n.value("ready", false) ? "Ready" : "NotReady";
    if (n.value("cordoned", false)) status += ",Cordoned";
    std::vector<std::string> row = {
        Str(n, "name"), status, std::to_string(n.contains("devices") ? n["devices"].size() : 0),
        Cpu(Int(n, "cpu_allocated_milli")) + "/" + Cpu(Int(n, "cpu_milli")),
        FormatMemoryMiB(Int(n, "memory_allocated_mib")) + "/" + FormatMemoryMiB(Int(n, "memory_mib"))};
    if (wide) {
      std::string models;
      for (const json& d : n["devices"]) {
        std::string m = Str(d, "model");
        if (models.find(m) == std::string::npos) models += (models.empty() ? "" : ",") + m;
      }
      row.insert(row.end(), {models.empty() ? "-" : models, n.value("simulated", false) ? "yes" : "no",
                             Age(Int(n, "last_seen_us"))});
    }
    rows.push_back(std::move(row));
  }
  PrintTable(headers, rows);
  return 0;
}

int PrintTenants(const json& reply, const std::string& output) {
  if (output == "json") {
    std::printf("%s\n", reply.dump(2).c_str());
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const json& t : reply["tenants"]) {
    std::string quota = t.contains("quota") && !t["quota"].empty() ? t["quota"].dump() : "unlimited";
    std::string guaranteed = t.contains("guaranteed") && !t["guaranteed"].empty() ? t["guaranteed"].dump() : "none";
    rows.push_back({Str(t, "name"), t.value("admin", false) ? "yes" : "no", Str(t, "created_at"), quota, guaranteed});
  }
  PrintTable({"NAME", "ADMIN", "CREATED", "QUOTA", "GUARANTEED"}, rows);
  return 0;
}

// Parses the flags of a client command; returns false (with *exit_code set) when it should stop.
bool ParseClient(FlagSet& flags, const Args& args, int* exit_code) {
  return ParseFlagsOrExit(flags, Normalise(args), exit_code);
}

int JobAction(const Args& args, const char* command, const char* method, const char* suffix) {
  FlagSet flags(std::string("xpool ") + command, std::string(command) + "s a job: xpool " + command + " ID");
  ClientFlags cf;
  cf.Add(flags, false);
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  if (flags.positional().size() != 1) {
    std::fprintf(stderr, "usage: xpool %s JOB-ID\n", command);
    return 2;
  }
  auto reply = Call(cf.connection(), method, "/api/v1/jobs/" + flags.positional()[0] + suffix);
  if (!reply.ok()) return Fail(reply.status());
  std::printf("job %s: %s\n", flags.positional()[0].c_str(), Str(*reply, "state").c_str());
  return 0;
}

}  // namespace

int RunSubmit(const Args& args) {
  FlagSet flags("xpool submit", "Submits a job: xpool submit -f job.yaml (\"-\" reads stdin).");
  ClientFlags cf;
  cf.Add(flags, false);
  std::string file;
  flags.String("f", &file, "job spec file (YAML or JSON)");
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  if (file.empty() && flags.positional().size() == 1) file = flags.positional()[0];
  if (file.empty()) {
    std::fprintf(stderr, "usage: xpool submit -f job.yaml\n");
    return 2;
  }
  std::stringstream body;
  if (file == "-") {
    body << std::cin.rdbuf();
  } else {
    std::ifstream in(file);
    if (!in) return Fail(NotFoundError("cannot read " + file));
    body << in.rdbuf();
  }
  bool is_json = body.str().find_first_not_of(" \t\r\n") != std::string::npos &&
                 body.str()[body.str().find_first_not_of(" \t\r\n")] == '{';
  auto reply =
      Call(cf.connection(), "POST", "/api/v1/jobs", body.str(), is_json ? "application/json" : "application/yaml");
  if (!reply.ok()) return Fail(reply.status());
  std::printf("job %s submitted\n", Str(*reply, "id").c_str());
  return 0;
}

int RunGet(const Args& args) {
  FlagSet flags("xpool get", "Lists jobs, nodes or tenants: xpool get jobs|nodes|tenants [-o wide|json].");
  ClientFlags cf;
  cf.Add(flags, true);
  std::string tenant, state;
  flags.String("tenant", &tenant, "jobs: only this tenant's (admin)");
  flags.String("state", &state, "jobs: only jobs in this state");
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  if (flags.positional().size() != 1) {
    std::fprintf(stderr, "usage: xpool get jobs|nodes|tenants [-o wide|json]\n");
    return 2;
  }
  if (!cf.output.empty() && cf.output != "wide" && cf.output != "json") {
    std::fprintf(stderr, "error: -o must be wide or json\n");
    return 2;
  }
  std::string what = flags.positional()[0];
  if (what == "job") what = "jobs";
  if (what == "node") what = "nodes";
  if (what == "tenant") what = "tenants";
  std::string path = "/api/v1/" + what;
  if (what == "jobs") {
    std::string q;
    if (!tenant.empty()) q += "tenant=" + httplib::detail::encode_query_param(tenant);
    if (!state.empty()) q += std::string(q.empty() ? "" : "&") + "state=" + httplib::detail::encode_query_param(state);
    if (!q.empty()) path += "?" + q;
  } else if (what != "nodes" && what != "tenants") {
    std::fprintf(stderr, "error: unknown resource \"%s\" (jobs, nodes or tenants)\n", what.c_str());
    return 2;
  }
  auto reply = Call(cf.connection(), "GET", path);
  if (!reply.ok()) return Fail(reply.status());
  if (what == "jobs") return PrintJobs(*reply, cf.output);
  if (what == "nodes") return PrintNodes(*reply, cf.output);
  return PrintTenants(*reply, cf.output);
}

int RunDescribe(const Args& args) {
  FlagSet flags("xpool describe", "Shows a job in detail: xpool describe job ID.");
  ClientFlags cf;
  cf.Add(flags, true);
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  const Args& pos = flags.positional();
  if (pos.size() != 2 || pos[0] != "job") {
    std::fprintf(stderr, "usage: xpool describe job ID\n");
    return 2;
  }
  Connection c = cf.connection();
  auto job = Call(c, "GET", "/api/v1/jobs/" + pos[1]);
  if (!job.ok()) return Fail(job.status());
  auto events = Call(c, "GET", "/api/v1/jobs/" + pos[1] + "/events");
  if (!events.ok()) return Fail(events.status());
  if (cf.output == "json") {
    json all = *job;
    all["events"] = (*events)["events"];
    std::printf("%s\n", all.dump(2).c_str());
    return 0;
  }
  const json& j = *job;
  std::printf("ID:          %s\nName:        %s\nTenant:      %s\nState:       %s\nPriority:    %s\n",
              Str(j, "id").c_str(), Str(j, "name").c_str(), Str(j, "tenant").c_str(), Str(j, "state").c_str(),
              Str(j, "priority").c_str());
  std::printf("Replicas:    %s\nResources:   %s (per replica)\nSubmitted:   %s ago\nRestarts:    %s\n",
              Str(j, "replicas").c_str(), Resources(j).c_str(), Age(Int(j, "submitted_at_us")).c_str(),
              Str(j, "restart_count", "0").c_str());
  if (!Str(j, "reason").empty()) std::printf("Why pending: %s\n", Str(j, "reason").c_str());
  if (j.contains("placement") && !j["placement"].empty()) {
    std::printf("\nPlacement:\n");
    std::vector<std::vector<std::string>> rows;
    for (const json& p : j["placement"]) {
      for (const json& d : p["devices"]) {
        rows.push_back({Str(p, "replica"), Str(p, "node"), Str(d, "uuid"), FormatMemoryMiB(Int(d, "memory_mib")),
                        std::to_string(Int(d, "compute_milli") / 10) + "%"});
      }
      if (p["devices"].empty()) rows.push_back({Str(p, "replica"), Str(p, "node"), "-", "-", "-"});
    }
    PrintTable({"REPLICA", "NODE", "DEVICE", "MEMORY", "CORES"}, rows);
  }
  if (j.contains("spec")) std::printf("\nSpec:\n%s\n", j["spec"].dump(2).c_str());
  std::printf("\nEvents:\n");
  std::vector<std::vector<std::string>> rows;
  for (const json& e : (*events)["events"]) {
    rows.push_back({Str(e, "time"), Str(e, "from", "-"), Str(e, "to"), Str(e, "reason")});
  }
  PrintTable({"TIME", "FROM", "TO", "REASON"}, rows);
  return 0;
}

int RunCancel(const Args& args) { return JobAction(args, "cancel", "DELETE", ""); }
int RunSuspend(const Args& args) { return JobAction(args, "suspend", "POST", "/suspend"); }
int RunResume(const Args& args) { return JobAction(args, "resume", "POST", "/resume"); }

int RunPriority(const Args& args) {
  FlagSet flags("xpool priority", "Changes a job's priority (admin): xpool priority JOB 0..100|low|normal|high");
  ClientFlags cf;
  cf.Add(flags, false);
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  if (flags.positional().size() != 2) {
    std::fprintf(stderr, "usage: xpool priority JOB-ID 0..100|low|normal|high\n");
    return 2;
  }
  const std::string& value = flags.positional()[1];
  const bool number = !value.empty() && value.size() < 10 &&
                      std::all_of(value.begin(), value.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  const json body = {{"priority", number ? json(std::stoll(value)) : json(value)}};
  auto reply = Call(cf.connection(), "PATCH", "/api/v1/jobs/" + flags.positional()[0], body.dump());
  if (!reply.ok()) return Fail(reply.status());
  std::printf("job %s: priority %s\n", flags.positional()[0].c_str(), Str(*reply, "priority").c_str());
  return 0;
}

int RunTop(const Args& args) {
  FlagSet flags("xpool top", "Shows each node's devices: memory and cores allocated / capacity.");
  ClientFlags cf;
  cf.Add(flags, true);
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  auto reply = Call(cf.connection(), "GET", "/api/v1/nodes");
  if (!reply.ok()) return Fail(reply.status());
  if (cf.output == "json") {
    std::printf("%s\n", reply->dump(2).c_str());
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const json& n : (*reply)["nodes"]) {
    for (const json& d : n["devices"]) {
      int64_t mem = Int(d, "memory_mib"), mem_used = Int(d, "memory_allocated_mib");
      int64_t cores = Int(d, "compute_milli"), cores_used = Int(d, "compute_allocated_milli");
      rows.push_back({Str(n, "name"), Str(d, "index"), Str(d, "model"),
                      FormatMemoryMiB(mem_used) + "/" + FormatMemoryMiB(mem),
                      std::to_string(mem > 0 ? mem_used * 100 / mem : 0) + "%",
                      std::to_string(cores_used / 10) + "/" + std::to_string(cores / 10), Str(d, "sharers", "0")});
    }
  }
  PrintTable({"NODE", "DEVICE", "MODEL", "MEMORY", "MEM%", "CORES%", "TASKS"}, rows);
  return 0;
}

int RunTenants(const Args& args) {
  FlagSet flags("xpool tenants",
                "Manages tenants (admin): xpool tenants create|update NAME [--quota JSON] [--guaranteed JSON] | list.");
  ClientFlags cf;
  cf.Add(flags, true);
  std::string quota;
  std::string guaranteed;
  flags.String("quota", &quota,
               "limits as JSON (keys devices, device_memory, device_compute_milli, cpu, memory; -1 = unlimited), "
               "e.g. '{\"devices\": 8}'");
  flags.String("guaranteed", &guaranteed, "guarantee as JSON, same keys as --quota (-1 = none)");
  std::string priority_quota;
  flags.String("priority-quota", &priority_quota,
               "per-priority limits as JSON, e.g. '[{\"min_priority\": 80, \"max_priority\": 100, "
               "\"quota\": {\"devices\": 8}}]' ([] = none)");
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  const Args& pos = flags.positional();
  if (pos.size() == 1 && pos[0] == "list") {
    auto reply = Call(cf.connection(), "GET", "/api/v1/tenants");
    if (!reply.ok()) return Fail(reply.status());
    return PrintTenants(*reply, cf.output);
  }
  if (pos.size() != 2 || (pos[0] != "create" && pos[0] != "update")) {
    std::fprintf(stderr,
                 "usage: xpool tenants create|update NAME [--quota JSON] [--guaranteed JSON] | xpool tenants list\n");
    return 2;
  }
  json body;
  body["name"] = pos[1];
  if (!quota.empty()) {
    json q = json::parse(quota, nullptr, false);
    if (q.is_discarded()) return Fail(InvalidArgumentError("--quota is not valid JSON"));
    body["quota"] = q;
  }
  if (!guaranteed.empty()) {
    json g = json::parse(guaranteed, nullptr, false);
    if (g.is_discarded()) return Fail(InvalidArgumentError("--guaranteed is not valid JSON"));
    body["guaranteed"] = g;
  }
  if (!priority_quota.empty()) {
    json pq = json::parse(priority_quota, nullptr, false);
    if (pq.is_discarded()) return Fail(InvalidArgumentError("--priority-quota is not valid JSON"));
    body["priority_quota"] = pq;
  }
  auto reply = pos[0] == "create" ? Call(cf.connection(), "POST", "/api/v1/tenants", body.dump())
                                  : Call(cf.connection(), "PATCH", "/api/v1/tenants/" + pos[1], body.dump());
  if (!reply.ok()) return Fail(reply.status());
  std::printf("tenant %s %s\n", pos[1].c_str(), pos[0] == "create" ? "created" : "updated");
  return 0;
}

int RunTokens(const Args& args) {
  FlagSet flags("xpool tokens",
                "Creates a bearer token (admin): xpool tokens create --tenant NAME, or a node token for an agent:\n"
                "xpool tokens create --node NAME (it opens only that node's agent routes).");
  ClientFlags cf;
  cf.Add(flags, false);
  std::string tenant, node;
  flags.String("tenant", &tenant, "the tenant the token acts for");
  flags.String("node", &node, "create a node token for the agent of this node instead");
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  const Args& pos = flags.positional();
  if (pos.size() == 2 && tenant.empty() && node.empty()) tenant = pos[1];
  if (pos.empty() || pos[0] != "create" || tenant.empty() == node.empty()) {
    std::fprintf(stderr, "usage: xpool tokens create --tenant NAME | --node NAME\n");
    return 2;
  }
  if (!node.empty()) {
    auto reply = Call(cf.connection(), "POST", "/api/v1/nodes/" + node + "/tokens", "{}");
    if (!reply.ok()) return Fail(reply.status());
    std::printf("%s\n", Str(*reply, "token").c_str());
    std::fprintf(stderr, "node token created for node %s; it is shown once: xpool agent --token-file FILE\n",
                 node.c_str());
    return 0;
  }
  auto reply = Call(cf.connection(), "POST", "/api/v1/tenants/" + tenant + "/tokens", "{}");
  if (!reply.ok()) return Fail(reply.status());
  // The secret is shown once, on stdout only, so it can be captured: TOKEN=$(xpool tokens create ...).
  std::printf("%s\n", Str(*reply, "token").c_str());
  std::fprintf(stderr, "token created for tenant %s; it is shown once, keep it safe\n", tenant.c_str());
  return 0;
}

int RunNodes(const Args& args) {
  FlagSet flags("xpool nodes", "Node admin: xpool nodes register -f node.json | cordon NAME | uncordon NAME.");
  ClientFlags cf;
  cf.Add(flags, false);
  std::string file;
  flags.String("f", &file, "node description (JSON) for register");
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  const Args& pos = flags.positional();
  if (pos.size() == 1 && pos[0] == "register" && !file.empty()) {
    std::ifstream in(file);
    if (!in) return Fail(NotFoundError("cannot read " + file));
    std::stringstream body;
    body << in.rdbuf();
    auto reply = Call(cf.connection(), "POST", "/api/v1/nodes", body.str());
    if (!reply.ok()) return Fail(reply.status());
    std::printf("node %s registered\n", Str(*reply, "name").c_str());
    return 0;
  }
  if (pos.size() == 2 && (pos[0] == "cordon" || pos[0] == "uncordon")) {
    auto reply = Call(cf.connection(), "POST", "/api/v1/nodes/" + pos[1] + "/" + pos[0], "{}");
    if (!reply.ok()) return Fail(reply.status());
    std::printf("node %s %sed\n", pos[1].c_str(), pos[0].c_str());
    return 0;
  }
  std::fprintf(stderr, "usage: xpool nodes register -f node.json | cordon NAME | uncordon NAME\n");
  return 2;
}

// `xpool logs JOB [--replica N] [-f]`: a replica's output as the agents shipped it (GET /api/v1/jobs/{id}/logs;
// docs/agent.md "Logs"). -f keeps polling until the job has ended and no new output came for a few seconds.
int RunLogs(const Args& args) {
  FlagSet flags("xpool logs", "Prints a job's output (stdout and stderr): xpool logs JOB [--replica N] [-f].");
  ClientFlags cf;
  cf.Add(flags, false);
  int64_t replica = 0;
  bool follow = false;
  flags.Int("replica", &replica, "which replica (default 0)");
  flags.Bool("f", &follow, "follow: print new output as it comes, until the job ends");
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  if (flags.positional().size() != 1 || replica < 0) {
    std::fprintf(stderr, "usage: xpool logs JOB-ID [--replica N] [-f]\n");
    return 2;
  }
  const Connection c = cf.connection();
  const std::string base = "/api/v1/jobs/" + flags.positional()[0] + "/logs?replica=" + std::to_string(replica);
  int64_t offset = -1;  // first read: the last MiB the server holds
  int quiet_after_done = 0;
  for (;;) {
    auto reply = Call(c, "GET", base + (offset >= 0 ? "&offset=" + std::to_string(offset) : ""));
    if (!reply.ok()) return Fail(reply.status());
    const int64_t first = Int(*reply, "first_offset");
    if (offset >= 0 && first > offset) {
      std::fprintf(stderr, "[xpool logs: %lld bytes of output were dropped]\n", static_cast<long long>(first - offset));
    }
    const std::string data = Str(*reply, "data");
    std::fwrite(data.data(), 1, data.size(), stdout);
    std::fflush(stdout);
    offset = Int(*reply, "next_offset");
    if (!follow) return 0;
    const bool done = reply->value("done", false);
    // After the job ended its last output may still be on its way (the agent's next heartbeat).
    quiet_after_done = done && data.empty() ? quiet_after_done + 1 : 0;
    if (quiet_after_done >= 6) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

}  // namespace xpool::cli
