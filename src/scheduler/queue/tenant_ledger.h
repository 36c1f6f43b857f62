#pragma once
// TenantLedger: what each tenant holds during one scheduling pass — in total and per priority-limit
// band — and the quota questions asked of it: does new work stay within the limits (and if not, the
// reason a user reads), does it stay within the guarantee, is the tenant above its guarantee, what
// is its dominant share.
//
// Built from the tenant list and the running jobs at the start of a pass, then updated as the pass
// places and suspends work. Owned by one pass (or by whoever asks for a queue order); not
// thread-safe.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/cluster_state.h"
#include "scheduler/queue/queue_types.h"

namespace xpool {

class TenantLedger {
 public:
  // Tenants that fail ValidateTenant, or repeat an id, are kept with their error: their jobs are
  // refused.
  explicit TenantLedger(const std::vector<Tenant>& tenants);

  int size() const { return static_cast<int>(tenants_.size()); }
  // Index of the tenant with this id; -1 when unknown.
  int IndexOf(TenantId id) const;
  const Tenant& tenant(int index) const { return *tenants_[index]; }
  const Status& error(int index) const { return errors_[index]; }
  const ResourceAmounts& usage(int index) const { return usage_[index]; }
  // Bumped whenever the tenant's usage changes (lets callers cache what they derive from it).
  uint64_t version(int index) const { return version_[index]; }

  // Books or returns what a job of `priority` holds.
  void Add(int index, int priority, const ResourceAmounts& amounts);
  void Remove(int index, int priority, const ResourceAmounts& amounts);

  // Empty when `demand` at `priority` stays within every limit of the tenant; otherwise the first
  // limit it breaks, e.g. "tenant a at its gpu limit (8000/8000 milli)". Limits below current use
  // are respected for new work only: the answer for running work is never asked.
  std::string LimitReason(int index, int priority, const ResourceAmounts& demand) const {
    if (!limited_[index]) return {};  // most tenants have no limit: a pass asks for every waiting job
    return FirstLimitBreach(index, priority, demand);
  }

  // True when usage + demand stays within the guarantee in every resource the demand uses (GPU compute,
  // GPU memory, CPU: running jobs are not guaranteed). Inline: a pass asks for most waiting jobs.
  bool WithinGuarantee(int index, const ResourceAmounts& demand) const {
    const ResourceAmounts& u = usage_[index];
    const ResourceAmounts& g = tenants_[index]->guaranteed;
    const auto within = [](int64_t used, int64_t want, int64_t guaranteed) {
      return want <= 0 || used + want <= guaranteed;
    };
    return within(u.gpu_compute_milli, demand.gpu_compute_milli, g.gpu_compute_milli) &&
           within(u.gpu_memory_mib, demand.gpu_memory_mib, g.gpu_memory_mib) &&
           within(u.cpu_milli, demand.cpu_milli, g.cpu_milli);
  }
  // True when usage exceeds the guarantee in some resource (GPU compute, GPU memory or CPU).
  bool AboveGuarantee(int index) const;

  // Dominant-resource share: max over GPU compute, GPU memory and CPU of usage / cluster capacity,
  // in parts per billion (integers only). A resource the cluster has none of does not count.
  int64_t DominantSharePpb(int index, const ClusterTotals& totals) const;

 private:
  std::string FirstLimitBreach(int index, int priority, const ResourceAmounts& demand) const;

  std::vector<const Tenant*> tenants_;
  std::vector<uint8_t> limited_;  // per tenant: some limit or per-priority limit is set
  std::vector<Status> errors_;
  std::vector<ResourceAmounts> usage_;
  std::vector<uint64_t> version_;
  std::vector<std::vector<ResourceAmounts>> band_usage_;  // parallel to Tenant::priority_limits
  std::unordered_map<TenantId, int> index_;
};

}  // namespace xpool
