#include "sim/variants.h"

#include <algorithm>
#include <map>
#include <random>

#include "common/units.h"
#include "model/mig_profile.h"
#include "scheduler/policy.h"

namespace xpool::sim {
namespace {

// The GPU nodes of one model.
struct Fleet {
  std::string model;
  int64_t gpus = 0;
  std::vector<const TraceNode*> nodes;
};

// One fleet per GPU model of `nodes`, ordered by model name (so draws do not depend on the node order).
std::vector<Fleet> BuildFleets(const std::vector<TraceNode>& nodes) {
  std::map<std::string, Fleet> by_model;
  for (const TraceNode& n : nodes) {
    if (n.gpu_count <= 0 || n.model.empty()) continue;
    Fleet& f = by_model[n.model];
    f.model = n.model;
    f.gpus += n.gpu_count;
    f.nodes.push_back(&n);
  }
  std::vector<Fleet> out;
  for (auto& [model, fleet] : by_model) out.push_back(std::move(fleet));
  return out;
}

bool CanHost(const Fleet& fleet, const TracePod& pod) {
  for (const TraceNode* n : fleet.nodes) {
    if (n->gpu_count >= pod.num_gpu && n->cpu_milli >= pod.cpu_milli && n->memory_mib >= pod.memory_mib) return true;
  }
  return false;
}

// Integer popularity weight of each fleet (variants.h).
std::vector<int64_t> Weights(const std::vector<Fleet>& fleets, const Variant& v) {
  int64_t total_gpus = 0;
  for (const Fleet& f : fleets) total_gpus += f.gpus;
  const int64_t others = static_cast<int64_t>(fleets.size()) - 1;
  std::vector<int64_t> w;
  for (const Fleet& f : fleets) {
    switch (v.popularity) {
      case Popularity::kUniform:
        w.push_back(1);
        break;
      case Popularity::kFleet:
        w.push_back(f.gpus);
        break;
      case Popularity::kSmall:
        w.push_back(std::max<int64_t>(1, total_gpus * 1000 / f.gpus));
        break;
      case Popularity::kOne:
        if (others == 0) {
          w.push_back(1);
        } else {
          w.push_back(f.model == v.focus ? v.skew_percent * others : 100 - v.skew_percent);
        }
        break;
    }
  }
  return w;
}

// An index i with allowed[i], drawn in proportion to weights[i]; -1 when no allowed index has weight.
int Draw(const std::vector<int64_t>& weights, const std::vector<bool>& allowed, Rng& rng) {
  int64_t total = 0;
  for (size_t i = 0; i < weights.size(); ++i) total += allowed[i] ? weights[i] : 0;
  if (total <= 0) return -1;
  int64_t r = std::uniform_int_distribution<int64_t>(0, total - 1)(rng);
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!allowed[i]) continue;
    if (r < weights[i]) return static_cast<int>(i);
    r -= weights[i];
  }
  return -1;
}

int64_t Percent(int64_t count, int percent) { return (count * percent + 50) / 100; }

