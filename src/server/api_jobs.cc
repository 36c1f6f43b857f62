// The job routes of the REST API (Api::Impl, internal/api_impl.h): submit, validate, list, get, cancel,
// suspend, resume, priority, events and logs.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "model/job_spec.h"
#include "model/job_spec_position.h"
#include "model/job_state.h"
#include "protocol/log_relay.h"
#include "server/interactive_proxy.h"
#include "server/internal/api_impl.h"
#include "server/internal/json_codec.h"
#include "server/proxy_sessions.h"

namespace xpool::server {
namespace {

using internal::Json;
using internal::JsonResponse;

Result<JobId> ParseJobId(const std::string& text) {
  int64_t v = 0;
  if (text.empty() || text.size() > 18) return NotFoundError("job " + text + " not found");
  for (char c : text) {
    if (c < '0' || c > '9') return NotFoundError("job " + text + " not found");
    v = v * 10 + (c - '0');
  }
  return JobId(v);
}

// The list's cursor: opaque to clients (docs/api.md); today the last id of the page, in hex after a version tag,
// so what it holds can change without breaking a client that passes it back as given.
constexpr std::string_view kCursorTag = "c1.";

std::string EncodeCursor(JobId last) {
  char hex[17];
  const int n = std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(last.value()));
  return std::string(kCursorTag) + std::string(hex, static_cast<size_t>(n));
}

Result<JobId> DecodeCursor(const std::string& text) {
  const Status bad = InvalidArgumentError("cursor: not a cursor this server gave (pass next_cursor back unchanged)");
  if (text.size() <= kCursorTag.size() || text.size() > kCursorTag.size() + 15 || !text.starts_with(kCursorTag)) {
    return bad;
  }
  int64_t v = 0;
  for (char c : std::string_view(text).substr(kCursorTag.size())) {
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (d < 0) return bad;
    v = v * 16 + d;
  }
  return JobId(v);
}

}  // namespace

Result<JobRecord> Api::Impl::VisibleJob(const Caller& caller, const std::string& id_text) {
  ASSIGN_OR_RETURN(JobId id, ParseJobId(id_text));
  auto job = store.GetJob(id);
  if (!job.ok()) {
    if (job.status().code() == StatusCode::kNotFound) return NotFoundError("job " + id_text + " not found");
    return job.status();
  }
  if (!caller.tenant.admin && job->tenant != caller.tenant.id) return NotFoundError("job " + id_text + " not found");
  return job;
}

std::string Api::Impl::JobText(const JobRecord& job, bool with_placement) {
  std::string reason = job.state == JobState::kQueued ? control.PendingReason(job.id) : "";
  if (reason.empty() && job.state == JobState::kQueued) reason = job.pending_reason;
  std::vector<AllocationRecord> placement;
  if (with_placement && HoldsAllocation(job.state)) {
    auto p = store.JobAllocations(job.id);
    if (p.ok()) placement = std::move(*p);
  }
  std::string out;
  internal::AppendJobJson(&out, job, TenantName(job.tenant), reason, &placement, *SpecText(job));
  return out;
}

std::shared_ptr<const std::string> Api::Impl::SpecText(const JobRecord& job) {
  {
    std::lock_guard lock(cache_mu);
    auto it = spec_text.find(job.id.value());
    if (it != spec_text.end()) return it->second;
  }
  auto made = std::make_shared<const std::string>(internal::SpecText(job.spec));
  std::lock_guard lock(cache_mu);
  if (spec_text.size() >= 65536) spec_text.clear();  // a simple bound; refills on demand
  spec_text[job.id.value()] = made;
  return made;
}

std::optional<std::map<JobId, std::vector<AllocationRecord>>> Api::Impl::PagePlacements(
    const std::vector<std::shared_ptr<const JobRecord>>& jobs) {
  size_t holding = 0;
  for (const auto& j : jobs) holding += HoldsAllocation(j->state) ? 1 : 0;
  if (holding < 2 || jobs.back()->id.value() - jobs.front()->id.value() >= 4 * static_cast<int64_t>(jobs.size())) {
    return std::nullopt;
  }
  auto all = store.JobAllocationsBetween(jobs.front()->id, jobs.back()->id);
  if (!all.ok()) return std::nullopt;
  std::map<JobId, std::vector<AllocationRecord>> out;
  for (AllocationRecord& a : *all) out[a.job].push_back(std::move(a));
  return out;
}

