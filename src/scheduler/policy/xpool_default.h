#pragma once
// DefaultPolicy ("default"): xpool's own placement policy — fragmentation gradient descent (FGD, Weng et al.,
// USENIX ATC '23) on a measure that also counts the GPU that memory or CPU can no longer feed, with an online
// target workload and best fit among equal scores. Steps (docs/scheduling.md has the results):
//   1. Learn the target workload online: every arriving request's shape is counted (OnArrival), and the most
//      common shapes covering 95 % of arrivals so far form the target (rebuilt when the count doubles, then
//      every 256 arrivals). Each shape's mean memory is learned from the placed requests (OnPlaced). Nothing
//      about future requests is used.
//   2. Memory-aware fragment of node n for shape m, F'_n(m): FGD's F_n(m) (all idle GPU when m cannot fit — CPU
//      included — or may not use the model; else the idle GPU of devices too small for m), plus, when the
//      node's free memory feeds fewer m-pods than its usable devices could host (P_mem < P_gpu), the usable
//      devices' free GPU × (P_gpu − P_mem) / P_gpu × w — GPU stranded by memory. w = clamp((ρ / 0.75)², ½, 1¼),
//      ρ = the target's memory per GPU (Σ count·mean memory / Σ count·GPU) ÷ the cluster's memory per GPU:
//      a workload that asks little memory per GPU rarely ends memory-bound, so the stranding estimated from
//      mean memory counts less (openb lists: ρ ≈ 0.54–0.75, w ≈ ½–1).
//   3. GPU stranded by CPU, for the target's mix rather than per shape: S_n = max(0, idle GPU − free CPU / c̄),
//      c̄ = the target's CPU per GPU milli (Σ count·CPU / Σ count·GPU), added to every shape's fragment. While the
//      target asks less CPU per GPU than the cluster has, the CPU-only pods fit in the surplus: c̄ counts the
//      GPU shapes' CPU only and a CPU-only request's score ignores S. Once it asks at least the cluster's CPU per
//      GPU (the CPU binds), c̄ counts every shape's CPU and every request sees S. (Per-shape CPU stranding, like
//      step 2's, cost 0.2–0.5 points: one shape's stranding is another, leaner shape's room.)
//   4. For each candidate node and device choice (each fitting device for a GPU-sharing request; for whole
//      devices, the fitting devices with the least free compute) Δ = Σ_m count_m (F'_n(m) + S_n, before −
//      after).
//   5. score = ⌊100·sigmoid(Δ/Σcount/1000)⌋, FGD's bounded score, with no best-fit term inside it: one would favour
//      small nodes and so pack the small nodes of scarce models (up to 3.4 points lost on gpu_spec workloads);
//      step 3 covers what it was for.
//   6. Among equal scores: the node left with the least free GPU, then the least free CPU (below the score);
//      a sharing pod's equal devices go to the tightest device; then the first node.
//   7. Reserve the nodes that demand depends on. Nodes fall into kinds (first device's model, device count, CPU,
//      memory); a request's hosts are the kinds that could host it when idle (one device: the kinds of its
//      models; k devices: also ≥ k devices, its CPU and its memory). For each set S of kinds (not every kind)
//      that is the hosts of some arrivals, D_S = the GPU they asked and r_S = min(1, (D_S / all GPU asked) · free
//      GPU of the cluster / free GPU of S's nodes), the share of S's free GPU that demand is expected to need if
//      arrivals keep their mix until the cluster is full. Every arrival counts, not only the target's shapes:
//      pods of the shapes too rare for the target, and the few pods of a multi-device shape whose memory only
//      the largest nodes have, are skipped with their whole request when those nodes are full. A shape outside
//      the target counts only for a set whose nodes hold at most half the cluster's free GPU: on most of the
//      cluster its pods find room without a reserve, which the common pods would pay there. A GPU request
//      pays, per device it takes on a node of kind K, 2 × its grant × min(1, Σ r_S over the sets S ∋ K that do
//      not hold every kind that could host the request), from Δ (before the score in step 5), so it goes
//      elsewhere unless the fragment gained there is larger; a request confined within S pays nothing for S.
//      The r_S are recomputed with step 2's means (every 256 placements and when the target is rebuilt).
// Cacheable: the Scheduler keeps each verdict until the node or the learned state (ScoreEpoch) changes.
// Not thread-safe.
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scheduler/fragmentation.h"
#include "scheduler/policy.h"
#include "scheduler/policy/fgd.h"

