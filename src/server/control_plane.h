#pragma once
// ControlPlane: the server's core — the queue, the ClusterState and the scheduling loop, over a StateStore.
//
// - On Start() it rebuilds the ClusterState from the store (nodes, then every live allocation), the queue (every
//   queued job) and the jobs holding devices (scheduled, running, suspending), then runs a loop thread that
//   schedules on submit, on release, on node change and on a periodic tick.
// - Each pass is RunSchedulingPass (scheduler/queue/scheduling_pass.h, the code the simulator runs too): queue
//   order priority → DRF between tenants → first submit time; tenant limits from the store's quotas (a job at a
//   limit waits with the reason); gangs all-or-nothing; preemption by suspend with min-runtime and a cap of
//   suspensions per job per hour. A preemption is an event on both jobs; the victims go running → suspending
//   (their agent signals the task to checkpoint and exit, see AgentService) and the preemptor waits for them.
//   When a victim's tasks have ended (SuspendDone) it goes suspending → suspended → queued, keeping its first
//   submit time (restart_count + 1); a job suspended by hand stays suspended until Resume. The room the victims
//   free is reserved for the preemptor (no victim or other waiting job takes it) and the preemptor is booked
//   there in the first pass after its last victim left.
// - Each placement is booked in the ClusterState (the job held, "committing") and, once the pass has let go of
//   the lock, committed to the store (CommitPlacement: allocations + state + event in one transaction); if the
//   commit fails the booking is undone (the job back in the queue, or dropped when it was cancelled meanwhile),
//   so the two never disagree once a pass has returned.
// - A job that cannot be placed keeps the pass's reason ("why pending"), in memory and in the store
//   (JobRecord::pending_reason), so it survives a restart.
// - Nodes: registered through RegisterNode (the admin API or an agent) and persisted; heartbeats are memory-only.
//   A non-simulated node silent for `node_timeout` becomes NotReady (nothing new is placed there); silent for
//   `node_timeout + fence_margin`, every job holding devices there goes back to the queue (restart_count + 1: the
//   placement epoch, first submit kept, its allocations released in the same transaction). The margin is the
//   fencing contract (docs/agent.md): the node's tasks stop themselves at the node timeout, so by then they are
//   gone and the job never has two live runs.
// - The no-thrash rules survive a restart: the last start and every suspension are in the store.
//
// Owned by the Server. Thread-safe: one mutex guards the queue and the ClusterState; a scheduling pass holds it
// to compute and book its placements, and commits the placements (an fsync each) after letting go of it. The
// agents' start and end reports and cancels commit their transition before taking it (TransitionUnlocked).
// Preemption, which is rare, is the exception: the victims' transitions to suspending and the preempt event are
// committed under the lock, so no request or other pass ever sees a victim chosen but not yet suspending.
// Heartbeats of Ready nodes take only a separate small lock. Store calls that acknowledge a submission happen
// outside the lock too.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "model/cluster_state.h"
#include "scheduler/policy.h"
#include "server/change_feed.h"
#include "server/metrics.h"
#include "store/state_store.h"

namespace xpool {
struct QueueJob;           // scheduler/queue/queue_types.h
struct MigDemand;          // scheduler/mig/geometry_planner.h
class SchedulerJobPlacer;  // scheduler/queue/scheduler_job_placer.h
}  // namespace xpool

