#include "scheduler/fragmentation.h"

#include <algorithm>
#include <functional>
#include <utility>

namespace xpool {

PodShape ShapeOf(const TaskRequest& request) {
  PodShape s;
  s.cpu_milli = request.cpu_milli;
  if (request.device_count > 0) {
    s.gpu_count = request.device_count;
    s.gpu_milli = request.device_compute_milli;
    if (!request.mig_profile.empty()) {
      s.mig_profile = request.mig_profile;
      s.gpu_milli = 1;
    }
  }
  s.type_include = request.type_include;
  s.type_exclude = request.type_exclude;
  std::sort(s.type_include.begin(), s.type_include.end());
  std::sort(s.type_exclude.begin(), s.type_exclude.end());
  return s;
}

namespace {
// Case-insensitive substring test, as the scheduler's type filter.
bool ContainsNoCase(std::string_view haystack, std::string_view needle) {
  auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                     [&](char a, char b) { return lower(a) == lower(b); }) != haystack.end();
}
// Nodes with up to this many devices, all one model, take the sorted fast paths of the fragment sums.
constexpr size_t kMaxFastDevices = 16;

bool TakesFastPath(const NodeFree& node) {
  const size_t count = node.gpu_milli.size();
  bool uniform = count <= kMaxFastDevices;
  for (size_t i = 1; uniform && i < count; ++i) uniform = node.gpu_model[i] == node.gpu_model[0];
  return uniform;
}

// Writes the node's free GPU milli in descending order to sorted[0..n) and their prefix sums to prefix[0..n]
// (n = its device count, at most kMaxFastDevices); returns the node's idle GPU milli, prefix[n].
int64_t SortFreeDescending(const NodeFree& node, int64_t* sorted, int64_t* prefix) {
  const size_t count = node.gpu_milli.size();
  for (size_t i = 0; i < count; ++i) {
    // Insertion sort: at most 16 values.
    const int64_t g = node.gpu_milli[i];
    size_t j = i;
    while (j > 0 && sorted[j - 1] < g) {
      sorted[j] = sorted[j - 1];
      --j;
    }
    sorted[j] = g;
  }
  prefix[0] = 0;
  for (size_t i = 0; i < count; ++i) prefix[i + 1] = prefix[i] + sorted[i];
  return prefix[count];
}

}  // namespace

size_t PodShapeHash::operator()(const PodShape& shape) const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields PodShape's == compares
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(static_cast<uint64_t>(shape.cpu_milli));
  mix(static_cast<uint64_t>(shape.gpu_count));
  mix(static_cast<uint64_t>(shape.gpu_milli));
  for (const std::vector<std::string>* list : {&shape.type_include, &shape.type_exclude}) {
    mix(list->size());
    for (const std::string& s : *list) mix(std::hash<std::string>()(s));
  }
  mix(std::hash<std::string>()(shape.mig_profile));
  return static_cast<size_t>(h);
}

bool ShapeAllowsModel(const PodShape& shape, std::string_view model) {
  if (!shape.mig_profile.empty()) {
    const size_t at = model.rfind(" MIG ");
    if (at == std::string_view::npos || model.substr(at + 5) != shape.mig_profile) return false;
  }
  if (shape.type_include.empty() && shape.type_exclude.empty()) return true;
  if (!shape.type_include.empty()) {
    bool any = false;
    for (const std::string& inc : shape.type_include) {
      if (ContainsNoCase(model, inc)) {
        any = true;
        break;
      }
    }
    if (!any) return false;
  }
  for (const std::string& exc : shape.type_exclude) {
    if (ContainsNoCase(model, exc)) return false;
  }
  return true;
}

TargetWorkload TargetWorkload::FromRequests(std::span<const TaskRequest> requests, int coverage_percent) {
  std::vector<WeightedShape> counted;
  for (const TaskRequest& r : requests) {
    PodShape s = ShapeOf(r);
    auto it = std::find_if(counted.begin(), counted.end(), [&](const WeightedShape& w) { return w.shape == s; });
    if (it == counted.end()) {
      counted.push_back({std::move(s), 1});
    } else {
      ++it->count;
    }
  }
  return FromCounts(std::move(counted), coverage_percent);
}

