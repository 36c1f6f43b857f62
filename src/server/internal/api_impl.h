#pragma once
// Api::Impl: the REST API's route handlers and their shared plumbing (auth, caches, metrics), split over
// api.cc (route table, dispatch, auth, nodes, tenants, operations) and api_jobs.cc (the job routes).
// Internal to src/server (pulls in nlohmann/json). Owned by Api; thread-safe: handlers run on many HTTP worker
// threads at once; the caches are guarded by cache_mu.
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/log_relay.h"
#include "server/api.h"
#include "server/internal/job_text_cache.h"
#include "server/internal/json_codec.h"
#include "server/internal/node_list.h"
#include "store/caching_state_store.h"

namespace xpool::server {
namespace internal {

// kNode: an admin token, or the node token of the node the route names (agent routes only).
enum class Access { kPublic, kTenant, kAdmin, kNode };

// With the charset parameter Debian's cpp-httplib (0.11, built with Brotli) does not compress API answers: it
// picks Brotli at its slowest setting whenever a client (every browser) accepts it, which made a 1,000-job list
// take ~7 s instead of ~0.5 s. API answers go to local clients and Studio; bandwidth is not the constraint.
inline constexpr const char* kJsonContentType = "application/json; charset=utf-8";

ApiResponse JsonResponse(int status, const Json& body);
ApiResponse ErrorResponse(const Status& s);

}  // namespace internal

struct Api::Impl {
  using Json = internal::Json;
  struct Caller {
    TenantRecord tenant;
    std::string node;  // set for a node token: the node it serves
  };
  using Params = std::vector<std::string>;
  using Handler = Result<ApiResponse> (Impl::*)(const ApiRequest&, const Caller&, const Params&);
  struct Route {
    const char* method;
    const char* pattern;
    internal::Access access;
    Handler handler;
    const char* summary;
  };

  Impl(StateStore& s, ControlPlane& c, MetricsRegistry& m, Clock& k, ApiOptions o)
      : store(s), job_cache(dynamic_cast<CachingStateStore*>(&s)), control(c), metrics(m), clock(k), options(o) {}

  StateStore& store;
  // `store` itself when it is the job cache (the server's): job pages are read from it without copies. Else null.
  CachingStateStore* job_cache;
  ControlPlane& control;
  MetricsRegistry& metrics;
  Clock& clock;
  ApiOptions options;

  internal::NodeListCache node_list;  // GET /api/v1/nodes
  internal::JobTextCache job_text;    // GET /api/v1/jobs

  std::mutex cache_mu;
  struct CachedAuth {
    TenantRecord tenant;
    TimeMicros expires_us;
  };
  std::unordered_map<std::string, CachedAuth> auth_cache;                     // by token hash; guarded by cache_mu
  std::unordered_map<int64_t, std::string> tenant_names;                      // guarded by cache_mu
  std::unordered_map<int64_t, std::shared_ptr<const std::string>> spec_text;  // by job id; guarded by cache_mu

  static const std::vector<Route>& Routes();
  ApiResponse Dispatch(const ApiRequest& req, std::string* route_name);

  // ---- plumbing (api.cc) ----
  Result<Caller> Authenticate(const ApiRequest& req);
  static Result<Caller> WithNode(const TenantRecord& tenant, const std::string& token);
  // Node routes: an admin, or the node token of `node`.
  static Status CheckNode(const Caller& caller, const std::string& node);
  std::string TenantName(TenantId id);
  static Result<int64_t> ParseNonNegativeIntText(const std::string& text);
  // One request in the API's metrics (gRPC agent calls too: method "GRPC", code the HTTP status of the result).
  void Count(const std::string& route, const std::string& method, int code,
             std::chrono::steady_clock::time_point start);
  // The caller of an agent call outside the route table: an admin, or the node token of `node`.
  Status AuthorizeAgent(const std::string& authorization, const std::string& node);

  // ---- jobs (api_jobs.cc) ----
  // A job the caller may see; others' jobs are NotFound, exactly like missing ones.
  Result<JobRecord> VisibleJob(const Caller& caller, const std::string& id_text);
  // A job as the API shows it (internal::AppendJobJson); with_placement: read its placement too.
  std::string JobText(const JobRecord& job, bool with_placement);
  // A job's spec never changes after submit: its JSON text is made once (dump + parse per job made up a good
  // part of a 1,000-job list).
  std::shared_ptr<const std::string> SpecText(const JobRecord& job);
  // The placements of a page of jobs (ordered by id) in one read when the page's ids are dense, else none
  // (ListJobs reads each job's own).
  std::optional<std::map<JobId, std::vector<AllocationRecord>>> PagePlacements(
      const std::vector<std::shared_ptr<const JobRecord>>& jobs);
  // The jobs matching `filter` (limit > 0) in id order, and whether more match after them: the job cache's own
  // snapshots, or copies of what the store reads.
  Result<CachingStateStore::JobPage> JobPage(JobFilter filter);