Result<CachingStateStore::JobPage> Api::Impl::JobPage(JobFilter filter) {
  if (job_cache != nullptr) return job_cache->ListJobRefs(filter);
  const int limit = filter.limit;
  filter.limit = limit + 1;  // one more than the page: whether another page follows
  ASSIGN_OR_RETURN(std::vector<JobRecord> jobs, store.ListJobs(filter));
  CachingStateStore::JobPage page;
  page.more = static_cast<int>(jobs.size()) > limit;
  if (page.more) jobs.resize(static_cast<size_t>(limit));
  page.jobs.reserve(jobs.size());
  for (JobRecord& j : jobs) page.jobs.push_back(std::make_shared<const JobRecord>(std::move(j)));
  return page;
}

Result<TenantId> Api::Impl::SubmitTenant(const Caller& caller, const JobSpec& spec) {
  if (spec.tenant.empty() || spec.tenant == caller.tenant.name) return caller.tenant.id;
  if (!caller.tenant.admin) {
    return PermissionDeniedError("tenant: your token belongs to tenant " + caller.tenant.name + ", not " + spec.tenant);
  }
  auto t = store.FindTenant(spec.tenant);
  if (!t.ok()) return InvalidArgumentError("tenant: no tenant named " + spec.tenant);
  return t->id;
}

Result<ApiResponse> Api::Impl::SubmitJob(const ApiRequest& req, const Caller& caller, const Params&) {
  ASSIGN_OR_RETURN(JobSpec spec, ParseJobSpec(req.body));
  ASSIGN_OR_RETURN(TenantId tenant, SubmitTenant(caller, spec));
  ASSIGN_OR_RETURN(JobRecord job, control.Submit(tenant, spec));
  return JsonResponse(201, Json{{"id", job.id.value()}, {"state", std::string(JobStateName(job.state))}});
}

Result<ApiResponse> Api::Impl::ValidateJob(const ApiRequest& req, const Caller& caller, const Params&) {
  TextPosition where;
  Result<JobSpec> spec = ParseJobSpecAt(req.body, &where);
  Status problem = spec.status();
  if (spec.ok()) {
    Result<TenantId> tenant = SubmitTenant(caller, *spec);
    if (tenant.ok()) {
      return JsonResponse(200,
                          Json{{"valid", true}, {"tenant", TenantName(*tenant)}, {"spec", internal::SpecJson(*spec)}});
    }
    problem = tenant.status();
    where = LocateJobSpecField(req.body, "tenant");
  }
  // What submit would refuse the spec for is the answer; anything else (the store down) is this request's error.
  if (problem.code() != StatusCode::kInvalidArgument && problem.code() != StatusCode::kPermissionDenied) {
    return problem;
  }
  return JsonResponse(200, Json{{"valid", false},
                                {"error",
                                 {{"code", std::string(StatusCodeName(problem.code()))},
                                  {"message", problem.message()},
                                  {"line", where.line},
                                  {"column", where.column}}}});
}