namespace xpool::server {

struct ControlPlaneOptions {
  std::string policy = "default";  // the fragmentation-aware policy (docs/scheduling.md)
  uint64_t seed = 42;
  TimeMicros tick = 1'000'000;
  TimeMicros node_timeout = 30'000'000;
  // How much longer than node_timeout a lost node's jobs wait before they are requeued: covers the tasks' own
  // stop (their shim's lease check and kFenceGrace, agent/task_shim.h) with room to spare.
  TimeMicros fence_margin = 5'000'000;
  // Time-sharing (issue 7): suspend lower work for higher / guaranteed work.
  bool preemption = true;
  TimeMicros min_runtime = 600'000'000;  // a job that started less than this ago is not a victim
  int max_suspensions_per_hour = 3;      // per job
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
  // Many jobs in one store transaction (one fsync), then queued together with one wake-up. Every spec is validated
  // first: the first invalid one is InvalidArgument naming it ("jobs[3].resources...") and nothing is stored. Then
  // one result per job, in order (the store refuses them all together when the database refuses the write).
  Result<std::vector<Result<JobRecord>>> SubmitMany(const std::vector<std::pair<TenantId, JobSpec>>& jobs);
  Result<JobRecord> Cancel(JobId id, std::string_view reason);
  // A running job: → suspending (its agent asks the task to checkpoint and exit); on a simulated node it is
  // suspended at once. Any other state: FailedPrecondition with the reason (the API answers 409). A gang is
  // suspended as a whole. The job stays suspended until Resume.
  Result<JobRecord> Suspend(JobId id);
  // A suspended job goes back to the queue, keeping its first submit time.
  Result<JobRecord> Resume(JobId id);
  // An admin's change of an unfinished job's priority (0..100): recorded in the store with an event
  // ("priority 10 -> 90 by NAME"); the queue re-orders on the next pass, which also judges preemption with the
  // new priority (a raised job may now preempt, a lowered running one may become a victim). control_plane_admin.cc
  Result<JobRecord> SetPriority(JobId id, int priority, std::string_view by);
  // Per node, the generation of the tasks the server wants there: bumped whenever they change, so agents waiting
  // on it (AgentService, the gRPC WaitForChange) act at once instead of at their next poll.
  ChangeFeed& changes() { return changes_; }
  // The agent reports a task of a scheduled job running: → running (the start time counts for min-runtime).
  Status TaskStarted(JobId id, TimeMicros at);
  // Every task of a suspending job has ended (checkpointed or killed after the grace): → suspended, releasing
  // its devices; a job suspended for another job (preemption) goes on to the queue at once.
  Status SuspendDone(JobId id, std::string_view reason);
  // A job's tasks ended (reported by an agent): moves it to `to` (succeeded or failed) and releases its devices.
  Result<JobRecord> Finish(JobId id, JobState to, std::string_view reason);
  // A job whose run ended without a request (its task fenced itself): back to the queue with `reason`, devices
  // released (restart_count + 1). FailedPrecondition unless it holds devices.
  Status Requeue(JobId id, std::string_view reason);
  // A replica of a running job failed (`what`: "exit code 1", "signal 9"). With retries left (spec.retries,
  // counted by its "retry" events) the job goes back to the queue (restart_count + 1, every replica again, its
  // devices released) and waits out its backoff, with the event "retry 2 of 3 in 20 s after exit code 1";
  // else it fails with `reason` (plus "after N retries" when it had some). control_plane_lifecycle.cc
  Result<JobRecord> FailOrRetry(JobId id, std::string_view reason, std::string_view what);
  // Jobs holding devices on the node (scheduled, running, suspending), by id; for the agent's task list.
  std::vector<JobId> JobsOnNode(std::string_view node) const;
  // The rendezvous port (MASTER_PORT) of a held job of several replicas: chosen when it is placed, unique among
  // the held gangs whose replica 0 is on the same node (server/internal/distributed_launch.h). 0 for any other.
  int MasterPort(JobId id) const;
  // The scheduler's last reason for a queued job; "" when none.
  std::string PendingReason(JobId id) const;
  // PendingReason of each of `ids` (in order) under one lock (a page of the job list).
  std::vector<std::string> PendingReasons(const std::vector<JobId>& ids) const;

  // ---- Nodes ----
  // Inserts or replaces a node (persisted). A replaced node may change its device list (count included) only
  // while none of its devices is allocated; refused, it keeps its old description.
  Status RegisterNode(Node node);
  // An agent's report: marks the node seen (and Ready again). Memory only.
  Status Heartbeat(std::string_view name);
  Status SetCordoned(std::string_view name, bool cordoned);
  std::vector<NodeView> Nodes() const;
  // One node as VisitNodes shows it: references valid only during the call.
  struct NodeVisit {
    int index;                // stable for the state's lifetime
    uint64_t state_identity;  // with usage.generation: the same pair means the same node contents
    const Node& node;
    const NodeUsage& usage;
    TimeMicros last_seen_us;
  };
  // Calls `visit` for every node in index order, under the control plane's locks: keep it short (no I/O, no
  // other locks). Lets a reader keep per-node results between calls and redo only the nodes that changed.
  void VisitNodes(const std::function<void(const NodeVisit&)>& visit) const;
  Result<NodeView> GetNode(std::string_view name) const;

  // One scheduling pass now: `full` tries every queued job, else only the ones submitted since the last pass.
  // Returns the number of jobs placed. The loop calls it; tests may call it directly.
  int RunPass(bool full);
  // Marks non-simulated nodes silent for `node_timeout` NotReady, and requeues the jobs of those silent for
  // `node_timeout + fence_margin`. The loop calls it on every tick; tests may call it directly.
  void CheckNodeTimeouts();
  // ---- Dynamic MIG (control_plane_mig.cc; docs/mig.md, "Dynamic geometry") ----
  // The MIG geometry the node's agent is asked to bring its GPUs to (--mig-geometry's syntax), "" for none: a
  // plan a pass made for the MIG demand it left waiting, on a node whose agent runs with --mig-dynamic.
  std::string WantedMigGeometry(std::string_view node) const;