std::vector<size_t> ShuffledIndices(const std::vector<TracePod>& pods, bool (*pick)(const TracePod&), Rng& rng) {
  std::vector<size_t> out;
  for (size_t i = 0; i < pods.size(); ++i) {
    if (pick(pods[i])) out.push_back(i);
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

// The 2–5 models of a list: `first`, then more drawn by weight among the fleets that can host the pod.
std::vector<std::string> DrawList(const std::vector<Fleet>& fleets, const std::vector<int64_t>& weights,
                                  std::vector<bool> hosts, int first, Rng& rng) {
  std::vector<std::string> models{fleets[first].model};
  hosts[first] = false;
  const int want = std::uniform_int_distribution<int>(2, 5)(rng);
  while (static_cast<int>(models.size()) < want) {
    const int i = Draw(weights, hosts, rng);
    if (i < 0) break;
    models.push_back(fleets[i].model);
    hosts[i] = false;
  }
  std::sort(models.begin(), models.end());
  return models;
}

Result<std::vector<TracePod>> ApplySpec(const std::vector<TracePod>& pods, const std::vector<Fleet>& fleets,
                                        const Variant& v, Rng& rng) {
  if (v.popularity == Popularity::kOne) {
    bool known = false;
    for (const Fleet& f : fleets) known |= f.model == v.focus;
    if (!known) return InvalidArgumentError("variant: focus model \"" + v.focus + "\" is not in the node list");
  }
  const std::vector<int64_t> weights = Weights(fleets, v);
  int64_t demand = 0, capacity = 0;
  for (const TracePod& p : pods) demand += PodGpuMilli(p);
  for (const Fleet& f : fleets) capacity += f.gpus * 1000;
  std::vector<int64_t> room;  // constrained demand each fleet may still take as a first model
  for (const Fleet& f : fleets) room.push_back(f.gpus * 1000 * demand / capacity);

  std::vector<TracePod> out = pods;
  const std::vector<size_t> order = ShuffledIndices(
      pods, [](const TracePod& p) { return p.num_gpu > 0 && p.gpu_spec.empty(); }, rng);
  int64_t left = Percent(static_cast<int64_t>(order.size()), v.share_percent);
  for (size_t idx : order) {
    if (left == 0) break;
    TracePod& pod = out[idx];
    std::vector<bool> hosts(fleets.size()), fits(fleets.size());
    for (size_t i = 0; i < fleets.size(); ++i) {
      hosts[i] = CanHost(fleets[i], pod);
      fits[i] = hosts[i] && room[i] >= PodGpuMilli(pod);
    }
    const int first = Draw(weights, fits, rng);
    if (first < 0) continue;
    room[first] -= PodGpuMilli(pod);
    const bool list = std::uniform_int_distribution<int>(0, 99)(rng) < v.lists_percent;
    pod.gpu_spec = list ? DrawList(fleets, weights, hosts, first, rng) : std::vector<std::string>{fleets[first].model};
    --left;
  }
  return out;
}

// The node with the most CPU (then memory) among those with ≥ k GPUs that `pod` may use; null when none.
const TraceNode* LargestHost(const std::vector<TraceNode>& nodes, const TracePod& pod, int k) {
  const TraceNode* best = nullptr;
  for (const TraceNode& n : nodes) {
    if (n.gpu_count < k) continue;
    if (!pod.gpu_spec.empty() && std::find(pod.gpu_spec.begin(), pod.gpu_spec.end(), n.model) == pod.gpu_spec.end()) {
      continue;
    }
    if (best == nullptr || n.cpu_milli > best->cpu_milli ||
        (n.cpu_milli == best->cpu_milli && n.memory_mib > best->memory_mib)) {
      best = &n;
    }
  }
  return best;
}

std::vector<TracePod> ApplyMulti(const std::vector<TracePod>& pods, const std::vector<TraceNode>& nodes,
                                 const Variant& v, Rng& rng) {
  static constexpr int kChoices[] = {2, 4, 8};
  std::vector<TracePod> out = pods;
  const std::vector<size_t> order = ShuffledIndices(
      pods, [](const TracePod& p) { return p.num_gpu == 1 && p.gpu_milli == 1000; }, rng);
  int64_t left = Percent(static_cast<int64_t>(order.size()), v.share_percent);
  for (size_t idx : order) {
    if (left == 0) break;
    TracePod& pod = out[idx];
    const int k = v.gpus != 0 ? v.gpus : kChoices[std::uniform_int_distribution<int>(0, 2)(rng)];
    const TraceNode* host = LargestHost(nodes, pod, k);
    if (host == nullptr) continue;
    pod.num_gpu = k;
    pod.cpu_milli = std::min(pod.cpu_milli * k, host->cpu_milli);
    pod.memory_mib = std::min(pod.memory_mib * k, host->memory_mib);
    --left;
  }
  return out;
}

// S % of the fractional pods (seeded choice) ask for their covering MIG profile's compute share instead.
Result<std::vector<TracePod>> ApplyMigSized(const std::vector<TracePod>& pods, const Variant& v, Rng& rng) {
  const MigModel* model = MigModelNamed(v.mig_model);
  if (model == nullptr) return InvalidArgumentError("variant: model=" + v.mig_model + " has no MIG table");
  std::vector<TracePod> out = pods;
  const std::vector<size_t> order = ShuffledIndices(
      pods, [](const TracePod& p) { return p.num_gpu > 0 && p.gpu_milli > 0 && p.gpu_milli < 1000; }, rng);
  int64_t left = Percent(static_cast<int64_t>(order.size()), v.share_percent);
  for (size_t idx : order) {
    if (left-- == 0) break;
    TracePod& pod = out[idx];
    const MigProfile* profile = SmallestCoveringMigProfile(*model, 0, pod.gpu_milli);
    if (profile == nullptr) continue;
    pod.gpu_milli = profile->compute_slices == model->compute_slices ? 1000 : MigComputeMilli(*model, *profile);
  }
  return out;
}

std::string_view PopularityName(Popularity p) {
  switch (p) {
    case Popularity::kUniform:
      return "uniform";
    case Popularity::kFleet:
      return "fleet";
    case Popularity::kOne:
      return "one";
    case Popularity::kSmall:
      return "small";
  }
  return "?";
}

bool ParsePopularity(std::string_view s, Popularity* out) {
  for (Popularity p : {Popularity::kUniform, Popularity::kFleet, Popularity::kOne, Popularity::kSmall}) {
    if (PopularityName(p) == s) {
      *out = p;
      return true;
    }
  }
  return false;
}

std::vector<std::string_view> SplitColons(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t pos = s.find(':', start);
    out.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) return out;
    start = pos + 1;
  }
}

