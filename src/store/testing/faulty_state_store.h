#pragma once
// FaultyStateStore: a StateStore for tests that fails chosen calls on demand — what a full disk or a lost
// database connection looks like to the code above the store. Every call not made to fail goes to the wrapped
// store. Test-only; thread-safe (the failure table has its own mutex).
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/forwarding_state_store.h"

namespace xpool {

class FaultyStateStore : public ForwardingStateStore {
 public:
  using ForwardingStateStore::ForwardingStateStore;

  // From now on, calls to `method` (its name in StateStore: "UpdateTask", "TransitionJob", "CommitPlacement",
  // "AppendEvent", "SetPendingReasons", "ListTasks") return `error` without reaching the wrapped store.
  void Fail(const std::string& method, Status error) {
    std::lock_guard lock(mu_);
    failing_[method] = std::move(error);
  }
  // Every call goes through again.
  void Heal() {
    std::lock_guard lock(mu_);
    failing_.clear();
  }
  // How many calls to `method` were refused.
  int refused(const std::string& method) const {
    std::lock_guard lock(mu_);
    auto it = refused_.find(method);
    return it == refused_.end() ? 0 : it->second;
  }

  Status UpdateTask(JobId job, int replica, JobState state, std::optional<int> exit_code, TimeMicros now) override {
    if (auto e = Refuse("UpdateTask")) return *e;
    return ForwardingStateStore::UpdateTask(job, replica, state, exit_code, now);
  }
  Status TransitionJob(JobId id, JobState to, std::string_view reason, TimeMicros now,
                       std::optional<JobState> expected = std::nullopt) override {
    if (auto e = Refuse("TransitionJob")) return *e;
    return ForwardingStateStore::TransitionJob(id, to, reason, now, expected);
  }
  Status CommitPlacement(JobId id, const std::vector<AllocationRecord>& allocations, std::string_view reason,
                         TimeMicros now) override {
    if (auto e = Refuse("CommitPlacement")) return *e;
    return ForwardingStateStore::CommitPlacement(id, allocations, reason, now);
  }
  Result<EventRecord> AppendEvent(const EventRecord& event) override {
    if (auto e = Refuse("AppendEvent")) return *e;
    return ForwardingStateStore::AppendEvent(event);
  }
  Status SetPendingReasons(const std::vector<std::pair<JobId, std::string>>& reasons) override {
    if (auto e = Refuse("SetPendingReasons")) return *e;
    return ForwardingStateStore::SetPendingReasons(reasons);
  }
  Result<std::vector<TaskRecord>> ListTasks(JobId job) override {
    if (auto e = Refuse("ListTasks")) return *e;
    return ForwardingStateStore::ListTasks(job);
  }

 private:
  std::optional<Status> Refuse(const std::string& method) {
    std::lock_guard lock(mu_);
    auto it = failing_.find(method);
    if (it == failing_.end()) return std::nullopt;
    ++refused_[method];
    return it->second;
  }

  mutable std::mutex mu_;
  std::map<std::string, Status> failing_;  // guarded by mu_
  std::map<std::string, int> refused_;     // guarded by mu_
};

}  // namespace xpool
