#include "scheduler/policy/xpool_default.h"

#include <algorithm>
#include <limits>
#include <unordered_set>
#include <utility>

#include "scheduler/policy/share_choice.h"

namespace xpool {
namespace {
constexpr int64_t kTieBits = 20;         // the best-fit term lives below the score in the low 20 bits
constexpr int64_t kMemoryRefresh = 256;  // placements between refreshes of the per-shape mean memory
// Step 2: the memory asked per GPU, relative to the cluster's, at which GPU stranded by memory counts in full.
constexpr double kMemoryPivot = 0.75;
// Step 7: how much a reserved GPU taken from the pods confined to its model counts against the fragment gained. A
// confined pod that finds its model full is skipped with its whole request, while the pod that took its place
// had a choice: counted twice (1, 2 and 4 measured on the variant families; 2 gave the best worst case).
constexpr int64_t kReserveWeight = 2;

// A node's free compute per device as its distinct levels, descending, with how many devices are at each.
struct FreeLevels {
  static constexpr int kMax = 16;
  int64_t value[kMax];
  int count[kMax];
  int size = 0;
  // False when there are more than kMax levels (the caller then reads device by device).
  bool Read(const std::vector<int64_t>& free) {
    size = 0;
    for (int64_t g : free) {
      int l = 0;
      while (l < size && value[l] > g) ++l;
      if (l < size && value[l] == g) {
        ++count[l];
        continue;
      }
      if (size == kMax) return false;
      for (int k = size; k > l; --k) {
        value[k] = value[k - 1];
        count[k] = count[k - 1];
      }
      value[l] = g;
      count[l] = 1;
      ++size;
    }
    return true;
  }
};

// What a node's devices offer one GPU-request group: the devices that can take one of its pods, their free
// compute, and how many of its pods they could host.
struct Hosted {
  int usable = 0;
  int64_t usable_milli = 0;
  int64_t pods = 0;
};

Hosted HostedByLevels(const FreeLevels& levels, const PodShape& shape) {
  Hosted h;
  for (int l = 0; l < levels.size && levels.value[l] >= shape.gpu_milli; ++l) {
    h.usable += levels.count[l];
    h.usable_milli += levels.value[l] * levels.count[l];
    if (shape.gpu_count == 1) h.pods += levels.value[l] / shape.gpu_milli * levels.count[l];
  }
  if (shape.gpu_count > 1) h.pods = h.usable / shape.gpu_count;
  return h;
}

// Device by device; with `check_models`, only the devices whose model the shape allows.
Hosted HostedByDevices(const NodeFree& node, const PodShape& shape, bool check_models) {
  Hosted h;
  std::string_view model;
  bool allowed = true;
  for (size_t i = 0; i < node.gpu_milli.size(); ++i) {
    const int64_t g = node.gpu_milli[i];
    if (check_models && (i == 0 || node.gpu_model[i] != model)) {
      model = node.gpu_model[i];
      allowed = ShapeAllowsModel(shape, model);
    }
    if (allowed && g >= shape.gpu_milli) {
      ++h.usable;
      h.usable_milli += g;
      if (shape.gpu_count == 1) h.pods += g / shape.gpu_milli;
    }
  }
  if (shape.gpu_count > 1) h.pods = h.usable / shape.gpu_count;
  return h;
}
}  // namespace

size_t DefaultPolicy::ShapeGroups::CpuRank(int64_t cpu_milli) const {
  return static_cast<size_t>(std::upper_bound(cpu_levels.begin(), cpu_levels.end(), cpu_milli) - cpu_levels.begin());
}

int64_t DefaultPolicy::MemoryStrandPercent(double memory_per_gpu_ratio) {
  const double x = memory_per_gpu_ratio / kMemoryPivot;
  return static_cast<int64_t>(100.0 * std::clamp(x * x, 0.5, 1.25));
}

int64_t DefaultPolicy::CpuStrandedGpu(const NodeFree& node, double cpu_per_gpu_milli) {
  if (cpu_per_gpu_milli <= 0) return 0;
  int64_t idle = 0;
  for (int64_t g : node.gpu_milli) idle += g;
  const double fed = static_cast<double>(std::max<int64_t>(0, node.cpu_milli)) / cpu_per_gpu_milli;
  return std::max<int64_t>(0, idle - static_cast<int64_t>(fed));
}

DefaultPolicy::ShapeGroups DefaultPolicy::ShapeGroups::Of(const TargetWorkload& target,
                                                          const std::vector<int64_t>& shape_memory_mib) {
  ShapeGroups out;
  const std::vector<WeightedShape>& shapes = target.shapes();
  for (size_t m = 0; m < shapes.size(); ++m) {
    const PodShape& shape = shapes[m].shape;
    if (shape.gpu_count <= 0 || shape.gpu_milli <= 0) continue;  // all idle GPU whatever the memory: FGD's part
    auto same_gpu = [&](const Group& g) {
      return g.gpu.gpu_count == shape.gpu_count && g.gpu.gpu_milli == shape.gpu_milli &&
             g.gpu.type_include == shape.type_include && g.gpu.type_exclude == shape.type_exclude &&
             g.gpu.mig_profile == shape.mig_profile;
    };
    auto it = std::find_if(out.groups.begin(), out.groups.end(), same_gpu);
    if (it == out.groups.end()) {
      Group g;
      g.gpu = shape;
      g.gpu.cpu_milli = 0;
      out.groups.push_back(std::move(g));
      it = std::prev(out.groups.end());
    }
    const int64_t mem = m < shape_memory_mib.size() ? shape_memory_mib[m] : 0;
    it->members.push_back({shape.cpu_milli, mem, shapes[m].count});
  }
  for (Group& g : out.groups) {  // by CPU, so that the members a node's free CPU fits are a prefix
    std::stable_sort(g.members.begin(), g.members.end(),
                     [](const Member& a, const Member& b) { return a.cpu_milli < b.cpu_milli; });
    for (const Member& m : g.members) out.cpu_levels.push_back(m.cpu_milli);
  }
  std::sort(out.cpu_levels.begin(), out.cpu_levels.end());
  out.cpu_levels.erase(std::unique(out.cpu_levels.begin(), out.cpu_levels.end()), out.cpu_levels.end());
  // Rank 0: below every demand (no member fits); rank r: at least cpu_levels[r − 1], below cpu_levels[r].
  const size_t ranks = out.cpu_levels.size() + 1;
  const size_t count = out.groups.size();
  out.at_cpu.assign(ranks * count, AtCpu{});
  for (size_t g = 0; g < count; ++g) {
    const std::vector<Member>& members = out.groups[g].members;
    AtCpu at;
    for (size_t r = 1; r < ranks; ++r) {
      for (; at.fits < members.size() && members[at.fits].cpu_milli <= out.cpu_levels[r - 1]; ++at.fits) {
        at.max_memory = std::max(at.max_memory, members[at.fits].memory_mib);
      }
      out.at_cpu[r * count + g] = at;
    }
  }
  // The groups per rank, most endangered first: memory per share (or per device), compared as exact fractions.
  std::vector<uint32_t> order;
  out.single_from.clear();
  out.multi_from.clear();
  for (size_t r = 0; r < ranks; ++r) {
    const AtCpu* at = out.at_cpu.data() + r * count;
    auto per_unit = [&](uint32_t g) {  // the group's (largest memory, pods' unit: share milli or devices per pod)
      const PodShape& gpu = out.groups[g].gpu;
      return std::pair<int64_t, int64_t>(at[g].max_memory, gpu.gpu_count == 1 ? gpu.gpu_milli : gpu.gpu_count);
    };
    auto more_endangered = [&](uint32_t a, uint32_t b) {
      const auto [ma, ua] = per_unit(a);
      const auto [mb, ub] = per_unit(b);
      return static_cast<__int128>(ma) * ub > static_cast<__int128>(mb) * ua;
    };
    for (bool single : {true, false}) {
      order.clear();
      for (uint32_t g = 0; g < count; ++g) {
        if (at[g].max_memory > 0 && (out.groups[g].gpu.gpu_count == 1) == single) order.push_back(g);
      }
      std::stable_sort(order.begin(), order.end(), more_endangered);
      std::vector<uint32_t>& list = single ? out.single : out.multi;
      (single ? out.single_from : out.multi_from).push_back(static_cast<uint32_t>(list.size()));
      list.insert(list.end(), order.begin(), order.end());
    }
  }
  out.single_from.push_back(static_cast<uint32_t>(out.single.size()));
  out.multi_from.push_back(static_cast<uint32_t>(out.multi.size()));
  return out;
}

int64_t DefaultPolicy::ResourceFragment(const NodeFree& node, int64_t memory_mib, const TargetWorkload& target,
                                        const std::vector<int64_t>& shape_memory_mib, int64_t strand_percent) {
  FragmentMeter fgd(&target);
  return fgd.Weighted(node) +
         MemoryStranded(node, memory_mib, ShapeGroups::Of(target, shape_memory_mib), strand_percent);
}

namespace {
// The GPU that group g's fitting members (the first at.fits) lose to memory on `node`, beyond FGD's fragment:
// where the devices could host P pods but the memory feeds only R < P, P − R of P parts of the usable devices'
// free GPU, × the weight; where it feeds none, all of it.
// `check_models`: whether each device's model must be checked against the group's (the caller checked the node's
// one model otherwise).
int64_t GroupMemoryStranded(const NodeFree& node, bool check_models, int64_t memory_mib,
                            const DefaultPolicy::ShapeGroups::Group& group, const DefaultPolicy::ShapeGroups::AtCpu& at,
                            int64_t strand_percent) {
  const Hosted hosted = HostedByDevices(node, group.gpu, check_models);
  if (hosted.usable < group.gpu.gpu_count) return 0;  // all idle GPU for FGD already
  const int64_t pods_gpu = hosted.pods;               // m-pods the usable devices could host
  const int64_t usable_milli = hosted.usable_milli;
  if (memory_mib >= pods_gpu * at.max_memory) return 0;  // the memory feeds every pod of every fitting member
  int64_t stranded = 0;
  for (size_t k = 0; k < at.fits; ++k) {
    const DefaultPolicy::ShapeGroups::Member& member = group.members[k];
    const int64_t mem = member.memory_mib;
    if (mem <= 0 || memory_mib >= pods_gpu * mem) continue;  // the memory feeds every m-pod the devices could host
    int64_t lost = usable_milli;                             // the free memory feeds no m-pod
    if (memory_mib >= mem) {
      const int64_t pods_res = memory_mib / mem;  // m-pods the free memory can feed, < pods_gpu
      lost = usable_milli * (pods_gpu - pods_res) / pods_gpu * strand_percent / 100;
    }
    stranded += member.count * lost;
  }
  return stranded;
}

// Visits, most endangered first, the groups (for the free CPU's rank) whose pods `memory_mib` may not feed on a
// node with `idle` free GPU milli on `devices` devices. Each list stops at the first group whose pods it surely
// feeds (P ≤ idle / share, or devices / count): every later one asks less memory per unit. Returns the most memory
// the pods of those surely fed groups could ask (rounded up, at most memory_mib; 0 if none).
template <typename Visit>
int64_t VisitEndangered(const DefaultPolicy::ShapeGroups& groups, size_t rank, int64_t memory_mib, int64_t idle,
                        int64_t devices, Visit visit) {
  const DefaultPolicy::ShapeGroups::AtCpu* at = groups.at_cpu.data() + rank * groups.groups.size();
  int64_t fed = 0;
  auto walk = [&](const std::vector<uint32_t>& list, const std::vector<uint32_t>& from, int64_t available,
                  bool single) {
    for (uint32_t i = from[rank]; i < from[rank + 1]; ++i) {
      const uint32_t g = list[i];
      const int64_t unit = single ? groups.groups[g].gpu.gpu_milli : groups.groups[g].gpu.gpu_count;
      if (memory_mib * unit >= available * at[g].max_memory) {
        fed = std::max(fed, (available * at[g].max_memory + unit - 1) / unit);
        return;
      }
      visit(g);
    }
  };
  walk(groups.single, groups.single_from, idle, /*single=*/true);
  walk(groups.multi, groups.multi_from, devices, /*single=*/false);
  return fed;
}
}  // namespace

int64_t DefaultPolicy::MemoryStranded(const NodeFree& node, int64_t memory_mib, const ShapeGroups& groups,
                                      int64_t strand_percent) {
  if (node.gpu_milli.empty() || groups.groups.empty()) return 0;
  int64_t idle = 0;
  for (int64_t g : node.gpu_milli) idle += g;
  const int64_t devices = static_cast<int64_t>(node.gpu_milli.size());
  const size_t rank = groups.CpuRank(node.cpu_milli);
  const ShapeGroups::AtCpu* at = groups.at_cpu.data() + rank * groups.groups.size();
  int64_t stranded = 0;
  int one_model = -1;  // unknown until a group with a model constraint needs it
  auto stranded_in = [&](uint32_t g) -> int64_t {
    const PodShape& shape = groups.groups[g].gpu;
    bool check_models = false;
    if (!shape.type_include.empty() || !shape.type_exclude.empty() || !shape.mig_profile.empty()) {
      if (one_model < 0) {
        one_model = 1;
        for (size_t i = 1; one_model == 1 && i < node.gpu_model.size(); ++i) {
          if (node.gpu_model[i] != node.gpu_model[0]) one_model = 0;
        }
      }
      if (one_model == 1 && !ShapeAllowsModel(shape, node.gpu_model.front())) return 0;
      check_models = one_model == 0;
    }
    return GroupMemoryStranded(node, check_models, memory_mib, groups.groups[g], at[g], strand_percent);
  };
  VisitEndangered(groups, rank, memory_mib, idle, devices, [&](uint32_t g) { stranded += stranded_in(g); });
  return stranded;
}

void DefaultPolicy::OnPlaced(const ClusterState& state, const TaskRequest& request, const Allocation& /*allocation*/) {
  if (state.totals().device_compute_capacity_milli != cluster_gpu_milli_ ||
      state.totals().cpu_capacity_milli != cluster_cpu_milli_) {  // the cluster's memory and CPU per GPU
    cluster_gpu_milli_ = state.totals().device_compute_capacity_milli;
    cluster_memory_mib_ = 0;
    for (int n = 0; n < state.node_count(); ++n) cluster_memory_mib_ += state.node(n).memory_mib;
    cluster_cpu_milli_ = state.totals().cpu_capacity_milli;
  }
  // The per-shape memory is refreshed here, not when next scored, so that it does not depend on which nodes a
  // caller happens to score (cached or not): a target rebuilt since the last score, then every kMemoryRefresh.
  const bool caught_up = placed_at_refresh_ >= 0 && RefreshShapeMemory(state);
  ++placed_;
  auto [seen, added] = memory_seen_.try_emplace(ShapeOf(request));
  seen->second.sum_mib += request.memory_mib;
  ++seen->second.count;
  (void)added;
  if ((placed_at_refresh_ >= 0 && RefreshShapeMemory(state)) || caught_up) {
    ++memory_refreshes_;
    ClearScoreCache();
  }
}

namespace {
// Whether a node of `kind` can host one pod of `shape` asking `memory_mib` (0: unknown) when idle: a one-device
// shape needs only an allowed model, a multi-device one also the devices, CPU and memory.
bool KindHosts(const DefaultPolicy::NodeKind& kind, const PodShape& shape, int64_t memory_mib) {
  if (!ShapeAllowsModel(shape, kind.model)) return false;
  if (shape.gpu_count < 2) return true;
  return kind.devices >= shape.gpu_count && kind.cpu_milli >= shape.cpu_milli && kind.memory_mib >= memory_mib;
}
}  // namespace

int DefaultPolicy::KindOf(const Node& node) const {
  if (node.devices.empty()) return -1;
  for (size_t i = 0; i < reserve_.size(); ++i) {
    const NodeKind& k = reserve_[i];
    if (k.devices == static_cast<int>(node.devices.size()) && k.cpu_milli == node.cpu_milli &&
        k.memory_mib == node.memory_mib && k.model == node.devices.front().model) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

void DefaultPolicy::ReadKindFree(const ClusterState& state) {
  for (NodeKind& r : reserve_) r.free_milli = 0;
  NodeFree free;
  for (int n = 0; n < state.node_count(); ++n) {
    const Node& node = state.node(n);
    if (node.devices.empty()) continue;
    int kind = KindOf(node);
    if (kind < 0) {
      NodeKind added;
      added.model = node.devices.front().model;
      added.devices = static_cast<int>(node.devices.size());
      added.cpu_milli = node.cpu_milli;
      added.memory_mib = node.memory_mib;
      reserve_.push_back(std::move(added));
      kind = static_cast<int>(reserve_.size()) - 1;
    }
    ReadNodeFree(state, n, &free);
    for (int64_t g : free.gpu_milli) reserve_[kind].free_milli += g;
  }
}

int64_t DefaultPolicy::ReservePerMille(int64_t exclusive, int64_t demand, int64_t free_model, int64_t free_total) {
  if (exclusive <= 0 || demand <= 0) return 0;
  if (free_model <= 0) return 1000;
  const __int128 num = static_cast<__int128>(exclusive) * free_total * 1000;
  const __int128 den = static_cast<__int128>(demand) * free_model;
  return num >= den * 1000 ? 1000 : static_cast<int64_t>(num / den);
}

int64_t DefaultPolicy::reserve_per_mille(std::string_view model) const {
  int64_t most = 0;
  for (const NodeKind& r : reserve_) {
    if (r.model == model) most = std::max(most, r.per_mille);
  }
  return most;
}

void DefaultPolicy::OnArrival(const TaskRequest& request) {
  FragmentationPolicyBase::OnArrival(request);
  const int64_t gpu = request.device_count * request.device_compute_milli;
  if (gpu <= 0) return;
  arrived_gpu_milli_ += gpu;
  const bool multi = request.device_count >= 2;
  if (!multi && request.type_include.empty() && request.type_exclude.empty()) return;  // any kind hosts it
  PodShape shape = ShapeOf(request);
  auto [at, added] = confined_index_.try_emplace(shape, confined_.size());
  if (added) confined_.push_back({std::move(shape), {}});
  ++confined_[at->second].by_memory[multi ? request.memory_mib : 0];
}

bool DefaultPolicy::RecomputeReserve() {
  const size_t kinds = reserve_.size();
  std::vector<ReserveSet> sets;  // the strict subsets of the cluster's kinds that some demand is confined to
  const int64_t demand = arrived_gpu_milli_;
  int64_t free_total = 0;
  for (const NodeKind& r : reserve_) free_total += r.free_milli;
  std::unordered_set<PodShape, PodShapeHash> in_target;
  for (const WeightedShape& w : target().shapes()) in_target.insert(w.shape);
  std::vector<bool> allowed(kinds);
  for (const ConfinedArrivals& c : confined_) {
    const int64_t per_pod = c.shape.gpu_count * c.shape.gpu_milli;
    const bool rare = !in_target.contains(c.shape);
    for (const auto& [memory, count] : c.by_memory) {
      size_t hosts = 0;
      int64_t free_hosts = 0;
      for (size_t i = 0; i < kinds; ++i) {
        allowed[i] = KindHosts(reserve_[i], c.shape, memory);
        hosts += allowed[i] ? 1 : 0;
        free_hosts += allowed[i] ? reserve_[i].free_milli : 0;
      }
      if (hosts == 0 || hosts == kinds) continue;  // no kind, or every one: nothing to keep for it
      // A shape too rare for the target is kept room for only where its hosts hold at most half the free GPU.
      if (rare && 2 * free_hosts > free_total) continue;
      auto it = std::find_if(sets.begin(), sets.end(), [&](const ReserveSet& s) { return s.kinds == allowed; });
      if (it == sets.end()) it = sets.insert(sets.end(), ReserveSet{allowed, 0, 0});
      it->demand += count * per_pod;
    }
  }
  std::vector<int64_t> per_kind(kinds, 0);
  for (ReserveSet& set : sets) {
    int64_t free_set = 0;
    for (size_t i = 0; i < kinds; ++i) free_set += set.kinds[i] ? reserve_[i].free_milli : 0;
    set.per_mille = ReservePerMille(set.demand, demand, free_set, free_total);
    for (size_t i = 0; i < kinds; ++i) per_kind[i] += set.kinds[i] ? set.per_mille : 0;
  }
  // Only the sets and their per-mille enter a score (a demand that moved with the same r_S keeps every score).
  bool changed = sets.size() != reserve_sets_.size();
  for (size_t k = 0; !changed && k < sets.size(); ++k) {
    changed = sets[k].kinds != reserve_sets_[k].kinds || sets[k].per_mille != reserve_sets_[k].per_mille;
  }
  for (size_t i = 0; i < kinds; ++i) {
    const int64_t per_mille = std::min<int64_t>(1000, per_kind[i]);
    changed |= per_mille != reserve_[i].per_mille;
    reserve_[i].per_mille = per_mille;
  }
  reserve_sets_ = std::move(sets);
  if (changed) ++reserve_version_;
  return changed;
}

const std::vector<int64_t>& DefaultPolicy::ReserveCharge(const TaskRequest& request) {
  const bool multi = request.device_count >= 2;  // its host set depends on its devices, CPU and memory
  if (charge_version_ == reserve_version_ && charge_kinds_ == reserve_.size() &&
      request.type_include == charge_include_ && request.type_exclude == charge_exclude_ &&
      charge_devices_ == (multi ? request.device_count : 1) && charge_cpu_ == (multi ? request.cpu_milli : 0) &&
      charge_memory_ == (multi ? request.memory_mib : 0)) {
    return charge_;
  }
  charge_version_ = reserve_version_;
  charge_kinds_ = reserve_.size();
  charge_include_ = request.type_include;
  charge_exclude_ = request.type_exclude;
  charge_devices_ = multi ? request.device_count : 1;
  charge_cpu_ = multi ? request.cpu_milli : 0;
  charge_memory_ = multi ? request.memory_mib : 0;
  const PodShape shape = ShapeOf(request);
  const size_t kinds = reserve_.size();
  std::vector<bool> allowed(kinds);
  for (size_t i = 0; i < kinds; ++i) allowed[i] = KindHosts(reserve_[i], shape, request.memory_mib);
  charge_.assign(kinds, 0);
  for (const ReserveSet& set : reserve_sets_) {
    bool within = true;  // the request may use only kinds of the set: it is (part of) the demand kept for
    for (size_t i = 0; within && i < kinds; ++i) within = !allowed[i] || set.kinds[i];
    if (within) continue;
    for (size_t i = 0; i < kinds; ++i) charge_[i] += set.kinds[i] ? set.per_mille : 0;
  }
  for (int64_t& c : charge_) c = std::min<int64_t>(1000, c);
  return charge_;
}

int64_t DefaultPolicy::ReserveCost(const TaskRequest& request, const Node& node, size_t devices) {
  if (reserve_sets_.empty() || devices == 0) return 0;
  const int kind = KindOf(node);
  if (kind < 0) return 0;
  const int64_t per_mille = ReserveCharge(request)[kind];
  return static_cast<int64_t>(devices) * (kReserveWeight * request.device_compute_milli * per_mille / 1000);
}

bool DefaultPolicy::RefreshShapeMemory(const ClusterState& state) {
  const std::vector<WeightedShape>& shapes = target().shapes();
  const WeightedShape* key = shapes.empty() ? nullptr : shapes.data();
  const bool target_changed = key != target_key_ || target().total_count() != target_total_;
  if (!target_changed && placed_at_refresh_ >= 0 && placed_ - placed_at_refresh_ < kMemoryRefresh) return false;
  target_key_ = key;
  target_total_ = target().total_count();
  placed_at_refresh_ = placed_;
  std::vector<int64_t> memory(shapes.size(), 0);
  for (size_t m = 0; m < shapes.size(); ++m) {
    auto seen = memory_seen_.find(shapes[m].shape);
    if (seen != memory_seen_.end()) memory[m] = seen->second.sum_mib / seen->second.count;
  }
  ReadKindFree(state);
  const bool reserve_changed = RecomputeReserve();
  // Step 2's weight: the target's memory per GPU (learned means) against the cluster's. Step 3's CPU per GPU.
  double asked_mib = 0, gpu = 0, cpu_all = 0, cpu_gpu_shapes = 0;
  for (size_t m = 0; m < shapes.size(); ++m) {
    const double count = static_cast<double>(shapes[m].count);
    const double shape_gpu = static_cast<double>(shapes[m].shape.gpu_count * shapes[m].shape.gpu_milli);
    asked_mib += count * static_cast<double>(memory[m]);
    gpu += count * shape_gpu;
    cpu_all += count * static_cast<double>(shapes[m].shape.cpu_milli);
    if (shape_gpu > 0) cpu_gpu_shapes += count * static_cast<double>(shapes[m].shape.cpu_milli);
  }
  // Step 3: the CPU binds when the target asks at least the cluster's CPU per GPU.
  const bool cpu_binds =
      gpu > 0 && cluster_gpu_milli_ > 0 &&
      cpu_all / gpu >= static_cast<double>(cluster_cpu_milli_) / static_cast<double>(cluster_gpu_milli_);
  const double cpu_per_gpu = gpu > 0 ? (cpu_binds ? cpu_all : cpu_gpu_shapes) / gpu : 0.0;
  int64_t strand_percent = 100;
  if (gpu > 0 && cluster_gpu_milli_ > 0 && cluster_memory_mib_ > 0) {
    strand_percent = MemoryStrandPercent(
        (asked_mib / gpu) / (static_cast<double>(cluster_memory_mib_) / static_cast<double>(cluster_gpu_milli_)));
  }
  // Means (and a weight) that came out the same leave the measure, and so every cached score, as it was.
  if (!target_changed && !reserve_changed && memory == shape_memory_ && strand_percent == strand_percent_ &&
      cpu_binds == cpu_binds_ && cpu_per_gpu == cpu_per_gpu_) {
    return false;
  }
  shape_memory_ = std::move(memory);
  groups_ = ShapeGroups::Of(target(), shape_memory_);
  strand_percent_ = strand_percent;
  cpu_binds_ = cpu_binds;
  cpu_per_gpu_ = cpu_per_gpu;
  ++measure_version_;  // the measure changed: every node's F' before with it
  return true;
}

void DefaultPolicy::MemoryRange(const ClusterState& state, int node, const TaskRequest& request, int64_t* lo,
                                int64_t* hi) {
  RefreshShapeMemory(state);  // as Evaluate: the means the score was computed with
  const int64_t memory = state.FreeMemory(node);
  const int64_t left = memory - request.memory_mib;  // x: the memory left after placement
  const int64_t cpu_after = state.FreeCpu(node) - request.cpu_milli;
  *lo = *hi = request.memory_mib;
  if (left < 0) return;  // does not fit: only this memory
  // x enters step 2 only as P_res(m) = min(P_gpu(m), ⌊x / mem_m⌋) for the shapes with a known memory. P_gpu after
  // any placement is at most P_gpu on the free devices now (placing only takes compute away, and counting every
  // model only adds), `cap`: ⌊x / mem_m⌋ ≥ cap keeps P_res = P_gpu, else ⌊x / mem_m⌋ itself must stay.
  int64_t x_lo = 0;
  int64_t x_hi = std::numeric_limits<int64_t>::max();
  ReadNodeFree(state, node, &range_free_);  // devices that cannot take a pod read as 0 free
  int64_t idle = 0;
  for (int64_t g : range_free_.gpu_milli) idle += g;
  const int64_t devices = static_cast<int64_t>(range_free_.gpu_milli.size());
  FreeLevels levels;
  int by_levels = -1;  // read when a group first needs its exact cap
  // A member whose CPU the node cannot give after placement is all idle GPU whatever the memory left: only the
  // prefix of members (by CPU) that fits bounds the range (ShapeGroups' lists for the CPU left).
  const size_t rank = groups_.CpuRank(cpu_after);
  const ShapeGroups::AtCpu* at = groups_.at_cpu.data() + rank * groups_.groups.size();
  auto bound_by = [&](uint32_t g) {
    const ShapeGroups::Group& group = groups_.groups[g];
    if (by_levels < 0) by_levels = levels.Read(range_free_.gpu_milli) ? 1 : 0;
    const int64_t cap = by_levels == 1 ? HostedByLevels(levels, group.gpu).pods
                                       : HostedByDevices(range_free_, group.gpu, /*check_models=*/false).pods;
    const int64_t max_memory = at[g].max_memory;
    if (left >= cap * max_memory) {  // ⌊left / mem⌋ ≥ cap for every member: x ≥ cap · mem keeps each
      x_lo = std::max(x_lo, cap * max_memory);
      return;
    }
    for (size_t k = 0; k < at[g].fits; ++k) {
      const int64_t mem = group.members[k].memory_mib;
      if (mem <= 0) continue;
      if (left >= cap * mem) {  // ⌊left / mem⌋ ≥ cap
        x_lo = std::max(x_lo, cap * mem);
      } else {
        const int64_t q = left / mem;
        x_lo = std::max(x_lo, q * mem);
        x_hi = std::min(x_hi, (q + 1) * mem - 1);
      }
    }
  };
  // Most endangered first: from the first group whose cap surely fits in what is left (cap ≤ idle / share, or
  // devices / count), every later one asks at most that much memory per unit, so x ≥ that bound (≥ each cap · mem
  // and ≤ left) keeps them all: a range at most as wide as the group-by-group one, and as valid.
  const int64_t surely_fed = VisitEndangered(groups_, rank, left, idle, devices, bound_by);
  x_lo = std::max(x_lo, surely_fed);
  *lo = x_hi >= memory ? 0 : memory - x_hi;
  *hi = memory - x_lo;
  // Step 7: a multi-device request's hosts, and so what it pays, change where its memory passes a kind's.
  if (request.device_count >= 2 && !reserve_sets_.empty()) {
    for (const NodeKind& k : reserve_) {
      if (request.memory_mib <= k.memory_mib) {
        *hi = std::min(*hi, k.memory_mib);
      } else {
        *lo = std::max(*lo, k.memory_mib + 1);
      }
    }
  }
}

int64_t DefaultPolicy::Evaluate(const ClusterState& state, const TaskRequest& request, int node,
                                const std::vector<int>& devices, int64_t /*before*/) {
  RefreshShapeMemory(state);
  NodeFree& free = scratch();
  const int64_t memory = state.FreeMemory(node);
  if (static_cast<size_t>(node) >= before_memo_.size()) before_memo_.resize(node + 1);
  Before& before = before_memo_[node];
  if (!before.valid || before.generation != state.generation(node) || before.identity != state.identity() ||
      before.measure != measure_version_) {
    before.valid = true;
    before.generation = state.generation(node);
    before.identity = state.identity();
    before.measure = measure_version_;
    before.weighted = Fragment(free, memory);
  }
  // Step 3: GPU the node's CPU cannot feed, counted for every target shape (so × Σcount); a CPU-only request
  // is scored on it only when the CPU binds.
  const bool count_cpu = cpu_per_gpu_ > 0 && (cpu_binds_ || request.device_count > 0);
  const int64_t total = target().total_count();
  const int64_t cpu_before = count_cpu ? total * CpuStrandedGpu(free, cpu_per_gpu_) : 0;
  free.cpu_milli -= request.cpu_milli;
  for (int d : devices) free.gpu_milli[d] -= request.device_compute_milli;
  const int64_t after =
      Fragment(free, memory - request.memory_mib) + (count_cpu ? total * CpuStrandedGpu(free, cpu_per_gpu_) : 0);
  free.cpu_milli += request.cpu_milli;
  for (int d : devices) free.gpu_milli[d] += request.device_compute_milli;
  const int64_t max_gpu = std::max<int64_t>(1, state.totals().max_node_device_compute_milli);
  const int64_t max_cpu = std::max<int64_t>(1, state.totals().max_node_cpu_milli);
  int64_t gpu_after = 0;
  for (int64_t g : free.gpu_milli) gpu_after += g;
  gpu_after -= static_cast<int64_t>(devices.size()) * request.device_compute_milli;
  const int64_t cpu_after = free.cpu_milli - request.cpu_milli;

  // Step 7: the reserve the request would take from nodes others depend on, for every target shape (× Σcount).
  const int64_t reserve = request.device_count > 0 ? total * ReserveCost(request, state.node(node), devices.size()) : 0;
  // Step 4 + 5 (Δ and score): FGD's bounded score of Δ.
  const int64_t score = FgdSigmoidScore(before.weighted + cpu_before - after - reserve, total);

  // Ties below the score: the least free GPU left on the node, then the least free CPU (each 0..1023).
  const int64_t gpu_term = std::clamp<int64_t>((max_gpu - gpu_after) * 1023 / max_gpu, 0, 1023);
  const int64_t cpu_term = std::clamp<int64_t>((max_cpu - cpu_after) * 1023 / max_cpu, 0, 1023);
  return score * (int64_t{1} << kTieBits) + gpu_term * 1024 + cpu_term;
}

}  // namespace xpool