Result<int> PercentValue(std::string_view key, std::string_view value, int low) {
  Result<int64_t> v = ParseNonNegativeInt(value);
  if (!v.ok() || *v < low || *v > 100) {
    return InvalidArgumentError("variant: " + std::string(key) + "=" + std::string(value) + " is not a percentage " +
                                std::to_string(low) + "–100");
  }
  return static_cast<int>(*v);
}

// Sets one key of `v` from its text.
Status SetKey(Variant* v, std::string_view key, std::string_view value) {
  const bool spec = v->kind == VariantKind::kSpec;
  if (v->kind == VariantKind::kMigSized && key == "model") {
    if (MigModelNamed(value) == nullptr) {
      return InvalidArgumentError("variant: model=" + std::string(value) + " has no MIG table");
    }
    v->mig_model = std::string(value);
    return Status::Ok();
  }
  if (v->kind == VariantKind::kMigSized && key != "share" && key != "seed") {
    return InvalidArgumentError("variant: unknown key \"" + std::string(key) + "\" for mig");
  }
  if (key == "share") {
    ASSIGN_OR_RETURN(v->share_percent, PercentValue(key, value, 0));
  } else if (key == "seed") {
    Result<int64_t> s = ParseNonNegativeInt(value);
    if (!s.ok()) return InvalidArgumentError("variant: seed=" + std::string(value) + " is not a seed");
    v->seed = static_cast<uint64_t>(*s);
  } else if (spec && key == "pop") {
    if (!ParsePopularity(value, &v->popularity)) {
      return InvalidArgumentError("variant: pop=" + std::string(value) + " is not uniform, fleet, one or small");
    }
  } else if (spec && key == "focus") {
    if (value.empty()) return InvalidArgumentError("variant: focus= names no model");
    v->focus = std::string(value);
  } else if (spec && key == "skew") {
    ASSIGN_OR_RETURN(v->skew_percent, PercentValue(key, value, 1));
  } else if (spec && key == "lists") {
    ASSIGN_OR_RETURN(v->lists_percent, PercentValue(key, value, 0));
  } else if (!spec && key == "gpus") {
    if (value == "mix") {
      v->gpus = 0;
    } else if (value == "2" || value == "4" || value == "8") {
      v->gpus = value[0] - '0';
    } else {
      return InvalidArgumentError("variant: gpus=" + std::string(value) + " is not 2, 4, 8 or mix");
    }
  } else {
    return InvalidArgumentError("variant: unknown key \"" + std::string(key) + "\" for " + (spec ? "spec" : "multi"));
  }
  return Status::Ok();
}

}  // namespace

std::string VariantName(const Variant& v) {
  std::string name;
  if (v.kind == VariantKind::kSpec) {
    name = "spec:share=" + std::to_string(v.share_percent) + ":pop=" + std::string(PopularityName(v.popularity));
    if (v.popularity == Popularity::kOne) name += ":focus=" + v.focus + ":skew=" + std::to_string(v.skew_percent);
    name += ":lists=" + std::to_string(v.lists_percent);
  } else if (v.kind == VariantKind::kMulti) {
    name = "multi:share=" + std::to_string(v.share_percent) + ":gpus=" + (v.gpus == 0 ? "mix" : std::to_string(v.gpus));
  } else {
    name = "mig:share=" + std::to_string(v.share_percent) + ":model=" + v.mig_model;
  }
  return name + ":seed=" + std::to_string(v.seed);
}