  // ---- Interactive jobs (kind: interactive; control_plane_interactive.cc) ----
  // Traffic through the proxy to the job's task now: its idle clock starts again. Memory only.
  void NoteInteractiveTraffic(JobId id);
  // Cancels every running interactive job past its ttl (counted from its last start) or idle for its
  // idle-timeout (no traffic since the later of its last start, its last NoteInteractiveTraffic and this control
  // plane's first check: a restart gives every job a full idle-timeout), with the reason as the job's event
  // ("interactive ttl 8h reached", "idle for 30m ..."). Returns how many it ended. The loop calls it on every
  // tick; tests may call it directly.
  int CheckInteractiveLimits();

  // Asks the loop for a pass soon.
  void Wake(bool full);

  // Declares the metrics a ControlPlane updates (given to its constructor) and ExportGauges sets, with the
  // counters present at 0 before anything happened.
  static void DeclareMetrics(MetricsRegistry& metrics);
  // Sets the scrape-time gauges (queue length per tenant, 0 for a tenant with nothing queued; nodes).
  void ExportGauges(MetricsRegistry& metrics) const;
  // Appends the per-device families (capacity and allocation of memory and compute, in base units, with DCGM's
  // and HAMi's labels) in the text exposition format, after MetricsRegistry::Render. Rendered here rather than
  // kept in the registry: a cluster has thousands of devices and a scrape must not hold mu_ while it formats them.
  void AppendDeviceMetrics(std::string* out) const;
  // OK when the allocations in the store are exactly what the ClusterState holds (crash tests, /readyz).
  Status CheckConsistency() const;
  size_t queue_length() const;
  TimeMicros node_timeout() const { return options_.node_timeout; }

 private:
  friend class ControlPlaneTestPeer;  // control_plane_test.cc: a pass stopped between booking and commit
  // What the scheduling pass reads of a job, queued or holding devices: taken from its record (Of),
  // carried from the queue to held_ when it is placed; SetPriority updates priority in place.
  struct JobTerms {
    TenantId tenant;
    int priority = 0;
    TimeMicros first_submit = 0;
    TaskRequest request;
    int replicas = 1;
    bool preemptible = false;
    TimeMicros interactive_ttl = 0;   // kind: interactive: its ttl; 0 for a batch job
    TimeMicros interactive_idle = 0;  // kind: interactive: its idle-timeout; 0 = none

    static JobTerms Of(const JobRecord& job);
    // Makes `*job` the pass's view with these terms: pending, preemptible as here, never started nor suspended;
    // its request carries the tenant as its MPS user only `with_mps_user` (while the cluster has a device in MPS mode:
    // otherwise the scheduler's per-shape caches stay shared across tenants). Its allocations are left to the
    // caller. Assigns into `*job`, so a kept QueueJob's buffers are reused.
    void FillQueueJob(JobId id, bool with_mps_user, QueueJob* job) const;
  };
  // A job waiting in the queue (queued in the store).
  struct QueuedJob : JobTerms {
    QueuedJob() = default;
    explicit QueuedJob(JobTerms terms) : JobTerms(std::move(terms)) {}
    bool restarted = false;     // ran before (suspended or requeued)
    TimeMicros not_before = 0;  // a retry waits out its backoff: not scheduled before this
    std::string reason;         // why pending, as the last pass said
    std::string persisted;      // the reason as last written to the store
  };
  // A job holding devices (scheduled, running or suspending in the store).
  struct HeldJob : JobTerms {
    HeldJob() = default;
    explicit HeldJob(JobTerms terms) : JobTerms(std::move(terms)) {}
    JobState state = JobState::kScheduled;
    TimeMicros last_start = 0;
    std::vector<Allocation> allocations;  // one per replica, as booked in state_
    bool committing = false;              // booked by a pass whose store commit has not finished yet
    int master_port = 0;                  // several replicas: their rendezvous port (MasterPort)
  };
  // A placement booked in state_ and held_ (committing) by a pass; committed to the store after the pass
  // releases mu_, then confirmed or undone under mu_ again.
  struct PendingCommit {
    JobId id;
    std::vector<AllocationRecord> records;
    std::string nodes;  // "a,b"
    bool all_simulated = true;
    QueuedJob queued;  // to requeue it when the store refuses the commit
  };

