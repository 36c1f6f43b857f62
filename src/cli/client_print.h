#pragma once
// The user CLI's views of API objects (docs/api.md): job, node and tenant tables (plain and -o wide), a job's
// `describe`, and `top`'s device table — every amount in the display style of common/units.h (GiB with one
// decimal, CPU in cores, GPU shares in percent). Stateless functions that print to stdout; thread-safe.
#include <nlohmann/json.hpp>
#include <string>

namespace xpool::cli {

// j[key] as text ("" → fallback when absent or null); a number as its digits.
std::string Str(const nlohmann::json& j, const char* key, const std::string& fallback = "");
// j[key] when it is a number, else 0.
int64_t Int(const nlohmann::json& j, const char* key);

// Why a job is where it is, for its REASON column: a queued job's wait reason; a failed, cancelled, suspended
// (held) or suspending job's state reason (e.g. "replica 0 exited with code 3"); "-" otherwise.
std::string JobReason(const nlohmann::json& job);
// A tenant quota or guarantee object ("devices", "device_memory_mib", ...) as "devices=8 gpumem=80.0GiB ...".
std::string QuotaText(const nlohmann::json& quota, const std::string& none);

// Tables of API list items (the "jobs", "nodes" or "tenants" arrays, or one object in an array).
void PrintJobTable(const nlohmann::json& jobs, bool wide);
void PrintNodeTable(const nlohmann::json& nodes, bool wide);
void PrintTenantTable(const nlohmann::json& tenants, bool wide);
// `xpool describe JOB`: the job (GET /jobs/{id}, with its "tasks") and its events.
void PrintJobDetail(const nlohmann::json& job, const nlohmann::json& events);
// `xpool top`: one row per device of `nodes`.
void PrintDeviceTable(const nlohmann::json& nodes);
// GET /api/v1/usage: GPU-hours allocated and used (and the share of time measured) per tenant, then per job when
// the reply has "jobs".
void PrintUsageTables(const nlohmann::json& usage);

}  // namespace xpool::cli