Result<ApiResponse> Api::Impl::SubmitJobs(const ApiRequest& req, const Caller& caller, const Params&) {
  // The specs as spans of the body: each is parsed once, by ParseJobSpec (no document of the whole batch).
  ASSIGN_OR_RETURN(std::vector<std::string_view> items, internal::JsonListItems(req.body, "jobs"));
  if (items.empty()) return InvalidArgumentError("jobs must be a non-empty list of job specs");
  if (items.size() > kMaxBatchJobs) {
    return InvalidArgumentError("jobs: at most " + std::to_string(kMaxBatchJobs) + " jobs per batch (got " +
                                std::to_string(items.size()) + ")");
  }
  // Every spec is read and its tenant checked before anything is stored: one bad spec refuses the batch.
  std::vector<std::pair<TenantId, JobSpec>> jobs;
  jobs.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string where = "jobs[" + std::to_string(i) + "]";
    if (items[i][0] != '{') return InvalidArgumentError(where + " must be a job spec (an object)");
    Result<JobSpec> spec = ParseJobSpec(items[i]);
    if (!spec.ok()) return spec.status().WithContext(where);
    Result<TenantId> tenant = SubmitTenant(caller, *spec);
    if (!tenant.ok()) return tenant.status().WithContext(where);
    jobs.emplace_back(*tenant, std::move(*spec));
  }
  ASSIGN_OR_RETURN(std::vector<Result<JobRecord>> stored, control.SubmitMany(jobs));
  // The store refuses a batch as a whole when the database refuses the write: that error, as for one job.
  bool any = false;
  for (const Result<JobRecord>& job : stored) any = any || job.ok();
  if (!any && !stored.empty()) return stored.front().status();
  Json out = Json::array();
  for (const Result<JobRecord>& job : stored) {
    if (job.ok()) {
      out.push_back(Json{{"id", job->id.value()}, {"state", std::string(JobStateName(job->state))}});
    } else {
      out.push_back(
          Json{{"error",
                {{"code", std::string(StatusCodeName(job.status().code()))}, {"message", job.status().message()}}}});
    }
  }
  return JsonResponse(201, Json{{"jobs", std::move(out)}});
}

Result<ApiResponse> Api::Impl::ListJobs(const ApiRequest& req, const Caller& caller, const Params&) {
  JobFilter filter;
  if (!caller.tenant.admin) filter.tenant = caller.tenant.id;
  if (auto it = req.query.find("tenant"); it != req.query.end() && !it->second.empty()) {
    if (caller.tenant.admin) {
      auto t = store.FindTenant(it->second);
      if (!t.ok()) return InvalidArgumentError("tenant: no tenant named " + it->second);
      filter.tenant = t->id;
    } else if (it->second != caller.tenant.name) {
      return JsonResponse(200, Json{{"jobs", Json::array()}});
    }
  }
  if (auto it = req.query.find("state"); it != req.query.end() && !it->second.empty()) {
    std::stringstream states(it->second);
    std::string one;
    while (std::getline(states, one, ',')) {
      auto s = ParseJobState(one);
      if (!s.ok()) return InvalidArgumentError("state: " + s.status().message());
      filter.states.push_back(*s);
    }
  }
  int limit = options.default_list_limit;
  if (auto it = req.query.find("limit"); it != req.query.end()) {
    auto v = ParseNonNegativeIntText(it->second);
    if (!v.ok() || *v < 1 || *v > 100000) return InvalidArgumentError("limit must be 1..100000");
    limit = static_cast<int>(*v);
  }
  const auto cursor = req.query.find("cursor");
  if (auto it = req.query.find("after"); it != req.query.end()) {
    if (cursor != req.query.end()) return InvalidArgumentError("after: give cursor or after, not both");
    auto v = ParseNonNegativeIntText(it->second);
    if (!v.ok()) return InvalidArgumentError("after must be a job id");
    filter.after = JobId(*v);
  }
  if (cursor != req.query.end()) {
    ASSIGN_OR_RETURN(filter.after, DecodeCursor(cursor->second));
  }
  // Pages run in id order and ids only grow: a job submitted while a client pages shows up once, on a later page.
  filter.limit = limit;
  ASSIGN_OR_RETURN(CachingStateStore::JobPage page, JobPage(filter));
  const std::vector<std::shared_ptr<const JobRecord>>& jobs = page.jobs;
  // The page is written straight into the body (no JSON tree per job): the same text JobToJson would give.
  const auto placements = PagePlacements(jobs);
  std::vector<JobId> queued;
  for (const auto& j : jobs) {
    if (j->state == JobState::kQueued) queued.push_back(j->id);
  }
  const std::vector<std::string> reasons = control.PendingReasons(queued);  // one lock for the page
  std::unordered_map<int64_t, std::string> tenant_names_here;
  std::string body = "{\"jobs\":[";
  body.reserve(jobs.size() * 1024);
  size_t next_reason = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobRecord& j = *jobs[i];
    std::vector<AllocationRecord> own;
    const std::vector<AllocationRecord>* p = &own;
    if (placements) {
      auto it = HoldsAllocation(j.state) ? placements->find(j.id) : placements->end();
      if (it != placements->end()) p = &it->second;
    } else if (HoldsAllocation(j.state)) {
      auto read = store.JobAllocations(j.id);
      if (read.ok()) own = std::move(*read);
    }
    std::string reason = j.state == JobState::kQueued ? reasons[next_reason++] : "";
    if (reason.empty() && j.state == JobState::kQueued) reason = j.pending_reason;
    auto name = tenant_names_here.find(j.tenant.value());
    if (name == tenant_names_here.end()) name = tenant_names_here.emplace(j.tenant.value(), TenantName(j.tenant)).first;
    if (i > 0) body.push_back(',');
    job_text.Append(&body, jobs[i], name->second, reason, *p, *SpecText(j));
  }
  body.push_back(']');
  if (page.more) body += ",\"next_cursor\":\"" + EncodeCursor(jobs.back()->id) + "\"";
  body.push_back('}');
  return ApiResponse{200, internal::kJsonContentType, std::move(body)};
}

