#include "scheduler/queue/placement_explainer.h"

#include <algorithm>
#include <array>
#include <utility>

#include "scheduler/internal/key_bytes.h"

namespace xpool {
namespace {

using scheduler_internal::PutBytes;
using scheduler_internal::PutDeviceDescription;

// What FitDevice and the NUMA check read of a device's description (its uuid aside: requests naming uuids are
// not grouped).
bool SameDescription(const Device& a, const Device& b) {
  return a.vendor == b.vendor && a.model == b.model && a.memory_mib == b.memory_mib &&
         a.compute_milli == b.compute_milli && a.max_sharers == b.max_sharers && a.numa_node == b.numa_node &&
         a.mode == b.mode && a.healthy == b.healthy && a.cordoned == b.cordoned;
}

using UsageKey = std::array<int64_t, 5>;
UsageKey UsageOf(const DeviceUsage& u) {
  return {u.memory_mib, u.compute_milli, u.sharers, u.exclusive ? 1 : 0, static_cast<int64_t>(u.mps_user)};
}

// Bounds the device-key table of a long-lived loop that sees ever new usage combinations.
constexpr size_t kMaxGroupsPerNode = 4;
constexpr size_t kMaxGroupsFloor = 1 << 14;
// Device requests whose verdicts are kept; beyond that they are dropped and learnt again.
constexpr size_t kMaxDeviceRequests = 128;

}  // namespace

// A node's device key: the device count, then per device its description and usage. When every device has
// the same description (no link table matters here: FitNode reads none), the usages are sorted — permuting
// alike devices changes neither the verdict's reason nor the model its detail names.
int PlacementExplainer::GroupOf(int node) {
  ++stats_.key_builds;
  const Node& n = state_.node(node);
  const NodeUsage& u = state_.usage(node);
  key_.clear();
  PutBytes(&key_, n.devices.size());
  bool alike = true;
  for (size_t d = 1; d < n.devices.size() && alike; ++d) alike = SameDescription(n.devices[d], n.devices[0]);
  PutBytes(&key_, static_cast<uint8_t>(alike));  // the two layouts below never read as each other
  if (alike && !n.devices.empty()) {
    PutDeviceDescription(n.devices[0], &key_);
    std::array<UsageKey, 16> small;
    std::vector<UsageKey> large;
    UsageKey* begin = small.data();
    if (n.devices.size() > small.size()) {
      large.resize(n.devices.size());
      begin = large.data();
    }
    for (size_t d = 0; d < n.devices.size(); ++d) begin[d] = UsageOf(u.devices[d]);
    std::sort(begin, begin + n.devices.size());
    for (size_t d = 0; d < n.devices.size(); ++d) PutBytes(&key_, begin[d]);
  } else {
    for (size_t d = 0; d < n.devices.size(); ++d) {
      PutDeviceDescription(n.devices[d], &key_);
      PutBytes(&key_, UsageOf(u.devices[d]));
    }
  }
  auto [it, inserted] = groups_.try_emplace(key_, static_cast<int>(groups_.size()));
  return it->second;
}

std::vector<NodeVerdict>& PlacementExplainer::VerdictsFor(const TaskRequest& r) {
  request_key_.clear();
  PutBytes(&request_key_, r.device_count);
  PutBytes(&request_key_, r.device_memory_mib);
  PutBytes(&request_key_, r.device_memory_percent);
  PutBytes(&request_key_, r.device_compute_milli);
  PutBytes(&request_key_, r.vendor.has_value() ? static_cast<int>(*r.vendor) + 1 : 0);
  PutBytes(&request_key_, static_cast<uint8_t>(r.numa_bind));
  PutBytes(&request_key_, r.mps_user);
  for (const auto* list : {&r.type_include, &r.type_exclude}) {
    PutBytes(&request_key_, list->size());
    for (const std::string& t : *list) {
      PutBytes(&request_key_, t.size());
      request_key_.append(t);
    }
  }
  if (device_requests_.size() >= kMaxDeviceRequests && device_requests_.count(request_key_) == 0) {
    device_requests_.clear();
    verdicts_.clear();
  }
  auto [it, inserted] = device_requests_.try_emplace(request_key_, static_cast<int>(verdicts_.size()));
  if (inserted) verdicts_.emplace_back();
  return verdicts_[it->second];
}

void PlacementExplainer::Refresh(int node) {
  node_group_[node] = GroupOf(node);
  const Node& n = state_.node(node);
  const NodeUsage& u = state_.usage(node);
  NodeLevel& level = node_level_[node];
  level.blocked = !n.ready ? FitReason::kNodeNotReady : n.cordoned ? FitReason::kNodeCordoned : FitReason::kFits;
  level.free_cpu = n.cpu_milli - u.cpu_milli;  // as FitNode computes them
  level.free_memory = n.memory_mib - u.memory_mib;
}

void PlacementExplainer::RebuildAll() {
  groups_.clear();
  device_requests_.clear();
  verdicts_.clear();
  const int count = state_.node_count();
  node_group_.assign(count, 0);
  node_level_.assign(count, NodeLevel{});
  for (int n = 0; n < count; ++n) Refresh(n);
}

void PlacementExplainer::Sync() {
  const int count = state_.node_count();
  const size_t max_groups = std::max(kMaxGroupsFloor, kMaxGroupsPerNode * static_cast<size_t>(count));
  changed_.clear();
  if (!synced_ || description_version_ != state_.description_version() ||
      static_cast<int>(node_group_.size()) != count || groups_.size() > max_groups ||
      !state_.NodesChangedSince(seq_, &changed_)) {
    RebuildAll();
  } else {
    // Duplicates are harmless: a key is rebuilt to the same id.
    std::sort(changed_.begin(), changed_.end());
    changed_.erase(std::unique(changed_.begin(), changed_.end()), changed_.end());
    for (int n : changed_) Refresh(n);
  }
  synced_ = true;
  seq_ = state_.change_seq();
  description_version_ = state_.description_version();
}

ScheduleOutcome PlacementExplainer::ScheduleAfterCounting(const TaskRequest& request, PlacementPolicy& policy,
                                                          Rng& rng) {
  for (int g : touched_groups_) group_count_[g] = 0;
  touched_groups_.clear();
  return Schedule(state_, request, policy, rng);
}

ScheduleOutcome PlacementExplainer::Explain(const TaskRequest& request, PlacementPolicy& policy, Rng& rng) {
  ++stats_.explains;
  // Schedule() itself: an invalid request (answered at once), uuid selectors (the key leaves uuids out), and
  // policies whose Score may draw from the rng or keep state (Schedule() would call it on fitting nodes).
  if (!request.uuid_include.empty() || !request.uuid_exclude.empty() || !policy.traits().cacheable ||
      !ValidateTaskRequest(request).ok()) {
    ++stats_.full_scans;
    return Schedule(state_, request, policy, rng);
  }
  Sync();
  std::vector<NodeVerdict>& known = VerdictsFor(request);
  if (known.size() < groups_.size()) known.resize(groups_.size());  // kFits: not known yet
  // Nodes are counted per node-level reason and per device group, then tallied once each: ReasonTally merges
  // equal reasons anyway (a group's nodes share their devices' models, so the detail too).
  std::array<int, kFitReasonCount> level_count{};
  std::array<int, kFitReasonCount> level_node{};
  touched_groups_.clear();
  if (group_count_.size() < groups_.size()) {
    group_count_.resize(groups_.size(), 0);
    group_node_.resize(groups_.size(), -1);
  }
  NodeVerdict verdict;
  for (int n = 0; n < state_.node_count(); ++n) {
    // FitNode's node-level checks (readiness, cordon, CPU, memory), in its order, on the node's compact copy.
    const NodeLevel& level = node_level_[n];
    FitReason node_fit = level.blocked;
    if (node_fit == FitReason::kFits && level.free_cpu < request.cpu_milli) node_fit = FitReason::kNotEnoughCpu;
    if (node_fit == FitReason::kFits && level.free_memory < request.memory_mib) {
      node_fit = FitReason::kNotEnoughMemory;
    }
    if (node_fit != FitReason::kFits) {
      if (level_count[static_cast<int>(node_fit)]++ == 0) level_node[static_cast<int>(node_fit)] = n;
      continue;
    }
    if (!request.wants_devices()) {  // fits: Schedule() decides (and scores)
      ++stats_.full_scans;
      return ScheduleAfterCounting(request, policy, rng);
    }
    const int g = node_group_[n];
    NodeVerdict& group = known[g];
    if (group.reason == FitReason::kFits) {
      ++stats_.group_fits;
      if (FitNode(state_, n, request, /*ignore_usage=*/false, &candidate_, &verdict)) {
        ++stats_.full_scans;
        return ScheduleAfterCounting(request, policy, rng);
      }
      group = verdict;
    }
    if (group_count_[g]++ == 0) {
      group_node_[g] = n;
      touched_groups_.push_back(g);
    }
  }
  ReasonTally tally(request);
  verdict.device = -1;
  for (int r = 0; r < kFitReasonCount; ++r) {
    if (level_count[r] == 0) continue;
    verdict.reason = static_cast<FitReason>(r);
    tally.Add(state_, level_node[r], verdict, level_count[r]);
  }
  for (int g : touched_groups_) {
    tally.Add(state_, group_node_[g], known[g], group_count_[g]);
    group_count_[g] = 0;
  }
  touched_groups_.clear();
  return NotPlacedOutcome(state_, request, tally);
}

}  // namespace xpool
