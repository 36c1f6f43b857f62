#pragma once
// The fill experiment (fill.h) with every GPU in dynamic-MIG mode instead of shared slices: `xpool sim fill
// --policy mig` (or `mig:MODEL`), so one run compares the two ways of sharing a GPU on the same cluster, pods and
// seeds.
//
// The model: every GPU of the cluster is taken to be MODEL, a table of model/mig_profile.h (A100-80GB unless
// named), whatever the node list calls it (gpu_spec selectors still match the node list's model). A pod asking
// gpu_milli on each of num_gpu GPUs gets, on num_gpu GPUs of one node, an instance of the smallest profile whose
// compute covers gpu_milli (HAMi's dynamic-mig choice, SmallestCoveringMigProfile; the trace gives no GPU memory,
// so compute alone decides: 0.5 of a GPU is a 4g.40gb on an A100-80GB); a whole GPU is the full-size profile. The
// instance is created where the geometry planner (scheduler/mig/geometry_planner.h) puts it on that GPU. Pods
// never leave, as in fill, so no instance is idle and none is destroyed.
//
// Placement: among nodes whose CPU and memory fit and whose GPUs the pod's selectors allow, the one whose chosen
// GPUs use the fewest GPUs without instances, then leave the fewest free compute slices on those GPUs (best fit:
// partitioned GPUs fill up and whole GPUs stay whole); ties go to the first node in the run's order (fill.h,
// NodeOrder). On a node, the GPUs are chosen the same way. A CPU-only pod goes to the first node that fits.
//
// The curve: `allocation_pct` counts what the placed pods asked for (gpu_milli, as in a shared run), so the two
// are compared on the same measure; `frag_pct` is the compute the instances hold beyond what their pods asked (a
// profile rounds a request up), % of capacity, and `frag_ratio_pct` that share of the idle GPU.
//
// Functions over value types; a run owns its state, so runs may go in parallel threads.
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/cluster_state.h"
#include "model/mig_profile.h"
#include "sim/fill.h"
#include "sim/trace.h"

namespace xpool::sim {

// True for "mig" and "mig:..." (the policy names a MIG run answers to).
bool IsMigFillPolicy(std::string_view policy);

// The MIG table a "mig[:MODEL]" policy names: A100-80GB for "mig"; InvalidArgument naming the tabled models when
// MODEL is not one.
Result<const MigModel*> MigFillModel(std::string_view policy);

// One run as RunFill (same pod composition and node order for the same options), with options.policy a MIG
// policy name.
Result<FillCurve> RunMigFill(const ClusterState& cluster, const std::vector<TracePod>& pods,
                             const FillOptions& options);

}  // namespace xpool::sim
