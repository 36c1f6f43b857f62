// The user CLI of the control plane: submit, get, describe, cancel, suspend, resume, priority, top, tenants,
// tokens, nodes. Every command talks to `xpool server` over its REST API (docs/api.md). The server URL and token come
// from --server/--token, then XPOOL_SERVER/XPOOL_TOKEN, then ~/.config/xpool/config ("server = ...",
// "token = ..."). What they print (tables, -o json|yaml, units) is cli/client_print.h and cli/output.h; errors go
// to stderr with exit code 1 (2 for usage errors).
#include <algorithm>
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

#include "cli/client_print.h"
#include "cli/control_commands.h"
#include "cli/output.h"
#include "common/flags.h"
#include "common/http_error.h"
#include "common/status.h"
#include "common/units.h"
#include "http/http_client.h"
#include "model/job_spec.h"

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
  http::HttpRequest request;
  request.method = method;
  request.target = path;
  request.body = body;
  if (!c.token.empty()) request.headers.emplace_back("Authorization", "Bearer " + c.token);
  if (method == "POST" || method == "PATCH") request.headers.emplace_back("Content-Type", content_type);
  Result<http::HttpResponse> res = http::SendHttpRequest(c.server, request);
  if (!res.ok()) {
    if (res.status().code() == StatusCode::kInvalidArgument) return res.status();
    return UnavailableError("cannot reach the xpool server at " + c.server + " (" + res.status().message() +
                            "); is `xpool server` running?");
  }
  json parsed = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (res->status >= 200 && res->status < 300) {
    if (parsed.is_discarded()) return InternalError("the server answered something that is not JSON");
    return parsed;
  }
  const Status error = StatusFromHttpError(res->status, res->body);
  std::string message = "HTTP " + std::to_string(res->status) + ": " + error.message();
  if (error.code() == StatusCode::kUnauthenticated) message += " (set --token, XPOOL_TOKEN or ~/.config/xpool/config)";
  return Status(error.code(), std::move(message));
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
    if (with_output) {
      flags.String("o", &output, "output: wide, json or yaml (default: a table); -owide and -o=json work too");
      flags.String("output", &output, "the same as -o");
    }
  }
  Connection connection() const { return Resolve(server, token); }
};

// The -o flag's value; on a bad one prints the error and sets *exit_code to 2.
bool OutputOrExit(const ClientFlags& cf, OutputFormat* format, int* exit_code) {
  auto f = ParseOutputFormat(cf.output);
  if (!f.ok()) {
    std::fprintf(stderr, "error: %s\n", f.status().message().c_str());
    *exit_code = 2;
    return false;
  }
  *format = *f;
  return true;
}

// "job" and "jobs" name the same resource (likewise node(s), tenant(s)); "" for anything else.
std::string ResourceName(const std::string& word) {
  for (const char* r : {"jobs", "nodes", "tenants"}) {
    if (word == r || word + "s" == r) return r;
  }
  return "";
}

// Prints a list reply (`key`: "jobs", "nodes" or "tenants") or, with `one`, a single object in `format`.
int PrintList(const json& reply, const std::string& key, bool one, OutputFormat format) {
  if (format == OutputFormat::kJson || format == OutputFormat::kYaml) return PrintDocument(reply, format);
  const json items = one ? json::array({reply}) : reply.value(key, json::array());
  const bool wide = format == OutputFormat::kWide;
  if (key == "jobs") PrintJobTable(items, wide);
  if (key == "nodes") PrintNodeTable(items, wide);
  if (key == "tenants") PrintTenantTable(items, wide);
  return 0;
}

// Parses the flags of a client command; returns false (with *exit_code set) when it should stop.
bool ParseClient(FlagSet& flags, const Args& args, int* exit_code) { return ParseFlagsOrExit(flags, args, exit_code); }

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

