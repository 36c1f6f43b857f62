#pragma once
// ForwardingStateStore: a StateStore that passes every call to another one. Derive from it to change a few calls
// and keep the rest — a store that fails on demand in tests (testing/faulty_state_store.h), a layer that keeps
// something in memory. Holds a reference: the wrapped store outlives it. Thread-safe as the wrapped store is.
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "store/state_store.h"

namespace xpool {

class ForwardingStateStore : public StateStore {
 public:
  explicit ForwardingStateStore(StateStore& base) : base_(base) {}

  std::string_view Kind() const override { return base_.Kind(); }
  Result<int> SchemaVersion() override { return base_.SchemaVersion(); }
  Status Ping() override { return base_.Ping(); }

  Result<TenantRecord> CreateTenant(std::string_view name, bool admin, const TenantQuota& quota,
                                    TimeMicros now) override {
    return base_.CreateTenant(name, admin, quota, now);
  }
  Result<TenantRecord> GetTenant(TenantId id) override { return base_.GetTenant(id); }
  Result<TenantRecord> FindTenant(std::string_view name) override { return base_.FindTenant(name); }
  Result<std::vector<TenantRecord>> ListTenants() override { return base_.ListTenants(); }
  Status UpdateTenantQuota(TenantId id, const TenantQuota& quota) override {
    return base_.UpdateTenantQuota(id, quota);
  }
  Status UpdateTenantGuarantee(TenantId id, const TenantQuota& guaranteed) override {
    return base_.UpdateTenantGuarantee(id, guaranteed);
  }
  Status SetTenantPriorityQuotas(TenantId id, const std::vector<TenantPriorityQuota>& quotas) override {
    return base_.SetTenantPriorityQuotas(id, quotas);
  }
  Result<int64_t> AddToken(TenantId tenant, std::string_view plaintext, std::string_view label,
                           TimeMicros now) override {
    return base_.AddToken(tenant, plaintext, label, now);
  }
  Result<TenantRecord> Authenticate(std::string_view plaintext) override { return base_.Authenticate(plaintext); }
  Result<std::vector<TokenRecord>> ListTokens(TenantId tenant) override { return base_.ListTokens(tenant); }
  Status RevokeToken(int64_t token_id) override { return base_.RevokeToken(token_id); }

  Result<JobRecord> SubmitJob(TenantId tenant, const JobSpec& spec, TimeMicros now) override {
    return base_.SubmitJob(tenant, spec, now);
  }
  std::vector<Result<JobRecord>> SubmitJobs(const std::vector<std::pair<TenantId, JobSpec>>& jobs,
                                            TimeMicros now) override {
    return base_.SubmitJobs(jobs, now);
  }
  Result<JobRecord> GetJob(JobId id) override { return base_.GetJob(id); }
  Result<std::vector<JobRecord>> ListJobs(const JobFilter& filter) override { return base_.ListJobs(filter); }
  Status TransitionJob(JobId id, JobState to, std::string_view reason, TimeMicros now,
                       std::optional<JobState> expected = std::nullopt) override {
    return base_.TransitionJob(id, to, reason, now, expected);
  }
  Status CommitPlacement(JobId id, const std::vector<AllocationRecord>& allocations, std::string_view reason,
                         TimeMicros now) override {
    return base_.CommitPlacement(id, allocations, reason, now);
  }
  Result<JobRecord> SetJobPriority(JobId id, int priority, std::string_view reason, TimeMicros now) override {
    return base_.SetJobPriority(id, priority, reason, now);
  }
  Result<std::vector<std::pair<JobId, TimeMicros>>> SuspensionsSince(TimeMicros since) override {
    return base_.SuspensionsSince(since);
  }
  Status SetPendingReason(JobId id, std::string_view reason) override { return base_.SetPendingReason(id, reason); }
  Status SetPendingReasons(const std::vector<std::pair<JobId, std::string>>& reasons) override {
    return base_.SetPendingReasons(reasons);
  }

  Result<std::vector<TaskRecord>> ListTasks(JobId job) override { return base_.ListTasks(job); }
  Status UpdateTask(JobId job, int replica, JobState state, std::optional<int> exit_code, TimeMicros now) override {
    return base_.UpdateTask(job, replica, state, exit_code, now);
  }

  Result<std::vector<AllocationRecord>> ListAllocations() override { return base_.ListAllocations(); }
  Result<std::vector<AllocationRecord>> JobAllocations(JobId job) override { return base_.JobAllocations(job); }
  Result<std::vector<AllocationRecord>> JobAllocationsBetween(JobId first, JobId last) override {
    return base_.JobAllocationsBetween(first, last);
  }

  Status UpsertNode(const Node& node, TimeMicros now) override { return base_.UpsertNode(node, now); }
  Result<NodeRecord> GetNode(std::string_view name) override { return base_.GetNode(name); }
  Result<std::vector<NodeRecord>> ListNodes() override { return base_.ListNodes(); }
  Status SetNodeCordoned(std::string_view name, bool cordoned, TimeMicros now) override {
    return base_.SetNodeCordoned(name, cordoned, now);
  }
  Status SetNodeReady(std::string_view name, bool ready, TimeMicros now) override {
    return base_.SetNodeReady(name, ready, now);
  }
  Status DeleteNode(std::string_view name) override { return base_.DeleteNode(name); }

  Result<EventRecord> AppendEvent(const EventRecord& event) override { return base_.AppendEvent(event); }
  Result<std::vector<EventRecord>> JobEvents(JobId job, int limit = 0) override { return base_.JobEvents(job, limit); }
  Result<std::vector<EventRecord>> EventsSince(int64_t after_id, int limit = 0) override {
    return base_.EventsSince(after_id, limit);
  }
  Status AddUsage(const std::vector<UsageRecord>& rows) override { return base_.AddUsage(rows); }
  Result<std::vector<UsageRecord>> ListUsage(const UsageFilter& filter) override { return base_.ListUsage(filter); }
  Status CompactUsage(TimeMicros minutes_before, TimeMicros drop_before) override {
    return base_.CompactUsage(minutes_before, drop_before);
  }

 protected:
  StateStore& base() { return base_; }

 private:
  StateStore& base_;
};

}  // namespace xpool