  Result<ApiResponse> SubmitJob(const ApiRequest& req, const Caller& caller, const Params&);
  // POST /api/v1/jobs:batch {"jobs": [spec, ...]}: every spec read and checked first, then one store transaction.
  Result<ApiResponse> SubmitJobs(const ApiRequest& req, const Caller& caller, const Params&);
  // A dry run of SubmitJob: the same parser and tenant check, nothing stored; the verdict with the error's line
  // and column (docs/api.md).
  Result<ApiResponse> ValidateJob(const ApiRequest& req, const Caller& caller, const Params&);
  static constexpr size_t kMaxBatchJobs = 10000;
  // The tenant a submitted spec runs as: the caller's, or the one its `tenant:` names (admin tokens only).
  Result<TenantId> SubmitTenant(const Caller& caller, const JobSpec& spec);
  Result<ApiResponse> ListJobs(const ApiRequest& req, const Caller& caller, const Params&);
  Result<ApiResponse> GetJob(const ApiRequest&, const Caller& caller, const Params& p);
  Result<ApiResponse> CancelJob(const ApiRequest&, const Caller& caller, const Params& p);
  Result<ApiResponse> SuspendJob(const ApiRequest&, const Caller& caller, const Params& p);
  Result<ApiResponse> ResumeJob(const ApiRequest&, const Caller& caller, const Params& p);
  // PATCH {"priority": 0..100 | "low" | "normal" | "high"} (admin): an event records old -> new and by whom.
  Result<ApiResponse> PatchJob(const ApiRequest& req, const Caller& caller, const Params& p);
  Result<ApiResponse> JobEvents(const ApiRequest&, const Caller& caller, const Params& p);
  // An interactive job's one-time link to its proxy (ProxySessions): 201 {url, path, expires_us}.
  Result<ApiResponse> CreateProxySession(const ApiRequest&, const Caller& caller, const Params& p);
  // Output of one replica, from the agents' log chunks (protocol::LogRelay). Query: replica (default 0), offset
  // (default: the last `limit` bytes), limit (default 1 MiB).
  Result<ApiResponse> JobLogs(const ApiRequest& req, const Caller& caller, const Params& p);
  // Whether `slice` (a read of `replica`'s log) reaches the end of the whole log, or no agent will ever send one:
  // the logs route's `done` once the job has ended (the exit line is the log's last line).
  bool LogComplete(const JobRecord& job, int replica, const Result<protocol::LogSlice>& slice);

  // ---- nodes and agents (api.cc) ----
  Result<ApiResponse> ListNodes(const ApiRequest&, const Caller&, const Params&);
  Result<ApiResponse> GetNode(const ApiRequest&, const Caller&, const Params& p);
  Result<ApiResponse> RegisterNode(const ApiRequest& req, const Caller& caller, const Params&);
  // A bare heartbeat marks the node seen; an agent's (with "tasks") applies its task reports, keeps its log
  // chunks and answers with every task wanted on the node (AgentService, the code `xpool up` uses in-process).
  Result<ApiResponse> Heartbeat(const ApiRequest& req, const Caller& caller, const Params& p);
  // The agent protocol, for both transports (this route table and Api::RegisterAgentNode/AgentHeartbeat).
  // An agent runs this node: its jobs wait for its reports. Simulated devices stay visible as a label.
  Status RegisterAgent(Node node);
  // Keeps the reports' log chunks and answers with the tasks wanted on `node` (AgentService).
  Result<protocol::HeartbeatReply> AgentBeat(const std::string& node, const protocol::HeartbeatRequest& beat);
  // A node token for one node: tenant kNodeTenant (created on first use), text "xpn.<node>.<secret>".
  Result<ApiResponse> CreateNodeToken(const ApiRequest&, const Caller&, const Params& p);
  Result<ApiResponse> Cordon(const ApiRequest&, const Caller&, const Params& p);
  Result<ApiResponse> Uncordon(const ApiRequest&, const Caller&, const Params& p);

  // ---- tenants and tokens (api.cc) ----
  Result<ApiResponse> ListTenants(const ApiRequest&, const Caller&, const Params&);
  Result<ApiResponse> CreateTenant(const ApiRequest& req, const Caller&, const Params&);
  Result<TenantRecord> NamedTenant(const Caller& caller, const std::string& name);
  Result<ApiResponse> GetTenant(const ApiRequest&, const Caller& caller, const Params& p);
  Result<ApiResponse> PatchTenant(const ApiRequest& req, const Caller& caller, const Params& p);
  Result<ApiResponse> CreateToken(const ApiRequest& req, const Caller&, const Params& p);
  Result<ApiResponse> WhoAmI(const ApiRequest&, const Caller& caller, const Params&);
  Result<ApiResponse> UsageHistoryRoute(const ApiRequest& req, const Caller&, const Params&);
  // GET /api/v1/usage (api_usage.cc): GPU-hours allocated and used per tenant (by=job: per job too) and allocation
  // against use over time, from the store's usage history. A tenant token sees its own tenant only.
  Result<ApiResponse> Usage(const ApiRequest& req, const Caller& caller, const Params&);

  // ---- operations (api.cc) ----
  Result<ApiResponse> Healthz(const ApiRequest&, const Caller&, const Params&);
  Result<ApiResponse> Readyz(const ApiRequest&, const Caller&, const Params&);
  Result<ApiResponse> Metrics(const ApiRequest&, const Caller&, const Params&);
  Result<ApiResponse> OpenApi(const ApiRequest&, const Caller&, const Params&);
};

}  // namespace xpool::server