// The YAML documents of `text`, split at document markers: a line that starts with "---" followed by nothing,
// a space or a tab (a marker at column 0 ends a document even inside a block scalar, so this is YAML's own
// split). Empty documents are dropped.
std::vector<std::string> YamlDocuments(const std::string& text) {
  std::vector<std::string> docs(1);
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const bool marker =
        line.rfind("---", 0) == 0 && (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
    if (marker) {
      docs.emplace_back(line.size() > 4 ? line.substr(4) + "\n" : "");
      continue;
    }
    docs.back() += line + "\n";
  }
  std::erase_if(docs, [](const std::string& d) { return d.find_first_not_of(" \t\r\n") == std::string::npos; });
  return docs;
}

// Several specs (a multi-document file, or one repeated with --count): read here with the server's parser, then
// sent as one POST /api/v1/jobs:batch (one transaction; all or nothing). Copy i of a spec repeated N > 1 times is
// named NAME-i and gets JOB_ARRAY_INDEX=i in its environment.
int SubmitBatch(const Connection& c, const std::vector<std::string>& documents, int64_t count) {
  json jobs = json::array();
  for (size_t d = 0; d < documents.size(); ++d) {
    Result<JobSpec> spec = ParseJobSpec(documents[d]);
    if (!spec.ok()) {
      std::fprintf(stderr, "error: document %zu: %s\n", d + 1, spec.status().message().c_str());
      return 2;
    }
    for (int64_t i = 0; i < count; ++i) {
      JobSpec copy = *spec;
      if (count > 1) {
        copy.name += "-" + std::to_string(i);
        copy.env["JOB_ARRAY_INDEX"] = std::to_string(i);
      }
      jobs.push_back(json::parse(JobSpecToJson(copy)));
    }
  }
  if (jobs.size() > 10000) {
    std::fprintf(stderr, "error: %zu jobs: at most 10000 per submit\n", jobs.size());
    return 2;
  }
  auto reply = Call(c, "POST", "/api/v1/jobs:batch", json{{"jobs", std::move(jobs)}}.dump(), "application/json");
  if (!reply.ok()) return Fail(reply.status());
  int failed = 0;
  for (const json& job : reply->value("jobs", json::array())) {
    if (job.contains("id")) {
      std::printf("job %s submitted\n", job["id"].dump().c_str());
    } else {
      ++failed;
      std::fprintf(stderr, "error: %s\n", job.value("error", json::object()).value("message", "").c_str());
    }
  }
  return failed == 0 ? 0 : 1;
}