TargetWorkload TargetWorkload::FromCounts(std::vector<WeightedShape> counted, int coverage_percent) {
  std::stable_sort(counted.begin(), counted.end(),
                   [](const WeightedShape& a, const WeightedShape& b) { return a.count > b.count; });
  int64_t all = 0;
  for (const WeightedShape& w : counted) all += w.count;
  TargetWorkload t;
  int64_t covered = 0;
  for (WeightedShape& w : counted) {
    if (w.count <= 0) continue;
    // Keep adding shapes until covered / all ≥ coverage_percent / 100.
    if (covered * 100 >= all * coverage_percent) break;
    covered += w.count;
    t.shapes_.push_back(std::move(w));
  }
  t.total_count_ = covered;
  t.BuildGroups();
  return t;
}

void TargetWorkload::BuildGroups() {
  groups_.clear();
  no_gpu_count_ = 0;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> members;  // per group: (cpu, count)
  for (size_t i = 0; i < shapes_.size(); ++i) {
    const PodShape& m = shapes_[i].shape;
    if (m.gpu_count == 0 || m.gpu_milli == 0) {
      no_gpu_count_ += shapes_[i].count;
      continue;
    }
    size_t g = 0;
    while (g < groups_.size()) {
      const PodShape& r = shapes_[groups_[g].shape].shape;
      if (r.gpu_count == m.gpu_count && r.gpu_milli == m.gpu_milli && r.type_include == m.type_include &&
          r.type_exclude == m.type_exclude && r.mig_profile == m.mig_profile) {
        break;
      }
      ++g;
    }
    if (g == groups_.size()) {
      groups_.push_back(GpuGroup{m.gpu_count, m.gpu_milli, i, {}, {}});
      members.emplace_back();
    }
    members[g].emplace_back(m.cpu_milli, shapes_[i].count);
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    std::sort(members[g].begin(), members[g].end());
    groups_[g].prefix.assign(1, 0);
    for (const auto& [cpu, count] : members[g]) {
      groups_[g].cpu_milli.push_back(cpu);
      groups_[g].prefix.push_back(groups_[g].prefix.back() + count);
    }
  }
}

void ReadNodeFree(const ClusterState& state, int node, NodeFree* out) {
  const Node& n = state.node(node);
  out->cpu_milli = state.FreeCpu(node);
  const size_t count = n.devices.size();
  out->gpu_milli.resize(count);
  out->gpu_model.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const Device& d = n.devices[i];
    const bool usable = DeviceOffered(d) && !state.usage(node).devices[i].exclusive;
    out->gpu_milli[i] = usable ? state.FreeDeviceCompute(node, static_cast<int>(i)) : 0;
    out->gpu_model[i] = d.model;
  }
}

int64_t ShapeFragment(const NodeFree& node, const PodShape& shape) {
  int64_t idle = 0;
  for (int64_t g : node.gpu_milli) idle += g;
  if (shape.gpu_count == 0 || shape.gpu_milli == 0 || node.cpu_milli < shape.cpu_milli) return idle;
  int usable = 0;
  int64_t unusable_milli = 0;
  std::string_view last_model;
  bool last_allowed = false;
  for (size_t i = 0; i < node.gpu_milli.size(); ++i) {
    const int64_t g = node.gpu_milli[i];
    if (i == 0 || node.gpu_model[i] != last_model) {  // nodes usually hold one model: check it once
      last_model = node.gpu_model[i];
      last_allowed = ShapeAllowsModel(shape, last_model);
    }
    if (g >= shape.gpu_milli && last_allowed) {
      ++usable;
    } else {
      unusable_milli += g;
    }
  }
  if (usable < shape.gpu_count) return idle;
  return unusable_milli;
}

