#pragma once
// JSON forms of the API's resources (nodes, tenants, quotas, jobs, events) and strict readers for request
// bodies: unknown fields and wrong types are InvalidArgument naming the field's path.
// Internal to src/server (pulls in nlohmann/json; include only from server .cc files). Stateless; thread-safe.
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "server/control_plane.h"
#include "store/state_store.h"

namespace xpool::server::internal {

using Json = nlohmann::json;

// InvalidArgument "body: malformed JSON: ..." on a parse error; the body must be an object.
Result<Json> ParseJsonObject(std::string_view body);
// The items of the list under `key` in a JSON object body (`{"jobs": [...]}`), as spans of `body`, without
// building the document: the body is checked to be JSON (and an object whose only field is `key`) by a scan that
// allocates nothing, so each item is parsed once, by its reader (POST /api/v1/jobs:batch hands each to
// ParseJobSpec). InvalidArgument as ParseJsonObject and CheckKeys word it; no items when the field is missing or not
// a list. Duplicate keys: the last one counts, as in ParseJsonObject.
Result<std::vector<std::string_view>> JsonListItems(std::string_view body, std::string_view key);
// Refuses keys of `object` outside `allowed` ("unknown field 'devices[0].modle'").
Status CheckKeys(const Json& object, const std::string& path, std::initializer_list<std::string_view> allowed);

// A node description: {"name", "cpu", "memory", "labels", "simulated", "devices": [{"model", "memory", "uuid",
// "vendor", "cores", "numa", "max_sharers", "mode"}], "gpus": {"count", "model", "memory", "vendor"}}.
// cpu accepts "500m"/2/"1.5"; memory "8Gi"/integer MiB. `simulated` defaults to true (no agent yet).
Result<Node> NodeFromJson(const Json& j);
Json NodeViewToJson(const NodeView& view);
// The text of NodeViewToJson(view).dump(-1, ' ', false, replace) without building the tree, in two parts around
// the value of "last_seen_us" (the node list keeps both parts per node and renders them again only when the node
// changed): the head ends with `"last_seen_us":`, the tail starts with `,"memory_allocated_mib"`.
// json_codec_test checks that head + last_seen_us + tail agrees with NodeViewToJson.
void AppendNodeJsonHead(std::string* out, const Node& node, const NodeUsage& usage);
void AppendNodeJsonTail(std::string* out, const Node& node, const NodeUsage& usage);

// {"devices", "device_memory", "device_compute_milli", "cpu", "memory"}; -1 or null = unlimited. Fields not
// given keep their value from `base`.
Result<TenantQuota> QuotaFromJson(const Json& j, const std::string& path, TenantQuota base);
Json QuotaToJson(const TenantQuota& quota);
// InvalidArgument naming the field when a guarantee is above the limit of the same resource (-1 = unset).
Status CheckGuaranteeWithinQuota(const TenantQuota& guaranteed, const TenantQuota& quota);
// Per-priority limits: [{"min_priority": 80, "max_priority": 100, "quota": {...as QuotaFromJson}}, ...]; a
// priority is 0..100 or low/normal/high; [] or null = none.
Result<std::vector<TenantPriorityQuota>> PriorityQuotasFromJson(const Json& j, const std::string& path);
Json TenantToJson(const TenantRecord& tenant);

// `spec`: the job's spec as JSON when the caller has it (SpecJson), else it is made here.
Json JobToJson(const JobRecord& job, const std::string& tenant_name, const std::string& reason,
               const std::vector<AllocationRecord>* placement, const Json* spec = nullptr);
// The text of JobToJson(...).dump(-1, ' ', false, replace), appended to `out` without building the tree (the API
// writes job lists of up to 1,000 jobs this way); `spec_text` is SpecText(job.spec). json_codec_test checks
// that both agree.
void AppendJobJson(std::string* out, const JobRecord& job, const std::string& tenant_name, const std::string& reason,
                   const std::vector<AllocationRecord>* placement, std::string_view spec_text);
// The spec as the API shows it (JobSpecToJson's canonical form as a JSON value), and as compact text.
Json SpecJson(const JobSpec& spec);
std::string SpecText(const JobSpec& spec);
Json EventToJson(const EventRecord& event);
// A job's replicas: [{"replica", "state", "node" (where it was placed; kept after the job ended), "exit_code" and
// "signal" (null unless it ended so)}].
Json TasksToJson(const std::vector<TaskRecord>& tasks);

// RFC 3339 UTC with milliseconds: "2026-11-30T13:05:51.123Z".
std::string FormatTime(TimeMicros us);

}  // namespace xpool::server::internal
