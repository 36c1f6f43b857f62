#pragma once
// KubeCluster: the extender's picture of a Kubernetes cluster — one ClusterState built from the nodes'
// xpool.io/node-devices annotations and the pods' xpool.io/allocation annotations — and the placement of pods on
// it with the shared scheduler (FitNode → PlacementPolicy::Score → MakeAllocation, per candidate node, because the
// extender protocol asks about one node at a time).
//
// Concurrency: every method takes one mutex, for in-memory work only (microseconds per node; no I/O, no API
// calls, nothing that waits). Binds reserve devices here (Reserve) and talk to the API server after releasing it,
// so concurrent binds never wait on each other's network round trips, and two binds racing for the last device
// are decided by whichever Reserve runs first — the other gets "does not fit" and nothing is over-allocated.
// Thread-safe.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "k8s/annotations.h"
#include "k8s/kube_objects.h"
#include "k8s/pod_demand.h"
#include "k8s/time_share.h"
#include "model/cluster_state.h"
#include "scheduler/policy.h"
#include "scheduler/preemption/victim_selection.h"

namespace xpool::k8s {

// One node's answer for one pod.
struct NodeFit {
  enum class Kind : uint8_t {
    kFits,
    kWait,       // not with what is free now (preempting or waiting may help)
    kNeverFits,  // not even if the node were empty: preemption cannot help
  };
  Kind kind = Kind::kNeverFits;
  std::string reason;  // empty when it fits
  int64_t score = 0;   // the policy's score, summed over the pod's containers (meaningful when it fits)
};

// One device of one node as booked (for metrics).
struct DeviceBooking {
  std::string node;
  std::string uuid;
  std::string model;
  int index = 0;
  int64_t memory_mib = 0;  // capacity
  int64_t allocated_memory_mib = 0;
  int64_t allocated_compute_milli = 0;
  int sharers = 0;
};

// One container's grant on one device (for metrics).
struct ContainerBooking {
  std::string pod_uid;
  std::string pod_key;  // namespace/name; "" until the watch has shown the pod
  std::string node;
  std::string container;
  std::string uuid;
  int64_t memory_mib = 0;
  int64_t compute_milli = 0;
};

struct KubeClusterStats {
  int nodes = 0;
  int bookings = 0;     // pods holding devices
  int unconfirmed = 0;  // reserved by a bind the API server has not shown back yet
  int64_t reserve_ok = 0;
  int64_t reserve_refused = 0;
  int64_t observed_conflicts = 0;  // pods whose recorded allocation no longer fit (not applied)
};

// A running pod to suspend so that another fits (KubeCluster::ChooseVictims).
struct PodVictim {
  std::string uid;
  std::string pod_key;  // namespace/name
  std::string node;
  std::string queue_key;  // QueueKey: whose suspension count it adds to
  std::string reason;     // "suspended for pod ml/big (tenant ml, priority 90): lower priority (10 < 90)"
};

// One victim search: the preemptor's terms and the rules (scheduler/preemption/victim_selection.h).
struct VictimSearch {
  PodTerms preemptor;
  std::string preemptor_key;              // namespace/name, for the reasons
  std::vector<std::string> nodes;         // where the pod may go
  const TenantConfig* tenants = nullptr;  // nullptr: no namespace has a guarantee or a limit
  PreemptionRules rules;
  TimeMicros now = 0;
  std::map<std::string, int> suspensions_last_hour;  // by QueueKey
  std::unordered_set<std::string> excluded;          // pod uids that are never victims here (already leaving)
};

struct VictimPlan {
  bool fits_now = false;  // fits on `node` without a victim
  bool found = false;     // fits on `node` once `victims` have left
  std::string node;
  std::vector<PodVictim> victims;
  std::string reason;  // neither: why
};

class KubeCluster {
 public:
  struct Options {
    std::string default_policy = "default";
    uint64_t seed = 1;
    // A reservation the API server has not shown back survives a relist for this long (a bind in flight).
    TimeMicros unconfirmed_grace = 120 * kMicrosPerSecond;
  };

  // Fails when the default policy is unknown.
  static Result<std::unique_ptr<KubeCluster>> Create(Options options, const Clock& clock);

  // Nodes. A node whose device annotation is malformed is kept, and every managed pod is refused there with the
  // decoding error as the reason.
  void UpsertNode(const KubeNode& node);
  void RemoveNode(const std::string& name);
  // After a relist: upserts every node, removes the ones not listed.
  void ReplaceNodes(const std::vector<KubeNode>& nodes);
  bool HasNode(const std::string& name) const;

  // Pods (from the watch). A running or pending pod with an xpool.io/allocation annotation holds its devices; a
  // terminated or deleted one releases them.
  void ObservePod(const PodInfo& pod);
  void ForgetPod(const std::string& uid);
  // After a relist: observes every pod, releases bookings of pods not listed (except recent unconfirmed ones).
  void ReplacePods(const std::vector<PodInfo>& pods);

  // How the pod fits each named node, in order. Does not change the state.
  std::vector<NodeFit> Evaluate(const std::string& pod_uid, const PodDemand& demand,
                                const std::vector<std::string>& nodes);
  // As Evaluate for one node, with the devices of `victims` (pod uids) counted as free.
  NodeFit EvaluateWithout(const PodDemand& demand, const std::string& node, const std::vector<std::string>& victims);
  // Places the pod on `node` and books its devices. ResourceExhausted (with the reason) when it does not fit now;
  // AlreadyExists when the pod is already booked on another node; OK and the same assignment when it is booked
  // on this node already (a retried bind).
  Result<PodAssignment> Reserve(const std::string& pod_uid, const PodDemand& demand, const std::string& node);
  // Frees a reservation (bind failed). NotFound when the pod holds nothing.
  Status Unreserve(const std::string& pod_uid);