int RunSubmit(const Args& args) {
  FlagSet flags("xpool submit",
                "Submits jobs: xpool submit -f job.yaml (\"-\" reads stdin; several YAML documents submit several "
                "jobs in one transaction) [--count N].");
  ClientFlags cf;
  cf.Add(flags, false);
  std::string file;
  int64_t count = 1;
  flags.String("f", &file, "job spec file (YAML or JSON)");
  flags.Int("count", &count, "submit N copies (an array): copy i is NAME-i with JOB_ARRAY_INDEX=i (1..10000)");
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  if (file.empty() && flags.positional().size() == 1) file = flags.positional()[0];
  if (file.empty() || count < 1 || count > 10000) {
    std::fprintf(stderr, "usage: xpool submit -f job.yaml [--count N]  (N: 1..10000)\n");
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
  const std::vector<std::string> documents = is_json ? std::vector<std::string>{body.str()} : YamlDocuments(body.str());
  if (documents.size() > 1 || count > 1) return SubmitBatch(cf.connection(), documents, count);
  auto reply =
      Call(cf.connection(), "POST", "/api/v1/jobs", body.str(), is_json ? "application/json" : "application/yaml");
  if (!reply.ok()) return Fail(reply.status());
  std::printf("job %s submitted\n", Str(*reply, "id").c_str());
  return 0;
}

int RunGet(const Args& args) {
  FlagSet flags("xpool get",
                "Lists jobs, nodes or tenants, or shows one: xpool get jobs|nodes|tenants [NAME] [-o wide|json|yaml]\n"
                "(job, node and tenant work as well: xpool get job 21).");
  ClientFlags cf;
  cf.Add(flags, true);
  std::string tenant, state;
  flags.String("tenant", &tenant, "jobs: only this tenant's (admin)");
  flags.String("state", &state, "jobs: only jobs in this state");
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  OutputFormat format;
  if (!OutputOrExit(cf, &format, &code)) return code;
  const Args& pos = flags.positional();
  if (pos.empty() || pos.size() > 2) {
    std::fprintf(stderr, "usage: xpool get jobs|nodes|tenants [NAME] [-o wide|json|yaml]\n");
    return 2;
  }
  const std::string what = ResourceName(pos[0]);
  if (what.empty()) {
    std::fprintf(stderr, "error: unknown resource \"%s\" (jobs, nodes or tenants)\n", pos[0].c_str());
    return 2;
  }
  std::string path = "/api/v1/" + what;
  if (pos.size() == 2) {
    path += "/" + http::PercentEncode(pos[1]);
  } else if (what == "jobs") {
    std::string q;
    if (!tenant.empty()) q += "tenant=" + http::PercentEncode(tenant);
    if (!state.empty()) q += std::string(q.empty() ? "" : "&") + "state=" + http::PercentEncode(state);
    if (!q.empty()) path += "?" + q;
  }
  auto reply = Call(cf.connection(), "GET", path);
  if (!reply.ok()) return Fail(reply.status());
  return PrintList(*reply, what, pos.size() == 2, format);
}

int RunDescribe(const Args& args) {
  FlagSet flags("xpool describe",
                "Shows a job in detail (state and why, placement, each replica's node and exit, spec, events):\n"
                "xpool describe [job] ID [-o json|yaml].");
  ClientFlags cf;
  cf.Add(flags, true);
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  OutputFormat format;
  if (!OutputOrExit(cf, &format, &code)) return code;
  Args pos = flags.positional();
  if (pos.size() == 2 && ResourceName(pos[0]) == "jobs") pos.erase(pos.begin());
  if (pos.size() != 1) {
    std::fprintf(stderr, "usage: xpool describe [job] ID\n");
    return 2;
  }
  Connection c = cf.connection();
  auto job = Call(c, "GET", "/api/v1/jobs/" + http::PercentEncode(pos[0]));
  if (!job.ok()) return Fail(job.status());
  auto events = Call(c, "GET", "/api/v1/jobs/" + Str(*job, "id") + "/events");
  if (!events.ok()) return Fail(events.status());
  if (format == OutputFormat::kJson || format == OutputFormat::kYaml) {
    json all = *job;
    all["events"] = (*events)["events"];
    return PrintDocument(all, format);
  }
  PrintJobDetail(*job, (*events)["events"]);
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
  FlagSet flags("xpool top",
                "Shows each node's devices: memory (GiB) and compute (percent of the device) allocated.\n"
                "xpool top [-o wide|json|yaml] (wide is the table too).");
  ClientFlags cf;
  cf.Add(flags, true);
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  OutputFormat format;
  if (!OutputOrExit(cf, &format, &code)) return code;
  if (!flags.positional().empty()) {
    std::fprintf(stderr, "usage: xpool top [-o wide|json|yaml]\n");
    return 2;
  }
  auto reply = Call(cf.connection(), "GET", "/api/v1/nodes");
  if (!reply.ok()) return Fail(reply.status());
  if (format == OutputFormat::kJson || format == OutputFormat::kYaml) return PrintDocument(*reply, format);
  PrintDeviceTable(reply->value("nodes", json::array()));
  return 0;
}

int RunUsage(const Args& args) {
  FlagSet flags("xpool usage",
                "GPU-hours allocated and used (measured by the agents) per tenant, and per job with --by-job.\n"
                "xpool usage [--tenant T] [--since 7d] [--by-job] [-o json|yaml]. A tenant's token sees its own.");
  ClientFlags cf;
  cf.Add(flags, true);
  std::string tenant, since = "7d";
  bool by_job = false;
  flags.String("tenant", &tenant, "this tenant only (admin: any; default: every tenant the token may see)");
  flags.String("since", &since, "how far back: 90m, 24h, 7d (default 7d)");
  flags.Bool("by-job", &by_job, "per job too");
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  OutputFormat format;
  if (!OutputOrExit(cf, &format, &code)) return code;
  if (!flags.positional().empty()) {
    std::fprintf(stderr, "usage: xpool usage [--tenant T] [--since 7d] [--by-job]\n");
    return 2;
  }
  std::string path = "/api/v1/usage?since=" + since + (by_job ? "&by=job" : "");
  if (!tenant.empty()) path += "&tenant=" + tenant;
  auto reply = Call(cf.connection(), "GET", path);
  if (!reply.ok()) return Fail(reply.status());
  if (format == OutputFormat::kJson || format == OutputFormat::kYaml) return PrintDocument(*reply, format);
  PrintUsageTables(*reply);
  return 0;
}

int RunTenants(const Args& args) {
  FlagSet flags("xpool tenants",
                "Manages tenants (admin): xpool tenants create|update NAME [--quota JSON] [--guaranteed JSON];\n"
                "xpool tenants [list] [-o wide|json|yaml] lists them.");
  ClientFlags cf;
  cf.Add(flags, true);
  std::string quota;
  std::string guaranteed;
  flags.String("quota", &quota,
               "limits as JSON (keys devices, device_memory, device_compute_milli, cpu, memory; -1 = unlimited), "
               "e.g. '{\"devices\": 8}'; enforced: a job that would exceed one waits (memory is stored, not "
               "enforced)");
  flags.String("guaranteed", &guaranteed, "guarantee as JSON, same keys as --quota (-1 = none)");
  std::string priority_quota;
  flags.String("priority-quota", &priority_quota,
               "per-priority limits as JSON, e.g. '[{\"min_priority\": 80, \"max_priority\": 100, "
               "\"quota\": {\"devices\": 8}}]' ([] = none)");
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  OutputFormat format;
  if (!OutputOrExit(cf, &format, &code)) return code;
  const Args& pos = flags.positional();
  if (pos.empty() || (pos.size() == 1 && pos[0] == "list")) {
    auto reply = Call(cf.connection(), "GET", "/api/v1/tenants");
    if (!reply.ok()) return Fail(reply.status());
    return PrintList(*reply, "tenants", false, format);
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
  FlagSet flags("xpool nodes",
                "Lists nodes (xpool nodes [list] [-o wide|json|yaml]) or administers them (admin):\n"
                "xpool nodes register -f node.json | cordon NAME | uncordon NAME.");
  ClientFlags cf;
  cf.Add(flags, true);
  std::string file;
  flags.String("f", &file, "node description (JSON) for register");
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  OutputFormat format;
  if (!OutputOrExit(cf, &format, &code)) return code;
  const Args& pos = flags.positional();
  if (pos.empty() || (pos.size() == 1 && pos[0] == "list")) {
    auto reply = Call(cf.connection(), "GET", "/api/v1/nodes");
    if (!reply.ok()) return Fail(reply.status());
    return PrintList(*reply, "nodes", false, format);
  }
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
  std::fprintf(stderr, "usage: xpool nodes [list] | register -f node.json | cordon NAME | uncordon NAME\n");
  return 2;
}

// The last `lines` lines of `text` (all of it when it has fewer).
std::string LastLines(const std::string& text, int64_t lines) {
  size_t at = text.size();
  if (at > 0 && text[at - 1] == '\n') --at;  // the final newline ends the last line
  for (int64_t n = 0; n < lines; ++n) {
    const size_t nl = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
    if (nl == std::string::npos) return text;
    at = nl;
  }
  return text.substr(at + 1);
}

// `xpool logs JOB [--replica N] [--tail N] [-f]`: a replica's output (GET /api/v1/jobs/{id}/logs; docs/agent.md
// "Logs"): what the agents shipped, or the task's log file where the server can read it. For an ended job it waits
// until the server holds the whole log (`done`); -f keeps polling until then, and waits for a server that
// restarts. Exit 1 when the job ended but the end of its log did not arrive for 10 s.
int RunLogs(const Args& args) {
  FlagSet flags("xpool logs",
                "Prints a job's output (stdout and stderr): xpool logs JOB [--replica N] [--tail N] [-f].");
  ClientFlags cf;
  cf.Add(flags, false);
  int64_t replica = 0, tail = -1;
  bool follow = false;
  flags.Int("replica", &replica, "which replica (default 0)");
  flags.Int("tail", &tail, "only the last N lines (default: all the server holds, up to 1 MiB)");
  flags.Bool("f", &follow, "follow: print new output as it comes, until the job ends (across server restarts)");
  int code = 0;
  if (!ParseClient(flags, args, &code)) return code;
  if (flags.positional().size() != 1 || replica < 0 || (tail < 0 && tail != -1)) {
    std::fprintf(stderr, "usage: xpool logs JOB-ID [--replica N] [--tail N] [-f]  (N >= 0)\n");
    return 2;
  }
  const Connection c = cf.connection();
  const std::string base = "/api/v1/jobs/" + flags.positional()[0] + "/logs?replica=" + std::to_string(replica);
  int64_t offset = -1;               // first read: the last MiB the server holds
  constexpr int kStalledPolls = 20;  // 10 s without output after the job ended, and the log still not whole
  int stalled_polls = 0;
  bool unreachable = false;
  for (;;) {
    auto reply = Call(c, "GET", base + (offset >= 0 ? "&offset=" + std::to_string(offset) : ""));
    if (!reply.ok()) {
      // Following: a server that restarts (or a moment without it) is waited for; the output resumes at the
      // same stream offset.
      if (!follow || reply.status().code() != StatusCode::kUnavailable) return Fail(reply.status());
      if (!unreachable) std::fprintf(stderr, "[xpool logs: %s; retrying]\n", reply.status().message().c_str());
      unreachable = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    unreachable = false;
    const int64_t first = Int(*reply, "first_offset");
    if (offset >= 0 && first > offset) {
      std::fprintf(stderr, "[xpool logs: %lld bytes of output were dropped]\n", static_cast<long long>(first - offset));
    }
    std::string data = Str(*reply, "data");
    if (offset < 0 && tail >= 0) data = tail == 0 ? "" : LastLines(data, tail);
    std::fwrite(data.data(), 1, data.size(), stdout);
    std::fflush(stdout);
    const int64_t asked = offset;
    offset = Int(*reply, "next_offset");
    // `done`: the job has ended and this read reached the end of its whole log (its exit line), or no agent will
    // send one. An ended job's last output may still be on its way (the agent's next heartbeat): both modes wait
    // for it while it comes, and say so when it stops coming.
    if (reply->value("done", false)) return 0;
    const std::string state = Str(*reply, "state");
    const bool ended = state == "succeeded" || state == "failed" || state == "cancelled";
    if (!follow && !ended) return 0;  // a running job: what it has written so far
    if (offset > asked && asked >= 0) {
      stalled_polls = 0;
      continue;  // more may be held already (a read returns at most 1 MiB)
    }
    if (ended && ++stalled_polls >= kStalledPolls) {
      std::fprintf(stderr,
                   "[xpool logs: job %s has ended, but the server does not hold the end of this replica's log "
                   "(its agent has not sent it for %d s); the output above may be incomplete]\n",
                   flags.positional()[0].c_str(), kStalledPolls / 2);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

}  // namespace xpool::cli