int64_t WeightedNodeFragment(const NodeFree& node, const TargetWorkload& target) {
  // Fast path for the common node, whose devices are all one model: with the free compute sorted in descending
  // order, the usable GPUs of a shape are a prefix (g ≥ d_m) and F_n(m) = idle − (that prefix's sum).
  const size_t count = node.gpu_milli.size();
  if (!TakesFastPath(node)) {
    int64_t sum = 0;
    for (const WeightedShape& w : target.shapes()) sum += w.count * ShapeFragment(node, w.shape);
    return sum;
  }
  int64_t sorted[kMaxFastDevices];
  int64_t prefix[kMaxFastDevices + 1];
  const int64_t idle = SortFreeDescending(node, sorted, prefix);
  const std::string_view model = count > 0 ? node.gpu_model[0] : std::string_view();
  // Shapes asking for no GPU strand all idle GPU; within a GPU group, the shapes whose CPU does not fit do too,
  // and the others share one fragment.
  int64_t sum = target.no_gpu_count() * idle;
  for (const TargetWorkload::GpuGroup& g : target.gpu_groups()) {
    const size_t cpu_fits = static_cast<size_t>(
        std::upper_bound(g.cpu_milli.begin(), g.cpu_milli.end(), node.cpu_milli) - g.cpu_milli.begin());
    const int64_t fits_count = g.prefix[cpu_fits];
    int64_t fragment = idle;
    if (fits_count > 0 && static_cast<size_t>(g.gpu_count) <= count &&
        ShapeAllowsModel(target.shapes()[g.shape].shape, model)) {
      size_t usable = 0;
      while (usable < count && sorted[usable] >= g.gpu_milli) ++usable;
      if (usable >= static_cast<size_t>(g.gpu_count)) fragment = idle - prefix[usable];
    }
    sum += (g.prefix.back() - fits_count) * idle + fits_count * fragment;
  }
  return sum;
}

void FragmentMeter::Reset(const TargetWorkload* target) {
  target_ = target;
  models_.clear();
  last_model_ = -1;
  cpu_levels_.clear();
  fits_.clear();
  if (target == nullptr) return;
  for (const TargetWorkload::GpuGroup& g : target->gpu_groups()) {
    cpu_levels_.insert(cpu_levels_.end(), g.cpu_milli.begin(), g.cpu_milli.end());
  }
  std::sort(cpu_levels_.begin(), cpu_levels_.end());
  cpu_levels_.erase(std::unique(cpu_levels_.begin(), cpu_levels_.end()), cpu_levels_.end());
  // Class c holds free CPU in [levels[c-1], levels[c]): a group's fitting shapes are those with cpu ≤ levels[c-1].
  for (const TargetWorkload::GpuGroup& g : target->gpu_groups()) {
    std::vector<int64_t>& fits = fits_.emplace_back(cpu_levels_.size() + 1, 0);
    for (size_t c = 1; c <= cpu_levels_.size(); ++c) {
      const size_t n = static_cast<size_t>(
          std::upper_bound(g.cpu_milli.begin(), g.cpu_milli.end(), cpu_levels_[c - 1]) - g.cpu_milli.begin());
      fits[c] = g.prefix[n];
    }
  }
}