  void Loop();
  // Rebuild: books the store's allocations into state_, each as its job's tenant's (TaskRequest::mps_user);
  // returns them by job. `held` are the jobs holding devices.
  Result<std::unordered_map<JobId, std::vector<Allocation>>> RebookLocked(const std::vector<JobRecord>& held);
  void EnqueueLocked(const JobRecord& job);
  // Tells the policy that the job's replicas arrived (it learns the workload from arrivals: fgd, default).
  void ArrivedLocked(const JobTerms& terms);
  void DequeueLocked(JobId id);
  void ReleaseLocked(JobId id);
  // A rendezvous port for a gang about to hold `allocations` (replica order), free among the held gangs whose
  // replica 0 shares its node; 0 for a single replica.
  int PickMasterPortLocked(JobId id, const std::vector<Allocation>& allocations) const;
  // Adds `id` to (or removes it from) held_on_node_ for every node its allocations touch.
  void IndexHeldLocked(JobId id, const std::vector<Allocation>& allocations, bool add);
  // RunSchedulingPass over `waiting` (queued, not awaiting victims) and every held job; carries out its
  // decisions: placements are booked and appended to `commits` for CommitPlacements.
  void PassLocked(const std::vector<JobId>& waiting, const std::vector<TenantRecord>& tenants,
                  std::vector<PendingCommit>* commits);
  // Books `allocations` in state_ and moves the job from the queue to held_ (committing); false with the
  // reason when they no longer fit.
  bool BookLocked(JobId id, const std::vector<Allocation>& allocations, std::string* reason,
                  std::vector<PendingCommit>* commits);
  // Books every preemptor whose victims have all left at its reserved allocations; one that no longer fits
  // there (a node lost or cordoned meanwhile) gives its reservation up and is scheduled afresh.
  void BookReservedLocked(std::vector<PendingCommit>* commits);
  // The first half of RunPass (the caller holds pass_mu_): under mu_, books placements into `commits` and
  // collects the changed "why pending" reasons to write.
  void BookPass(bool full, std::vector<PendingCommit>* commits,
                std::vector<std::pair<JobId, std::string>>* reason_writes);
  // Commits each booked placement to the store (without mu_), then under mu_ confirms it or undoes the booking
  // (cancelled meanwhile: dropped; store down: back in the queue). Returns the number committed.
  int CommitPlacements(std::vector<PendingCommit>& commits);
  // Commits the job's transition to `to` without holding mu_ (its fsync keeps no heartbeat, pass or API read
  // waiting), from the state the job is in when `from` accepts it: a compare-and-set on that state, read again and
  // tried again when another change committed first. True when committed; false when `from` refused its state
  // (nothing written). The caller then brings the queue and holdings in line under mu_; what ran in
  // between saw the job still in its old state (its devices still held), which at most delays a placement.
  Result<bool> TransitionUnlocked(JobId id, JobState to, std::string_view reason, TimeMicros at,
                                  bool (*from)(JobState));
  // running → suspending with `reason` (an event on the job); on simulated nodes on to suspended (and queued
  // when `requeue`). Returns true when the devices were released at once.
  Result<bool> SuspendLocked(JobId id, std::string_view reason, bool requeue, TimeMicros now);
  // suspending → suspended (→ queued when `requeue`), devices released.
  Status FinishSuspendLocked(JobId id, std::string_view reason, bool requeue, TimeMicros now);
  // Every held job on a lost node back to the queue.
  void RequeueLostLocked(const std::string& node, TimeMicros now);
  // The tasks wanted on the nodes of `allocations` changed: their agents are woken (changes_).
  void BumpNodesLocked(const std::vector<Allocation>& allocations);
  // After a restart: when a queued job that is retrying may run (its last "retry" event + that retry's delay).
  TimeMicros RetryNotBefore(const JobRecord& job);
  std::string TenantName(TenantId id) const;
  int SuspensionsLastHour(JobId id, TimeMicros now);

  StateStore& store_;
  Clock& clock_;
  MetricsRegistry* metrics_;
  const ControlPlaneOptions options_;