namespace xpool {

class DefaultPolicy final : public FragmentationPolicyBase {
 public:
  DefaultPolicy() : FragmentationPolicyBase(TargetWorkload(), /*learn=*/true, 256) {}
  std::string_view name() const override { return "default"; }
  // Step 1, and step 7's demand (what the arrivals ask, skipped ones included).
  void OnArrival(const TaskRequest& request) override;
  void OnPlaced(const ClusterState& state, const TaskRequest& request, const Allocation& allocation) override;
  // Scores are a function of the node, the request and the learned state (target, per-shape memory), which
  // changes only in OnArrival / OnPlaced; ScoreEpoch moves with it.
  // The request's memory enters the score only through how many pods of each target shape the memory left after
  // placement feeds (step 2), capped by how many its devices could host: a range of memories keeps those counts.
  ScoringTraits traits() const override { return {.cacheable = true, .memory_ranges = true}; }
  uint64_t ScoreEpoch() const override { return target_rebuilds() + memory_refreshes_; }
  void MemoryRange(const ClusterState& state, int node, const TaskRequest& request, int64_t* lo, int64_t* hi) override;

  // Σ_m count_m F'_n(m) (step 2, without step 3's S_n) for a node whose free CPU / devices are `node` and free memory
  // `memory_mib`; `shape_memory_mib[m]` is target shape m's memory (0 = unknown: memory not counted). Exposed for
  // tests. `strand_percent` is step 2's weight w in percent.
  static int64_t ResourceFragment(const NodeFree& node, int64_t memory_mib, const TargetWorkload& target,
                                  const std::vector<int64_t>& shape_memory_mib, int64_t strand_percent = 100);
  // Step 2 is FGD's Σ_m count_m F_n(m) (FragmentMeter, a few steps per device) plus the GPU stranded by memory,
  // which only the groups whose pods the free memory may not feed add. The target's shapes grouped by their GPU
  // request (count, share, model constraints), each member with its CPU, memory and count, tell which: a learned
  // target has hundreds of shapes in dozens of groups, and on most nodes the memory feeds all but one or two.
  // Built when the target or the means change.
  struct ShapeGroups {
    struct Member {
      int64_t cpu_milli = 0;
      int64_t memory_mib = 0;  // 0 = unknown: memory not counted
      int64_t count = 0;
    };
    struct Group {
      PodShape gpu;                 // the shared GPU request (cpu_milli 0)
      std::vector<Member> members;  // by CPU, ascending
    };
    // What a free CPU means to one group: the members it fits (a prefix, by CPU) and the largest memory among them.
    struct AtCpu {
      int64_t max_memory = 0;  // 0 if none, or none with a known memory
      uint32_t fits = 0;
    };
    std::vector<Group> groups;
    std::vector<int64_t> cpu_levels;  // the members' distinct CPU demands, ascending
    // Per CPU rank (how many cpu_levels a free CPU reaches) and group: at_cpu[rank * groups.size() + g].
    std::vector<AtCpu> at_cpu;
    // Per CPU rank, the groups with a fitting member of known memory, those a node's memory is most likely not to
    // feed first: single-device groups by largest memory per milli of share (a node hosts at most idle / share of
    // their pods), the others by largest memory per device (at most devices / count pods). Rank r's groups are
    // single[single_from[r] .. single_from[r + 1]), likewise multi.
    std::vector<uint32_t> single, multi;
    std::vector<uint32_t> single_from = {0, 0}, multi_from = {0, 0};  // an empty target: rank 0, no groups
    size_t CpuRank(int64_t cpu_milli) const;
    static ShapeGroups Of(const TargetWorkload& target, const std::vector<int64_t>& shape_memory_mib);
  };
  // Step 2's GPU stranded by memory alone (ResourceFragment less FGD's weighted fragment), for `groups`.
  static int64_t MemoryStranded(const NodeFree& node, int64_t memory_mib, const ShapeGroups& groups,
                                int64_t strand_percent);
  // Step 2's weight w, in percent, for ρ = `memory_per_gpu_ratio`.
  static int64_t MemoryStrandPercent(double memory_per_gpu_ratio);
  // Step 3: the node's idle GPU (milli) beyond what its free CPU can feed at `cpu_per_gpu_milli` CPU milli per
  // GPU milli, max(0, Σ g_i − free CPU / c̄); 0 when c̄ ≤ 0.
  static int64_t CpuStrandedGpu(const NodeFree& node, double cpu_per_gpu_milli);
  // Step 7's share (per mille) of each GPU of a set of node kinds that the demand only it can serve is expected
  // to need: min(1000, 1000 · (exclusive / demand) · free_total / free_model), where exclusive / demand is the
  // share of the target's GPU demand whose shapes exactly these kinds can host, and free_* the free GPU of the
  // set and the cluster (1000 when the set has none free).
  static int64_t ReservePerMille(int64_t exclusive, int64_t demand, int64_t free_model, int64_t free_total);
  // Step 7's per-mille for the kinds of `model` as of the last refresh, min(1000, Σ r_S over the sets that hold
  // a kind), the largest over its kinds (0 for a model never seen).
  int64_t reserve_per_mille(std::string_view model) const;
  // Step 7: a kind of GPU node (the first device's model, the device count, CPU and memory), with its free GPU
  // and per-mille as of the last refresh.
  struct NodeKind {
    std::string model;
    int devices = 0;
    int64_t cpu_milli = 0;
    int64_t memory_mib = 0;
    int64_t free_milli = 0;
    int64_t per_mille = 0;
  };
  // Step 3's c̄ (0 before anything was learned) and whether the CPU binds (then CPU-only requests see it too).
  double cpu_per_gpu() const { return cpu_per_gpu_; }
  bool cpu_binds() const { return cpu_binds_; }