Result<ApiResponse> Api::Impl::GetJob(const ApiRequest&, const Caller& caller, const Params& p) {
  ASSIGN_OR_RETURN(JobRecord job, VisibleJob(caller, p[0]));
  // One job: its replicas too (exit code or signal, and the node each ran on, kept after the job ended).
  Json out = Json::parse(JobText(job, true), nullptr, /*allow_exceptions=*/false);
  ASSIGN_OR_RETURN(std::vector<TaskRecord> tasks, store.ListTasks(job.id));
  if (out.is_discarded()) return InternalError("job " + p[0] + ": its JSON text does not parse");
  out["tasks"] = internal::TasksToJson(tasks);
  return JsonResponse(200, out);
}

Result<ApiResponse> Api::Impl::CancelJob(const ApiRequest&, const Caller& caller, const Params& p) {
  ASSIGN_OR_RETURN(JobRecord job, VisibleJob(caller, p[0]));
  ASSIGN_OR_RETURN(JobRecord after, control.Cancel(job.id, "cancelled by " + caller.tenant.name));
  return ApiResponse{200, internal::kJsonContentType, JobText(after, false)};
}

Result<ApiResponse> Api::Impl::SuspendJob(const ApiRequest&, const Caller& caller, const Params& p) {
  ASSIGN_OR_RETURN(JobRecord job, VisibleJob(caller, p[0]));
  ASSIGN_OR_RETURN(JobRecord after, control.Suspend(job.id));
  return ApiResponse{200, internal::kJsonContentType, JobText(after, false)};
}

Result<ApiResponse> Api::Impl::ResumeJob(const ApiRequest&, const Caller& caller, const Params& p) {
  ASSIGN_OR_RETURN(JobRecord job, VisibleJob(caller, p[0]));
  ASSIGN_OR_RETURN(JobRecord after, control.Resume(job.id));
  return ApiResponse{200, internal::kJsonContentType, JobText(after, false)};
}

Result<ApiResponse> Api::Impl::PatchJob(const ApiRequest& req, const Caller& caller, const Params& p) {
  ASSIGN_OR_RETURN(JobRecord job, VisibleJob(caller, p[0]));
  ASSIGN_OR_RETURN(Json body, internal::ParseJsonObject(req.body));
  RETURN_IF_ERROR(internal::CheckKeys(body, "", {"priority"}));
  if (!body.contains("priority")) return InvalidArgumentError("priority: required (the only field to change)");
  const Json& v = body["priority"];
  Result<int> priority = InvalidArgumentError("");
  if (v.is_string()) priority = ParsePriority(v.get<std::string>());
  if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= kMaxPriority) {
    priority = static_cast<int>(v.get<int64_t>());
  }
  if (!priority.ok()) return InvalidArgumentError("priority must be 0..100 or low, normal, high, not " + v.dump());
  ASSIGN_OR_RETURN(JobRecord after, control.SetPriority(job.id, *priority, caller.tenant.name));
  return ApiResponse{200, internal::kJsonContentType, JobText(after, false)};
}

Result<ApiResponse> Api::Impl::JobEvents(const ApiRequest&, const Caller& caller, const Params& p) {
  ASSIGN_OR_RETURN(JobRecord job, VisibleJob(caller, p[0]));
  ASSIGN_OR_RETURN(std::vector<EventRecord> events, store.JobEvents(job.id));
  Json out = {{"events", Json::array()}};
  for (const EventRecord& e : events) out["events"].push_back(internal::EventToJson(e));
  return JsonResponse(200, out);
}