const FragmentMeter::ModelTables& FragmentMeter::TablesFor(std::string_view model) {
  if (last_model_ >= 0 && models_[last_model_].model == model) return models_[last_model_];
  for (size_t i = 0; i < models_.size(); ++i) {
    if (models_[i].model == model) {
      last_model_ = static_cast<int>(i);
      return models_[i];
    }
  }
  ModelTables& t = models_.emplace_back();
  last_model_ = static_cast<int>(models_.size() - 1);
  t.model = std::string(model);
  const std::vector<TargetWorkload::GpuGroup>& groups = target_->gpu_groups();
  std::vector<char> allowed(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    allowed[g] = ShapeAllowsModel(target_->shapes()[groups[g].shape].shape, model) ? 1 : 0;
  }
  const size_t classes = cpu_levels_.size() + 1;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!allowed[g]) continue;
    auto it = std::find_if(t.counts.begin(), t.counts.end(),
                           [&](const CountTable& c) { return c.gpu_count == groups[g].gpu_count; });
    if (it == t.counts.end()) it = t.counts.insert(t.counts.end(), CountTable{groups[g].gpu_count, {}, {}, {}});
    it->shares.push_back(groups[g].gpu_milli);
  }
  std::sort(t.counts.begin(), t.counts.end(),
            [](const CountTable& a, const CountTable& b) { return a.gpu_count < b.gpu_count; });
  for (CountTable& c : t.counts) {
    std::sort(c.shares.begin(), c.shares.end());
    c.shares.erase(std::unique(c.shares.begin(), c.shares.end()), c.shares.end());
    const size_t width = c.shares.size() + 1;
    c.weights.assign(classes * width, 0);
    for (size_t g = 0; g < groups.size(); ++g) {
      if (!allowed[g] || groups[g].gpu_count != c.gpu_count) continue;
      const size_t j = static_cast<size_t>(std::lower_bound(c.shares.begin(), c.shares.end(), groups[g].gpu_milli) -
                                           c.shares.begin()) +
                       1;
      for (size_t k = 0; k < classes; ++k) c.weights[k * width + j] += fits_[g][k];
    }
    for (size_t k = 0; k < classes; ++k) {
      for (size_t j = 1; j < width; ++j) c.weights[k * width + j] += c.weights[k * width + j - 1];
    }
    constexpr int64_t kMaxRankTable = 1 << 16;
    if (c.shares.back() < kMaxRankTable) {
      c.rank.assign(static_cast<size_t>(c.shares.back()) + 1, 0);
      size_t r = 0;
      for (int64_t v = 0; v <= c.shares.back(); ++v) {
        while (r < c.shares.size() && c.shares[r] <= v) ++r;
        c.rank[static_cast<size_t>(v)] = static_cast<uint16_t>(r);
      }
    }
  }
  return t;
}

int64_t FragmentMeter::Weighted(const NodeFree& node) {
  const size_t count = node.gpu_milli.size();
  if (count == 0) return 0;
  if (!TakesFastPath(node)) return WeightedNodeFragment(node, *target_);
  int64_t v[kMaxFastDevices + 1];
  int64_t prefix[kMaxFastDevices + 1];
  const int64_t idle = SortFreeDescending(node, v, prefix);
  int64_t sum = target_->total_count() * idle;
  const ModelTables& tables = TablesFor(node.gpu_model[0]);
  const size_t cls = static_cast<size_t>(std::upper_bound(cpu_levels_.begin(), cpu_levels_.end(), node.cpu_milli) -
                                         cpu_levels_.begin());
  // Only where the free compute steps down (v_u > v_{u+1}) can a share lie in (v_{u+1}, v_u]: the last device of
  // each run of equal values, ascending (a node has few distinct levels: idle, used, a partly used device or two).
  size_t steps[kMaxFastDevices];
  size_t step_count = 0;
  for (size_t u = count; u >= 1; --u) {
    if (u == count || v[u - 1] != v[u]) steps[step_count++] = u;
  }
  for (const CountTable& c : tables.counts) {
    const size_t k = static_cast<size_t>(c.gpu_count);
    if (k > count) break;
    const size_t width = c.shares.size() + 1;
    const int64_t* w = &c.weights[cls * width];
    auto rank = [&c](int64_t x) -> size_t {
      if (x >= c.shares.back()) return c.shares.size();
      if (x < 0) return 0;
      if (!c.rank.empty()) return c.rank[static_cast<size_t>(x)];
      return static_cast<size_t>(std::upper_bound(c.shares.begin(), c.shares.end(), x) - c.shares.begin());
    };
    // Groups whose share lies in (v_{u+1}, v_u] have exactly u usable GPUs: they subtract S(u) each.
    size_t next = 0;  // J(v_{count+1}) = 0
    for (size_t i = 0; i < step_count && steps[i] >= k; ++i) {
      const size_t u = steps[i];
      const size_t here = rank(v[u - 1]);
      sum -= prefix[u] * (w[here] - w[next]);
      next = here;
    }
  }
  return sum;
}

ClusterFragment MeasureCluster(const ClusterState& state, const TargetWorkload& target) {
  ClusterFragment c;
  c.total_count = target.total_count();
  NodeFree free;
  for (int n = 0; n < state.node_count(); ++n) {
    ReadNodeFree(state, n, &free);
    for (int64_t g : free.gpu_milli) c.idle_milli += g;
    c.weighted += WeightedNodeFragment(free, target);
  }
  return c;
}

}  // namespace xpool