 private:
  struct ShapeMemory {
    int64_t sum_mib = 0;
    int64_t count = 0;
  };

  int64_t Evaluate(const ClusterState& state, const TaskRequest& request, int node, const std::vector<int>& devices,
                   int64_t before) override;
  bool uses_weighted_before() const override { return false; }  // F' before is measured in Evaluate
  // Equal Δ: the tighter device (less free) keeps the larger holes whole.
  bool PreferOnTie(const ClusterState& state, int node, int d, int best) const override {
    return state.FreeDeviceCompute(node, d) < state.FreeDeviceCompute(node, best);
  }
  // shape_memory_ (and step 7's reserve, from `state`) for the current target; true when it was recomputed.
  bool RefreshShapeMemory(const ClusterState& state);
  // Step 7: reserve_'s free GPU per node kind, read from the cluster (with each refresh; new kinds appended).
  void ReadKindFree(const ClusterState& state);
  // Step 7: reserve_'s per-mille from the arrivals' demand and the free GPU last read; true when one changed.
  bool RecomputeReserve();
  // The index in reserve_ of the node's kind, -1 if none (no device, or not read yet).
  int KindOf(const Node& node) const;
  // Step 7: GPU milli that `request` would take, on `devices` devices of `node`, from the reserve of the sets it
  // is not confined to: each device's grant × the node kind's ReserveCharge per-mille / 1000.
  int64_t ReserveCost(const TaskRequest& request, const Node& node, size_t devices);
  // Step 7: per kind of reserve_, the per-mille `request` pays on its devices: the reserves of the sets it is not
  // confined to (cached for the last request's model constraints and, for a multi-device one, its size).
  const std::vector<int64_t>& ReserveCharge(const TaskRequest& request);
  // Step 2 with the learned target and means: FGD's weighted fragment (meter()) + MemoryStranded.
  int64_t Fragment(const NodeFree& node, int64_t memory_mib) {
    return meter().Weighted(node) + MemoryStranded(node, memory_mib, groups_, strand_percent_);
  }