  std::mutex pass_mu_;  // one pass at a time (the loop; tests call RunPass directly); taken before mu_
  mutable std::mutex mu_;
  ChangeFeed changes_;                       // thread-safe on its own
  ClusterState state_;                       // guarded by mu_
  std::unique_ptr<PlacementPolicy> policy_;  // guarded by mu_
  Rng rng_;                                  // guarded by mu_
  // The passes' placer, built at the first pass and kept: its Scheduler follows state_'s change journal, so a pass
  // re-reads only the nodes that changed since the last one instead of every node. mu_
  std::unique_ptr<SchedulerJobPlacer> placer_;
  // The pass's jobs and their ids, kept between passes so that filling them reuses each element's buffers (a held
  // job's request and allocations) instead of allocating them again for every held job at every pass. mu_
  std::vector<QueueJob> pass_jobs_;
  std::vector<JobId> pass_ids_;
  std::unordered_map<JobId, QueuedJob> queued_;  // guarded by mu_
  std::vector<JobId> fresh_;                     // submitted since the last pass; mu_
  std::unordered_map<JobId, HeldJob> held_;      // guarded by mu_
  // Node index → the held jobs with an allocation there, sorted: an agent's heartbeat (JobsOnNode) and a lost
  // node cost the node's jobs, not every held job. Kept with held_; mu_
  std::unordered_map<int, std::vector<JobId>> held_on_node_;
  // Preemptors waiting for their victims to finish suspending (victims still suspending). mu_
  std::unordered_map<JobId, std::vector<JobId>> awaiting_;
  // A preemptor's planned allocations (one per replica) until it is placed or gives up: while it awaits its
  // victims, the part of them already free is held in state_ for each pass's duration; once none is left it is booked
  // there (server/internal/reservation.h). Memory only: after a restart the preemptor is scheduled afresh. mu_
  std::unordered_map<JobId, std::vector<Allocation>> reserved_;
  std::unordered_map<JobId, std::vector<TimeMicros>> suspended_at_;  // suspensions per job; mu_
  // Dynamic MIG: after a pass, the MIG demand it left waiting is planned (scheduler/mig) onto the GPUs of
  // idle nodes labelled kMigDynamicLabel; a node with a plan out has its devices cordoned in state_ (memory only)
  // until its agent registers again with the new geometry, or the plan expires and its description comes back.
  void PlanMigGeometryLocked(const std::vector<JobId>& waiting, TimeMicros now);
  // Plans the node at `index` for `demand` (what it serves is taken off) and sends the plan to its agent; with
  // `fill_only`, only its GPUs in use are changed. Nothing when the node may not be planned now.
  void PlanNodeLocked(int index, bool fill_only, TimeMicros now, std::vector<MigDemand>* demand);
  struct MigPlanOut {
    std::string geometry;               // --mig-geometry's syntax, sent in the node's heartbeat replies
    Node before;                        // the node's description when planned (restored if the plan expires)
    std::map<std::string, int> served;  // demand (its profile, or memory/compute) → units the plan serves
    std::string label_after;            // the node's kMigDynamicLabel once applied (instances by start)
    TimeMicros expires = 0;
  };
  std::unordered_map<std::string, MigPlanOut> mig_plans_;  // by node name; mu_
  // mig_plans_.size(), written under mu_: heartbeats read it without mu_ (none out, the common case, costs nothing).
  std::atomic<size_t> mig_plans_out_{0};
  std::unordered_map<std::string, TimeMicros> mig_next_plan_;  // node → no new plan before then; mu_
  mutable std::map<int64_t, std::string> tenant_names_;        // guarded by mu_

  std::mutex traffic_mu_;
  std::unordered_map<JobId, TimeMicros> last_traffic_;  // interactive jobs' last proxied traffic; traffic_mu_
  TimeMicros first_interactive_check_ = 0;              // guarded by traffic_mu_

  // The device series' label text, `{node="...",...}`, per device in node order; rebuilt when the state's
  // identity or description version moves. Taken before mu_.
  mutable std::mutex device_metrics_mu_;
  mutable std::vector<std::string> device_labels_;         // guarded by device_metrics_mu_
  mutable uint64_t device_labels_identity_ = 0;            // guarded by device_metrics_mu_
  mutable uint64_t device_labels_version_ = ~uint64_t{0};  // guarded by device_metrics_mu_

  mutable std::mutex seen_mu_;
  std::unordered_map<std::string, TimeMicros> last_seen_;  // guarded by seen_mu_
  // Nodes that may be NotReady (every one that is): their next heartbeat takes mu_ to make them Ready. seen_mu_
  std::unordered_set<std::string> maybe_not_ready_;

  std::mutex loop_mu_;
  std::condition_variable loop_cv_;
  bool wake_ = false;       // guarded by loop_mu_
  bool wake_full_ = false;  // guarded by loop_mu_
  bool stop_ = false;       // guarded by loop_mu_
  // Set by a large batch submission: the loop's next tick gives the free heap back (common/memory.h).
  static constexpr int64_t kReleaseMemoryAfterJobs = 1000;
  std::atomic<bool> release_memory_{false};
  std::thread loop_;
};

}  // namespace xpool::server