Result<Variant> ParseVariant(std::string_view name) {
  const std::vector<std::string_view> parts = SplitColons(name);
  Variant v;
  std::vector<std::string> required;
  if (parts[0] == "spec") {
    v.kind = VariantKind::kSpec;
    required = {"share", "pop", "lists", "seed"};
  } else if (parts[0] == "multi") {
    v.kind = VariantKind::kMulti;
    required = {"share", "gpus", "seed"};
  } else if (parts[0] == "mig") {
    v.kind = VariantKind::kMigSized;
    required = {"share", "model", "seed"};
  } else {
    return InvalidArgumentError("variant \"" + std::string(name) + "\": must start with spec:, multi: or mig:");
  }
  std::vector<std::string> seen;
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgumentError("variant \"" + std::string(name) + "\": \"" + std::string(parts[i]) +
                                  "\" is not key=value");
    }
    const std::string key(parts[i].substr(0, eq));
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return InvalidArgumentError("variant \"" + std::string(name) + "\": " + key + " given twice");
    }
    seen.push_back(key);
    RETURN_IF_ERROR(SetKey(&v, key, parts[i].substr(eq + 1)).WithContext("\"" + std::string(name) + "\""));
  }
  if (v.kind == VariantKind::kSpec && v.popularity == Popularity::kOne)
    required.insert(required.end(), {"focus", "skew"});
  for (const std::string& key : required) {
    if (std::find(seen.begin(), seen.end(), key) == seen.end()) {
      return InvalidArgumentError("variant \"" + std::string(name) + "\": " + key + "= is missing");
    }
  }
  if (v.popularity != Popularity::kOne && (!v.focus.empty() || v.skew_percent != 0)) {
    return InvalidArgumentError("variant \"" + std::string(name) + "\": focus and skew belong to pop=one");
  }
  return v;
}

Result<std::vector<TracePod>> ApplyVariant(const std::vector<TracePod>& pods, const std::vector<TraceNode>& nodes,
                                           const Variant& variant) {
  const std::vector<Fleet> fleets = BuildFleets(nodes);
  if (fleets.empty()) return InvalidArgumentError("variant: the node list has no GPU");
  Rng rng(variant.seed);
  if (variant.kind == VariantKind::kMulti) return ApplyMulti(pods, nodes, variant, rng);
  if (variant.kind == VariantKind::kMigSized) return ApplyMigSized(pods, variant, rng);
  return ApplySpec(pods, fleets, variant, rng);
}

const std::vector<std::string>& FamilyNames() {
  static const std::vector<std::string> kNames = {"spec-uniform", "spec-fleet", "spec-one", "spec-small",
                                                  "spec-lists",   "spec-mixed", "multi"};
  return kNames;
}

bool IsFamilyName(std::string_view name) {
  const std::vector<std::string>& names = FamilyNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

Result<std::vector<Variant>> FamilyVariants(std::string_view family, const std::vector<TraceNode>& nodes, int count,
                                            uint64_t seed) {
  if (!IsFamilyName(family)) {
    std::string known;
    for (const std::string& name : FamilyNames()) known += (known.empty() ? "" : ", ") + name;
    return InvalidArgumentError("unknown variant family \"" + std::string(family) + "\" (known: " + known + ")");
  }
  const std::vector<Fleet> fleets = BuildFleets(nodes);
  if (fleets.empty()) return InvalidArgumentError("variant family: the node list has no GPU");
  Rng rng(seed);
  auto uniform = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng); };
  std::vector<Variant> out;
  for (int i = 0; i < count; ++i) {
    Variant v;
    if (family == "multi") {
      v.kind = VariantKind::kMulti;
      v.share_percent = uniform(5, 30);
      v.gpus = std::vector<int>{0, 2, 4, 8}[uniform(0, 3)];
    } else {
      v.share_percent = uniform(5, 40);
      if (family == "spec-uniform") v.popularity = Popularity::kUniform;
      if (family == "spec-fleet") v.popularity = Popularity::kFleet;
      if (family == "spec-one") v.popularity = Popularity::kOne;
      if (family == "spec-small") v.popularity = Popularity::kSmall;
      if (family == "spec-lists" || family == "spec-mixed") v.popularity = static_cast<Popularity>(uniform(0, 3));
      if (v.popularity == Popularity::kOne) {
        v.focus = fleets[uniform(0, static_cast<int>(fleets.size()) - 1)].model;
        v.skew_percent = uniform(50, 90);
      }
      if (family == "spec-lists") v.lists_percent = 100;
      if (family == "spec-mixed") v.lists_percent = uniform(10, 40);
    }
    v.seed = static_cast<uint64_t>(uniform(1, 999999));
    out.push_back(v);
  }
  return out;
}

}  // namespace xpool::sim
