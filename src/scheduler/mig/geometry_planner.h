#pragma once
// The MIG geometry planner: given each MIG-capable GPU's current instances and the waiting demand for MIG
// profiles, decides which idle instances to destroy and which instances to create so that the demand is served,
// following the placement rules of model/mig_profile.h. The dynamic-MIG idea is HAMi's (v2.10: the scheduler
// picks MIG geometry from demand and reconfigures idle GPUs); the placement model is NVIDIA's MIG user guide.
//
// Pure: no I/O, no clock, no globals, integers only. Free functions over value types; thread-safe.
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/mig_profile.h"

namespace xpool {

// One existing GPU instance.
struct MigInstance {
  MigPlacement placement;
  bool busy = false;  // a task runs on it: never destroyed
};

// One MIG-capable GPU as the planner sees it. `model` points into AllMigModels() (or another table that outlives
// the call) and must not be null.
struct MigGpu {
  const MigModel* model = nullptr;
  std::vector<MigInstance> instances;
};

// `count` instances of the profile named `profile` are wanted (a name resolves per model: "1g.10gb" spans two
// slots on an A100 40GB and one on an A100 80GB). With `profile` empty, each unit is a device asked by memory and
// compute instead, served on each model by MigProfileForRequest's profile (HAMi's dynamic-mig choice, the smallest
// that covers both with memory counted against what the driver reports usable; 0 = no requirement).
struct MigDemand {
  std::string profile;
  int count = 0;
  int64_t memory_mib = 0;
  int64_t compute_milli = 0;
  friend bool operator==(const MigDemand&, const MigDemand&) = default;
};

// The index in `model.profiles` of the profile that serves one unit of `demand` on that model, -1 for none.
int MigDemandProfile(const MigModel& model, const MigDemand& demand);

// One instance on one GPU (index into the planner's input).
struct MigInstanceRef {
  int gpu = 0;
  MigPlacement placement;
  friend bool operator==(const MigInstanceRef&, const MigInstanceRef&) = default;
};

struct MigPlan {
  std::vector<MigInstanceRef> reuse;    // idle instances that already have a demanded profile
  std::vector<MigInstanceRef> destroy;  // idle instances to destroy, first
  std::vector<MigInstanceRef> create;   // then the instances to create, in order
  std::vector<MigDemand> unmet;         // demand the plan leaves unserved, in input order
  std::vector<int> served;              // per demand entry: the units the plan serves (reused or created)
};

// Plans for `demand`, served in the order given (a caller passes it in queue order: earlier entries are served
// first where they compete for slots):
//   1. Reuse: an idle instance of a demanded profile serves one unit of that demand (GPUs in input order).
//   2. Fill GPUs in use (a busy or reused instance): each unit goes to the free start slot that removes the fewest
//      other placements (fragmentation), else to a start freed by destroying the fewest idle, unreused instances.
//   3. Repartition the other GPUs, one at a time in input order: the geometry of its model that serves the most
//      remaining demand (lexicographically, in demand order), then the one destroying fewest instances; a GPU
//      whose best geometry serves nothing is left as it is.
//   4. What remains is `unmet`.
// Busy instances are never destroyed and every GPU's geometry after the plan is valid for its model. With
// `fill_only`, step 3 is left out: only GPUs in use are changed (a caller plans several nodes and keeps idle GPUs
// whole while slices beside the instances in use can serve).
// InvalidArgument when a GPU has no model or an invalid current geometry, or a demand has a negative count.
Result<MigPlan> PlanMigGeometry(std::span<const MigGpu> gpus, std::span<const MigDemand> demand,
                                bool fill_only = false);

// A GPU's instances after the plan's destroys and creates (busy flags kept; created ones idle).
std::vector<MigInstance> InstancesAfter(const MigGpu& gpu, int gpu_index, const MigPlan& plan);

// Checks a plan against its input: every destroy names an existing idle instance, at most once; nothing reused
// is destroyed; every GPU's geometry after the plan is valid. InvalidArgument naming the first problem.
Status ValidateMigPlan(std::span<const MigGpu> gpus, const MigPlan& plan);

}  // namespace xpool