  std::unordered_map<PodShape, ShapeMemory, PodShapeHash> memory_seen_;  // per placed shape
  // Step 7's demand, from every arrival (skipped ones and shapes outside the target included: a pod skipped for
  // want of a host costs its whole request): the GPU asked in all, and per shape that not every kind may host
  // (a model constraint, or several devices), in first-arrival order, the arrivals per memory asked (MiB; 0 for a
  // one-device shape, whose hosts do not depend on it).
  struct ConfinedArrivals {
    PodShape shape;
    std::map<int64_t, int64_t> by_memory;
  };
  std::vector<ConfinedArrivals> confined_;
  std::unordered_map<PodShape, size_t, PodShapeHash> confined_index_;
  int64_t arrived_gpu_milli_ = 0;
  std::vector<int64_t> shape_memory_;  // per target shape (mean MiB)
  ShapeGroups groups_;                 // the target with shape_memory_, grouped (rebuilt with it)
  const WeightedShape* target_key_ = nullptr;
  int64_t target_total_ = -1;
  int64_t placed_ = 0;
  int64_t placed_at_refresh_ = -1;
  uint64_t memory_refreshes_ = 0;  // refreshes made in OnPlaced (each moves ScoreEpoch)
  int64_t strand_percent_ = 100;   // step 2's w, recomputed with shape_memory_
  int64_t cluster_gpu_milli_ = 0;  // the cluster's GPU and memory, as of the last OnPlaced
  int64_t cluster_memory_mib_ = 0;
  int64_t cluster_cpu_milli_ = 0;
  double cpu_per_gpu_ = 0;  // step 3's c̄, recomputed with shape_memory_
  bool cpu_binds_ = false;
  // F' before placement per node, reused for every request shape and device choice scored on the node while
  // it, its state (ClusterState::identity()) and the measure (measure_version_) stay the same.
  struct Before {
    bool valid = false;
    uint64_t identity = 0;
    uint64_t generation = 0;
    uint64_t measure = 0;
    int64_t weighted = 0;
  };
  std::vector<Before> before_memo_;
  std::vector<NodeKind> reserve_;  // step 7, per kind of GPU node of the cluster
  // Step 7, per set of kinds (a strict subset of reserve_) that alone can host some target demand.
  struct ReserveSet {
    std::vector<bool> kinds;  // the kinds, by reserve_ index
    int64_t demand = 0;       // the target's GPU demand confined to exactly these kinds
    int64_t per_mille = 0;    // r_S
  };
  std::vector<ReserveSet> reserve_sets_;
  uint64_t reserve_version_ = 0;  // moves whenever reserve_sets_ or a per-mille changes
  // ReserveCharge's cache: the constraints and the reserve it was computed for.
  std::vector<std::string> charge_include_, charge_exclude_;
  uint64_t charge_version_ = ~uint64_t{0};
  size_t charge_kinds_ = 0;
  int charge_devices_ = 0;
  int64_t charge_cpu_ = 0, charge_memory_ = 0;
  std::vector<int64_t> charge_;
  uint64_t measure_version_ = 0;  // moves whenever groups_ or strand_percent_ change
  NodeFree range_free_;           // MemoryRange's scratch
};

}  // namespace xpool
