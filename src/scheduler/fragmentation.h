#pragma once
// The GPU fragmentation measure of the FGD paper (Weng et al., "Beware of Fragmentation", USENIX ATC '23, §4).
//
// A target workload M is the set of the most common pod shapes (CPU, GPU count, per-GPU share, allowed models)
// that together cover at least 95 % of the pods, each with its pod count. For node n and shape m, the fragment
// F_n(m) is the idle GPU (milli) that m cannot use:
//   1. m asks for no GPU, or m may not use the node's model, or m does not fit (fewer than k_m usable GPUs with
//      free ≥ d_m, or not enough free CPU): F_n(m) = Σ_i g_i, all the node's idle GPU;
//   2. otherwise F_n(m) = Σ g_i over the GPUs with g_i < d_m (or whose model m may not use).
// Node fragmentation F_n = Σ_m p_m F_n(m) with p_m = count_m / Σ count; cluster fragmentation = Σ_n F_n.
// To keep ties exact everything is integral: the functions return Σ_m count_m F_n(m) ("weighted"), which is
// F_n × total_count. Value types and pure functions; thread-compatible.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/cluster_state.h"
#include "model/task_request.h"

namespace xpool {

struct PodShape {
  int64_t cpu_milli = 0;
  int gpu_count = 0;
  int64_t gpu_milli = 0;                  // per GPU; 0 when the shape asks for no GPU
  std::vector<std::string> type_include;  // allowed models (substring match, as the scheduler's filter)
  std::vector<std::string> type_exclude;
  // A `mig:` request: only an idle MIG instance of this profile serves it, whole (gpu_milli is then 1: any free
  // compute of such an instance will do).
  std::string mig_profile;
  bool operator==(const PodShape&) const = default;
};
PodShape ShapeOf(const TaskRequest& request);
// A hash over every PodShape field its equality compares.
struct PodShapeHash {
  size_t operator()(const PodShape& shape) const;
};
// True when a device of `model` may serve `shape` (include list empty or matching, no exclude matching; for a
// MIG shape, a model naming an instance of its profile, "<GPU> MIG <profile>").
bool ShapeAllowsModel(const PodShape& shape, std::string_view model);

struct WeightedShape {
  PodShape shape;
  int64_t count = 0;
};

// The target workload M. A value type.
class TargetWorkload {
 public:
  TargetWorkload() = default;
  // Counts the shapes of `requests` and keeps the most common ones covering ≥ coverage_percent of them (ties in
  // count: the shape seen first comes first).
  static TargetWorkload FromRequests(std::span<const TaskRequest> requests, int coverage_percent = 95);
  // Same from shapes already counted, in first-seen order.
  static TargetWorkload FromCounts(std::vector<WeightedShape> counted, int coverage_percent = 95);

  const std::vector<WeightedShape>& shapes() const { return shapes_; }
  int64_t total_count() const { return total_count_; }
  bool empty() const { return shapes_.empty(); }

  // The shapes grouped by what decides their fragment apart from CPU — GPU count, per-GPU share, allowed models —
  // with the group's CPU demands ascending and prefix sums of their counts, so WeightedNodeFragment costs one step
  // per group instead of one per shape (a target of thousands of shapes has a few dozen groups).
  struct GpuGroup {
    int gpu_count = 0;
    int64_t gpu_milli = 0;
    size_t shape = 0;                // one of its shapes (for the model rule)
    std::vector<int64_t> cpu_milli;  // ascending
    std::vector<int64_t> prefix;     // prefix[i] = Σ count of the first i entries of cpu_milli
  };
  const std::vector<GpuGroup>& gpu_groups() const { return groups_; }
  int64_t no_gpu_count() const { return no_gpu_count_; }  // Σ count of the shapes that ask for no GPU

 private:
  void BuildGroups();
  std::vector<WeightedShape> shapes_;
  int64_t total_count_ = 0;
  std::vector<GpuGroup> groups_;
  int64_t no_gpu_count_ = 0;
};

// What the measure looks at on one node: free CPU and the free compute of each device.
struct NodeFree {
  int64_t cpu_milli = 0;
  std::vector<int64_t> gpu_milli;           // free compute per device
  std::vector<std::string_view> gpu_model;  // model per device (views into the Node)
};
void ReadNodeFree(const ClusterState& state, int node, NodeFree* out);

// F_n(m), in milli-GPU.
int64_t ShapeFragment(const NodeFree& node, const PodShape& shape);
// Σ_m count_m F_n(m) = F_n × target.total_count().
int64_t WeightedNodeFragment(const NodeFree& node, const TargetWorkload& target);

// FragmentMeter: WeightedNodeFragment for one target workload, in a few steps per device instead of one step
// per target group. With the node's free compute sorted descending (v_1 ≥ … ≥ v_n, S(u) = v_1 + … + v_u) and
// f_g(cpu) the count of group g's shapes whose CPU fits,
//   Σ_m count_m F_n(m) = total_count · S(n) − Σ_{g allowed, usable_g ≥ k_g} f_g(cpu) · S(usable_g),
// where usable_g = #{i : v_i ≥ d_g}. Groups with usable_g = u are those with v_{u+1} < d_g ≤ v_u, so per GPU
// count k the sum is Σ_{u ≥ k} S(u) · (W_k[c][J(v_u)] − W_k[c][J(v_{u+1})]), W_k[c][j] being Σ f_g over the
// groups of GPU count k, allowed on the node's model, among the j smallest shares, for the node's CPU class c
// (its rank among the target's CPU demands). The tables are built per GPU model on first use. Mixed-model nodes
// and nodes with more than 16 devices take WeightedNodeFragment. Results equal WeightedNodeFragment exactly.
// Holds a pointer to the target, which must outlive it (Reset when it is replaced). Owned by one caller (a
// policy, a simulator run); not thread-safe: Weighted builds tables lazily.
class FragmentMeter {
 public:
  FragmentMeter() = default;
  explicit FragmentMeter(const TargetWorkload* target) { Reset(target); }
  void Reset(const TargetWorkload* target);
  int64_t Weighted(const NodeFree& node);

 private:
  struct CountTable {
    int gpu_count = 0;
    std::vector<int64_t> shares;   // distinct per-GPU shares of the allowed groups with this count, ascending
    std::vector<uint16_t> rank;    // rank[v] = #shares ≤ v, for v ≤ shares.back()
    std::vector<int64_t> weights;  // [class * (shares.size() + 1) + j]
  };
  struct ModelTables {
    std::string model;
    std::vector<CountTable> counts;  // ascending gpu_count
  };
  const ModelTables& TablesFor(std::string_view model);

  const TargetWorkload* target_ = nullptr;
  std::vector<int64_t> cpu_levels_;         // distinct CPU demands of the GPU groups, ascending
  std::vector<std::vector<int64_t>> fits_;  // [group][class]: Σ count of its shapes with cpu ≤ the class
  std::vector<ModelTables> models_;
  int last_model_ = -1;
};

struct ClusterFragment {
  int64_t weighted = 0;     // Σ_n Σ_m count_m F_n(m)
  int64_t total_count = 0;  // the target's Σ count (divide `weighted` by it for milli-GPU)
  int64_t idle_milli = 0;   // Σ free GPU compute
};
ClusterFragment MeasureCluster(const ClusterState& state, const TargetWorkload& target);

}  // namespace xpool