Result<ApiResponse> Api::Impl::CreateProxySession(const ApiRequest&, const Caller& caller, const Params& p) {
  ASSIGN_OR_RETURN(JobRecord job, VisibleJob(caller, p[0]));
  if (!job.spec.interactive) return FailedPreconditionError("job " + p[0] + " is not interactive (kind: interactive)");
  if (IsTerminal(job.state)) {
    return FailedPreconditionError("job " + p[0] + " is " + std::string(JobStateName(job.state)));
  }
  if (options.proxy_sessions == nullptr) return UnavailableError("the interactive proxy is not served here");
  ASSIGN_OR_RETURN(ProxySessions::Code code, options.proxy_sessions->CreateCode(job.id));
  const std::string path = InteractiveProxyBase(job.id);
  return JsonResponse(201, Json{{"url", path + "?" + std::string(kProxySessionParam) + "=" + code.code},
                                {"path", path},
                                {"expires_us", code.expires_us}});
}

Result<JobRecord> Api::VisibleJobFor(const std::string& authorization, const std::string& id_text) {
  ApiRequest request;
  request.authorization = authorization;
  ASSIGN_OR_RETURN(Impl::Caller caller, impl_->Authenticate(request));
  if (!caller.node.empty()) return PermissionDeniedError("a node token cannot open a job's proxy");
  return impl_->VisibleJob(caller, id_text);
}

bool Api::Impl::LogComplete(const JobRecord& job, int replica, const Result<protocol::LogSlice>& slice) {
  // Its end is known and this read reached it.
  if (slice.ok()) return slice->end_offset >= 0 && slice->next_offset >= slice->end_offset;
  // Nothing held: complete when no agent will ever send any — the replica never ran on an agent's node (never
  // placed, placed on a simulated node without an agent, or on a node since removed).
  auto tasks = store.ListTasks(job.id);
  if (!tasks.ok()) return true;
  for (const TaskRecord& t : *tasks) {
    if (t.replica != replica || t.node.empty()) continue;
    auto node = control.GetNode(t.node);
    return !node.ok() || node->node.simulated;
  }
  return true;
}

Result<ApiResponse> Api::Impl::JobLogs(const ApiRequest& req, const Caller& caller, const Params& p) {
  ASSIGN_OR_RETURN(JobRecord job, VisibleJob(caller, p[0]));
  int64_t replica = 0, offset = -1, limit = 1 << 20;
  const std::pair<const char*, int64_t*> fields[] = {{"replica", &replica}, {"offset", &offset}, {"limit", &limit}};
  for (const auto& [key, out] : fields) {
    auto it = req.query.find(key);
    if (it == req.query.end()) continue;
    auto v = ParseNonNegativeIntText(it->second);
    if (!v.ok()) return InvalidArgumentError(std::string(key) + " must be a non-negative number");
    *out = *v;
  }
  if (replica >= job.spec.replicas) {
    return InvalidArgumentError("replica " + std::to_string(replica) + ": job " + p[0] + " has " +
                                std::to_string(job.spec.replicas) + " replica(s)");
  }
  const std::string task = "job" + std::to_string(job.id.value()) + "-r" + std::to_string(replica);
  Json out = {{"job_id", job.id.value()},
              {"replica", replica},
              {"task_id", task},
              {"state", std::string(JobStateName(job.state))},
              {"done", false},
              {"first_offset", 0},
              {"offset", std::max<int64_t>(offset, 0)},
              {"next_offset", std::max<int64_t>(offset, 0)},
              {"data", ""}};
  if (options.logs == nullptr) return NotFoundError("this server keeps no task logs");
  auto slice = options.logs->Read(task, offset, std::max<int64_t>(limit, 1));
  if (slice.ok()) {
    out["first_offset"] = slice->first_offset;
    out["offset"] = slice->offset;
    out["next_offset"] = slice->next_offset;
    out["data"] = std::move(slice->data);
  }
  out["done"] = IsTerminal(job.state) && LogComplete(job, static_cast<int>(replica), slice);
  return JsonResponse(200, out);
}

}  // namespace xpool::server
