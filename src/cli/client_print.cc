#include "cli/client_print.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cli/output.h"
#include "common/units.h"

namespace xpool::cli {
namespace {

using nlohmann::json;

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

// A job's per-replica request: "cpu=0.1 mem=0.1GiB gpu=1 gpumem=50%".
std::string Resources(const json& job) {
  const json& r = job.contains("resources") ? job["resources"] : json::object();
  std::string out;
  if (Int(r, "cpu_milli") > 0) out += "cpu=" + FormatMilliUnits(Int(r, "cpu_milli")) + " ";
  if (Int(r, "memory_mib") > 0) out += "mem=" + FormatGiB(Int(r, "memory_mib")) + "GiB ";
  if (Int(r, "gpu") > 0) out += "gpu=" + std::to_string(Int(r, "gpu")) + " ";
  if (Int(r, "gpumem_mib") > 0) out += "gpumem=" + FormatGiB(Int(r, "gpumem_mib")) + "GiB ";
  if (Int(r, "gpumem_percent") > 0) out += "gpumem=" + std::to_string(Int(r, "gpumem_percent")) + "% ";
  if (Int(r, "gpucores") > 0) out += "gpucores=" + std::to_string(Int(r, "gpucores")) + "% ";
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

// "code 3", "signal 9 (SIGKILL)" or "-".
std::string ExitText(const json& task) {
  if (task.contains("signal") && task["signal"].is_number()) {
    const int sig = task["signal"].get<int>();
    const char* abbrev = sigabbrev_np(sig);
    return "signal " + std::to_string(sig) + (abbrev != nullptr ? " (SIG" + std::string(abbrev) + ")" : "");
  }
  if (task.contains("exit_code") && task["exit_code"].is_number()) return "code " + Str(task, "exit_code");
  return "-";
}

}  // namespace

std::string Str(const json& j, const char* key, const std::string& fallback) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return fallback;
  if (j[key].is_string()) return j[key].get<std::string>();
  return j[key].dump();
}

int64_t Int(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return 0;
  return j[key].get<int64_t>();
}

std::string JobReason(const json& job) {
  const std::string state = Str(job, "state");
  std::string reason;
  if (state == "queued") {
    reason = Str(job, "reason");
  } else if (state == "failed" || state == "cancelled" || state == "suspended" || state == "suspending") {
    reason = Str(job, "state_reason");
  }
  return reason.empty() ? "-" : reason;
}

std::string QuotaText(const json& quota, const std::string& none) {
  if (!quota.is_object() || quota.empty()) return none;
  std::string out;
  auto add = [&](const std::string& text) { out += (out.empty() ? "" : " ") + text; };
  if (quota.contains("devices")) add("devices=" + Str(quota, "devices"));
  if (quota.contains("device_memory_mib")) add("gpumem=" + FormatGiB(Int(quota, "device_memory_mib")) + "GiB");
  if (quota.contains("device_compute_milli")) {
    add("gpucores=" + FormatDevicePercent(Int(quota, "device_compute_milli")));
  }
  if (quota.contains("cpu_milli")) add("cpu=" + FormatMilliUnits(Int(quota, "cpu_milli")));
  if (quota.contains("memory_mib")) add("mem=" + FormatGiB(Int(quota, "memory_mib")) + "GiB");
  return out.empty() ? none : out;
}

void PrintJobTable(const json& jobs, bool wide) {
  std::vector<std::string> headers = {"ID", "NAME", "TENANT", "STATE", "PRIORITY", "REPLICAS", "AGE"};
  if (wide) headers.insert(headers.end(), {"RESOURCES", "NODES"});
  headers.push_back("REASON");
  std::vector<std::vector<std::string>> rows;
  for (const json& j : jobs) {
    std::vector<std::string> row = {Str(j, "id"),
                                    Str(j, "name"),
                                    Str(j, "tenant"),
                                    Str(j, "state"),
                                    Str(j, "priority"),
                                    Str(j, "replicas"),
                                    Age(Int(j, "submitted_at_us"))};
    if (wide) row.insert(row.end(), {Resources(j), PlacementSummary(j)});
    std::string reason = JobReason(j);
    if (!wide && reason.size() > 80) reason = reason.substr(0, 77) + "...";
    row.push_back(reason);
    rows.push_back(std::move(row));
  }
  PrintTable(headers, rows);
}

void PrintNodeTable(const json& nodes, bool wide) {
  std::vector<std::string> headers = {"NAME", "STATUS", "DEVICES", "CPU(cores)", "MEMORY(GiB)"};
  if (wide) headers.insert(headers.end(), {"MODELS", "SIMULATED", "LAST-SEEN"});
  std::vector<std::vector<std::string>> rows;
  for (const json& n : nodes) {
    std::string status = n.value("ready", false) ? "Ready" : "NotReady";
    if (n.value("cordoned", false)) status += ",Cordoned";
    std::vector<std::string> row = {Str(n, "name"), status,
                                    std::to_string(n.contains("devices") ? n["devices"].size() : 0),
                                    CoresPair(Int(n, "cpu_allocated_milli"), Int(n, "cpu_milli")),
                                    GiBPair(Int(n, "memory_allocated_mib"), Int(n, "memory_mib"))};
    if (wide) {
      std::string models;
      for (const json& d : n.value("devices", json::array())) {
        std::string m = Str(d, "model");
        if (models.find(m) == std::string::npos) models += (models.empty() ? "" : ",") + m;
      }
      row.insert(row.end(), {models.empty() ? "-" : models, n.value("simulated", false) ? "yes" : "no",
                             Age(Int(n, "last_seen_us"))});
    }
    rows.push_back(std::move(row));
  }
  PrintTable(headers, rows);
}

void PrintTenantTable(const json& tenants, bool wide) {
  std::vector<std::string> headers = {"NAME", "ADMIN", "QUOTA", "GUARANTEED"};
  if (wide) headers.insert(headers.end(), {"PRIORITY-QUOTA", "CREATED"});
  std::vector<std::vector<std::string>> rows;
  for (const json& t : tenants) {
    std::vector<std::string> row = {Str(t, "name"), t.value("admin", false) ? "yes" : "no",
                                    QuotaText(t.value("quota", json::object()), "unlimited"),
                                    QuotaText(t.value("guaranteed", json::object()), "none")};
    if (wide) {
      std::string bands;
      for (const json& b : t.value("priority_quota", json::array())) {
        bands += (bands.empty() ? "" : "; ") + Str(b, "min_priority") + ".." + Str(b, "max_priority") + ": " +
                 QuotaText(b.value("quota", json::object()), "unlimited");
      }
      row.insert(row.end(), {bands.empty() ? "-" : bands, Str(t, "created_at", "-")});
    }
    rows.push_back(std::move(row));
  }
  PrintTable(headers, rows);
}

namespace {

// 1234 milli-hours → "1.234".
std::string MilliText(int64_t milli) {
  char text[32];
  std::snprintf(text, sizeof(text), "%s%lld.%03lld", milli < 0 ? "-" : "",
                static_cast<long long>(std::llabs(milli) / 1000), static_cast<long long>(std::llabs(milli) % 1000));
  return text;
}

// A usage entry's columns: GPU-hours allocated and used, used / allocated, memory (GiB-hours), measured time.
std::vector<std::string> UsageColumns(const json& u) {
  const int64_t alloc = u.value("allocated_gpu_milli_hours", int64_t{0});
  const int64_t used = u.value("used_gpu_milli_hours", int64_t{0});
  const int64_t seconds = u.value("job_seconds", int64_t{0});
  const int64_t measured = u.value("measured_seconds", int64_t{0});
  auto percent = [](int64_t part, int64_t whole) {
    return whole > 0 ? std::to_string((part * 100 + whole / 2) / whole) + "%" : std::string("-");
  };
  return {MilliText(alloc),
          MilliText(used),
          percent(used, alloc),
          MilliText(u.value("allocated_memory_mib_hours", int64_t{0}) * 1000 / 1024),
          MilliText(u.value("used_memory_mib_hours", int64_t{0}) * 1000 / 1024),
          percent(measured, seconds)};
}

}  // namespace

void PrintUsageTables(const json& usage) {
  std::printf("Usage %s .. %s\n", Str(usage, "since").c_str(), Str(usage, "until").c_str());
  const std::vector<std::string> columns = {"GPU-H ALLOC",     "GPU-H USED",     "USED/ALLOC",
                                            "MEM GIB-H ALLOC", "MEM GIB-H USED", "MEASURED"};
  std::vector<std::string> headers = {"TENANT"};
  headers.insert(headers.end(), columns.begin(), columns.end());
  std::vector<std::vector<std::string>> rows;
  for (const json& t : usage.value("tenants", json::array())) {
    std::vector<std::string> row = {Str(t, "tenant")};
    for (std::string& c : UsageColumns(t)) row.push_back(std::move(c));
    rows.push_back(std::move(row));
  }
  PrintTable(headers, rows);
  if (!usage.contains("jobs")) return;
  std::printf("\n");
  headers = {"JOB", "NAME", "TENANT"};
  headers.insert(headers.end(), columns.begin(), columns.end());
  rows.clear();
  for (const json& j : usage["jobs"]) {
    std::vector<std::string> row = {Str(j, "id"), Str(j, "name"), Str(j, "tenant")};
    for (std::string& c : UsageColumns(j)) row.push_back(std::move(c));
    rows.push_back(std::move(row));
  }
  PrintTable(headers, rows);
}

void PrintJobDetail(const json& j, const json& events) {
  std::printf("ID:          %s\nName:        %s\nTenant:      %s\nState:       %s\nPriority:    %s\n",
              Str(j, "id").c_str(), Str(j, "name").c_str(), Str(j, "tenant").c_str(), Str(j, "state").c_str(),
              Str(j, "priority").c_str());
  std::printf("Replicas:    %s\nResources:   %s (per replica)\nSubmitted:   %s ago\nRestarts:    %s\n",
              Str(j, "replicas").c_str(), Resources(j).c_str(), Age(Int(j, "submitted_at_us")).c_str(),
              Str(j, "restart_count", "0").c_str());
  const std::string reason = JobReason(j);
  if (reason != "-")
    std::printf("%s %s\n", Str(j, "state") == "queued" ? "Why pending:" : "Reason:     ", reason.c_str());
  if (j.contains("placement") && !j["placement"].empty()) {
    std::printf("\nPlacement:\n");
    std::vector<std::vector<std::string>> rows;
    for (const json& p : j["placement"]) {
      for (const json& d : p["devices"]) {
        rows.push_back({Str(p, "replica"), Str(p, "node"), Str(d, "uuid"), FormatGiB(Int(d, "memory_mib")),
                        FormatDevicePercent(Int(d, "compute_milli"))});
      }
      if (p["devices"].empty()) rows.push_back({Str(p, "replica"), Str(p, "node"), "-", "-", "-"});
    }
    PrintTable({"REPLICA", "NODE", "DEVICE", "MEMORY(GiB)", "GPU%"}, rows);
  }
  if (j.contains("tasks") && !j["tasks"].empty()) {
    std::printf("\nReplicas:\n");
    std::vector<std::vector<std::string>> rows;
    for (const json& t : j["tasks"]) {
      const std::string node = Str(t, "node");
      rows.push_back({Str(t, "replica"), Str(t, "state"), node.empty() ? "-" : node, ExitText(t)});
    }
    PrintTable({"REPLICA", "STATE", "NODE", "EXIT"}, rows);
  }
  if (j.contains("spec")) std::printf("\nSpec:\n%s\n", j["spec"].dump(2).c_str());
  std::printf("\nEvents:\n");
  std::vector<std::vector<std::string>> rows;
  for (const json& e : events) rows.push_back({Str(e, "time"), Str(e, "from", "-"), Str(e, "to"), Str(e, "reason")});
  PrintTable({"TIME", "FROM", "TO", "REASON"}, rows);
}

void PrintDeviceTable(const json& nodes) {
  std::vector<std::vector<std::string>> rows;
  for (const json& n : nodes) {
    for (const json& d : n.value("devices", json::array())) {
      const int64_t mem = Int(d, "memory_mib"), mem_used = Int(d, "memory_allocated_mib");
      const int64_t cores = Int(d, "compute_milli"), cores_used = Int(d, "compute_allocated_milli");
      rows.push_back({Str(n, "name"), Str(d, "index"), Str(d, "model"), GiBPair(mem_used, mem),
                      std::to_string(mem > 0 ? mem_used * 100 / mem : 0) + "%",
                      FormatDevicePercent(cores > 0 ? cores_used * 1000 / cores : 0), Str(d, "sharers", "0")});
    }
  }
  PrintTable({"NODE", "DEVICE", "MODEL", "MEMORY(GiB)", "MEM%", "GPU%", "TASKS"}, rows);
}

}  // namespace xpool::cli
