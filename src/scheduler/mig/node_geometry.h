#pragma once
// The geometry planner's view of one node whose agent lets the server repartition its MIG GPUs (`xpool agent
// --mig-dynamic`, label kMigDynamicLabel): the one place that says which GPUs of a node may be planned now and
// which of their instances are in use, shared by the fit (may a request by size wait for an instance of its own
// size here?) and the control plane (which plan to send).
//
// Pure: no I/O, no clock, no globals. Free functions over value types; thread-safe.
#include <optional>
#include <vector>

#include "model/cluster_state.h"
#include "model/mig_label.h"
#include "scheduler/mig/geometry_planner.h"

namespace xpool {

// A node's dynamic GPUs as the label gives them, and as the planner takes them (same order).
struct ReplannableMig {
  std::vector<MigGpuGeometry> geometries;
  std::vector<MigGpu> gpus;  // an instance is busy when its device is allocated (GPUs offered by slots)
  bool slotted = false;      // every GPU is offered by start slots (its devices keep their positions)
};

// nullopt when the node cannot be repartitioned now: it has no (or a bad) kMigDynamicLabel, or a GPU is offered
// by its instances only while any device of the node is allocated (allocations name devices by position, and
// only GPUs offered by slots keep their positions across a change).
std::optional<ReplannableMig> ReplannableMigOf(const Node& node, const NodeUsage& usage);

// Whether the planner, on this node as it is now, would serve every unit of `demand` (idle instances of the
// profile it asks for reused, others made on idle slices).
bool MigDemandCanBeServedOn(const Node& node, const NodeUsage& usage, const MigDemand& demand);

}  // namespace xpool