  // Time-sharing (kube_cluster_victims.cc). The running pods to suspend so that `demand` fits on one of
  // `search.nodes`, chosen with the server's rules and search (RankVictims, ChooseVictims): only pods the watch has
  // shown with their terms, only preemptible ones, lower priority or (guarantees) equal priority of a tenant above
  // its guarantee, past min-runtime, under the suspension cap. Does not change the state.
  Result<VictimPlan> ChooseVictims(const PodDemand& demand, const VictimSearch& search);
  // Empty when the pod keeps its namespace within the limits `tenants` sets for it (counting the pods the watch
  // has shown with their terms, the pod itself left out); else the first limit it breaks, e.g. "tenant ml at its
  // gpu limit (2000/2000 milli)".
  std::string LimitReason(const std::string& pod_uid, const PodTerms& terms, const PodDemand& demand,
                          const TenantConfig& tenants) const;
  // Managed pods the watch shows unbound and not being deleted (candidates for the time-sharing loop).
  std::vector<PodInfo> PendingPods() const;
  // The Kubernetes names of the known nodes, sorted.
  std::vector<std::string> NodeNames() const;
  // Whether the pod holds devices here (booked by a bind or seen with an allocation).
  bool Holds(const std::string& pod_uid) const;

  KubeClusterStats Stats() const;
  // Every device of every known node with what is booked on it (zeros included), by node name then index.
  std::vector<DeviceBooking> Devices() const;
  // Every booked container grant, by pod uid.
  std::vector<ContainerBooking> Containers() const;
  // The ClusterState's own invariant check (no device over-allocated).
  Status CheckInvariants() const;
  // Free device memory on a node (sum over devices), for tests and metrics; -1 when unknown.
  int64_t FreeDeviceMemory(const std::string& node) const;

 private:
  struct Booking {
    std::string node;                     // Kubernetes node name
    std::string pod_key;                  // namespace/name, once seen
    int index = -1;                       // ClusterState node index
    std::vector<Allocation> allocations;  // applied to the state: one per app/sidecar container, + init excess
    PodAssignment assignment;
    bool confirmed = false;  // seen on the API server
    TimeMicros reserved_at = 0;
    // From the watch (time-sharing): the pod's terms (unset when its annotations are malformed: never a victim),
    // its QueueKey and when it started holding its devices (xpool.io/bind-time, else when seen).
    std::optional<PodTerms> terms;
    std::string queue_key;
    TimeMicros started = 0;
  };
  friend class PodPlacer;

  KubeCluster(Options options, const Clock& clock) : options_(std::move(options)), clock_(&clock) {}

  void UpsertNodeLocked(const KubeNode& node);
  void RetireIndexLocked(int index);
  void ReleaseLocked(const std::string& uid);
  void ObservePodLocked(const PodInfo& pod);
  // Applies `containers` (recorded device uuids) to the state on booking->index, adding to its allocations: a
  // uuid the node no longer has is skipped, a container that no longer fits counts as an observed conflict.
  void BookContainersLocked(Booking* booking, const std::vector<ContainerAssignment>& containers);
  Result<PlacementPolicy*> PolicyLocked(const std::string& name);
  // Evaluates (and with `commit`, applies) the demand on one node index.
  // `applied`: what was applied to the state (to release later); `per_container`: each container's grants, in
  // demand order (init containers' grants are not all applied: see InitExcess).
  NodeFit FitLocked(const PodDemand& demand, int index, bool commit, std::vector<Allocation>* applied,
                    std::vector<Allocation>* per_container);
  NodeFit NodeFitLocked(const PodDemand& demand, const std::string& node, bool commit, std::vector<Allocation>* applied,
                        std::vector<Allocation>* per_container);
  // Chooses devices for one container on the state as it is (not applied). False with `out` set when it does not
  // fit.
  bool PlaceContainerLocked(const ContainerDemand& c, int index, PlacementPolicy& policy, Allocation* a, int64_t* score,
                            NodeFit* out);
  PodAssignment AssignmentLocked(const PodDemand& demand, int index, const std::vector<Allocation>& allocs) const;
  void NoteTermsLocked(Booking* booking, const PodInfo& pod);
  void NotePendingLocked(const PodInfo& pod);

  const Options options_;
  const Clock* clock_;
  mutable std::mutex mu_;
  ClusterState state_;                                                // guarded by mu_
  std::unordered_map<std::string, int> index_;                        // node name → live index; guarded by mu_
  std::unordered_map<std::string, std::string> node_errors_;          // node name → annotation error; guarded by mu_
  int internal_names_ = 0;                                            // guarded by mu_
  std::unordered_map<std::string, Booking> bookings_;                 // pod uid → booking; guarded by mu_
  std::unordered_set<std::string> arrived_;                           // pod uids told to OnArrival; guarded by mu_
  std::unordered_map<std::string, PodInfo> pending_;                  // uid → unbound managed pod; guarded by mu_
  std::map<std::string, std::unique_ptr<PlacementPolicy>> policies_;  // guarded by mu_
  Rng rng_;                                                           // guarded by mu_
  KubeClusterStats counters_;                                         // guarded by mu_
};

}  // namespace xpool::k8s
