#pragma once
// ControlPlane: the server's core — the queue, the ClusterState and the scheduling loop, over a StateStore.
//
// - On Start() it rebuilds the ClusterState from the store (nodes, then every live allocation) and the queue
//   (every queued job), then runs a loop thread that schedules on submit, on release, on node change and on a
//   periodic tick.
// - Queue order: priority (high first), then first-submit time, then id. (Fair share and preemption come later.)
// - Gang: a job's replicas are placed all-or-nothing. Each placement is committed to the store
//   (CommitPlacement: allocations + state + event in one transaction) and then kept in the ClusterState; if the
//   commit fails the ClusterState is rolled back, so the two never disagree.
// - A job that cannot be placed keeps the scheduler's reason ("why pending"), in memory (recomputed after a
//   restart by the first pass).
// - Nodes: registered through RegisterNode (the admin API today, the agent later) and persisted; heartbeats are
//   memory-only. A non-simulated node silent for `node_timeout` becomes NotReady.
//
// Owned by the Server. Thread-safe: one mutex guards the queue and the ClusterState (scheduling passes hold
// it); heartbeats take a separate small lock. Store calls that acknowledge a submission happen outside the
// lock, so slow commits do not block scheduling.
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "model/cluster_state.h"
#include "scheduler/policy.h"
#include "server/metrics.h"
#include "store/state_store.h"

namespace xpool::server {

struct ControlPlaneOptions {
  std::string policy = "best-fit";
  uint64_t seed = 42;
  TimeMicros tick = 1'000'000;
  TimeMicros node_timeout = 30'000'000;
};

// A node as the API shows it: description, what is allocated on it, when its agent last reported.
struct NodeView {
  Node node;
  NodeUsage usage;
  TimeMicros last_seen_us = 0;
};

class ControlPlane {
 public:
  // `metrics` may be null (tests). The store and clock must outlive this object.
  ControlPlane(StateStore& store, Clock& clock, MetricsRegistry* metrics, ControlPlaneOptions options);
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // Rebuild() then start the loop thread.
  Status Start();
  // Loads nodes, allocations and the queue from the store (no thread). Called once.
  Status Rebuild();
  void Stop();

  // ---- Jobs. The store is the record; these keep the queue and ClusterState in step with it. ----
  // Commits the job (acknowledged only after the commit), then queues it and wakes the loop.
  Result<JobRecord> Submit(TenantId tenant, const JobSpec& spec);
  Result<JobRecord> Cancel(JobId id, std::string_view reason);
  Result<JobRecord> Suspend(JobId id);
  Result<JobRecord> Resume(JobId id);
  // A job's tasks ended (reported by an agent): moves it to `to` (succeeded or failed) and releases its devices.
  Result<JobRecord> Finish(JobId id, JobState to, std::string_view reason);
  // The scheduler's last reason for a queued job; "" when none.
  std::string PendingReason(JobId id) const;

  // ---- Nodes ----
  // Inserts or replaces a node (persisted). A replaced node must keep its device count while it holds
  // allocations.
  Status RegisterNode(Node node);
  // An agent's report: marks the node seen (and Ready again). Memory only.
  Status Heartbeat(std::string_view name);
  Status SetCordoned(std::string_view name, bool cordoned);
  std::vector<NodeView> Nodes() const;
  Result<NodeView> GetNode(std::string_view name) const;

  // One scheduling pass now: `full` tries every queued job, else only the ones submitted since the last pass.
  // Returns the number of jobs placed. The loop calls it; tests may call it directly.
  int RunPass(bool full);
  // Asks the loop for a pass soon.
  void Wake(bool full);

  // Sets the scrape-time gauges (queue length per tenant, per-device capacity and allocation, nodes).
  void ExportGauges(MetricsRegistry& metrics) const;
  // OK when the allocations in the store are exactly what the ClusterState holds (crash tests, /readyz).
  Status CheckConsistency() const;
  size_t queue_length() const;

 private:
  struct QueueKey {
    int priority;
    TimeMicros submitted_us;
    JobId id;
    bool operator<(const QueueKey& o) const {
      if (priority != o.priority) return priority > o.priority;
      if (submitted_us != o.submitted_us) return submitted_us < o.submitted_us;
      return id < o.id;
    }
  };
  struct QueuedJob {
    QueueKey key;
    TenantId tenant;
    TaskRequest request;
    int replicas = 1;
    std::string reason;
  };
  struct GangResult {
    bool placed = false;
    bool stop_pass = false;  // the store failed: try again later
    std::string reason;
  };

  void Loop();
  void EnqueueLocked(const JobRecord& job);
  void DequeueLocked(JobId id);
  GangResult PlaceLocked(QueuedJob& job);
  void ReleaseLocked(JobId id);
  void CheckNodeTimeouts();
  std::string TenantName(TenantId id) const;

  StateStore& store_;
  Clock& clock_;
  MetricsRegistry* metrics_;
  const ControlPlaneOptions options_;

  mutable std::mutex mu_;
  ClusterState state_;                                            // guarded by mu_
  std::unique_ptr<PlacementPolicy> policy_;                       // guarded by mu_
  Rng rng_;                                                       // guarded by mu_
  std::set<QueueKey> queue_;                                      // guarded by mu_
  std::unordered_map<JobId, QueuedJob> queued_;                   // guarded by mu_
  std::vector<JobId> fresh_;                                      // submitted since the last pass; mu_
  std::unordered_map<JobId, std::vector<Allocation>> placed_;     // guarded by mu_
  mutable std::map<int64_t, std::string> tenant_names_;           // guarded by mu_

  mutable std::mutex seen_mu_;
  std::unordered_map<std::string, TimeMicros> last_seen_;  // guarded by seen_mu_

  std::mutex loop_mu_;
  std::condition_variable loop_cv_;
  bool wake_ = false;       // guarded by loop_mu_
  bool wake_full_ = false;  // guarded by loop_mu_
  bool stop_ = false;       // guarded by loop_mu_
  std::thread loop_;
};

}  // namespace xpool::server
