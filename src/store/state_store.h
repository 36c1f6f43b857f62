#pragma once
// StateStore: the control plane's durable state — tenants, tokens, jobs, tasks (replicas), allocations, nodes
// with their devices, and events.
//
// Two implementations pass one shared test suite: SQLite (embedded default, store/sqlite/) and PostgreSQL
// (store/postgres/). Open one with OpenStateStore().
//
// Contract:
// - Every method that changes state runs in ONE transaction and returns only after it is committed (durable).
//   So a job is acknowledged (HTTP 201) only after SubmitJob returned OK.
// - Job state changes go through TransitionJob / CommitPlacement, which check the lifecycle rules
//   (model/job_state.h) inside the transaction and append an event (time, job, kind, reason) in the same commit.
// - Errors: NotFound (unknown id/name), AlreadyExists (duplicate name), FailedPrecondition (illegal transition,
//   stale state), InvalidArgument (bad values), Unavailable (database full, read-only, locked too long, or the
//   connection is down: the server answers 503 and keeps serving reads), Internal (anything else).
// - Tokens are never stored in plaintext: the store keeps SHA-256(token) in hex (see store/token.h).
// - Times are microseconds since the epoch and are passed in by the caller (the store reads no clock), so tests
//   and the simulator stay deterministic.
// Thread-safety: implementations are thread-safe (calls are serialised or pooled internally). The store owns
// its database connection(s); the caller owns the StateStore.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "model/device.h"
#include "model/job_spec.h"
#include "model/job_state.h"

namespace xpool {

// -1 in a quota field = unlimited.
inline constexpr int64_t kUnlimited = -1;

struct TenantQuota {
  int64_t devices = kUnlimited;  // devices held at once (sum over running replicas)
  int64_t device_memory_mib = kUnlimited;
  int64_t device_compute_milli = kUnlimited;  // 1000 = one whole device
  int64_t cpu_milli = kUnlimited;
  int64_t memory_mib = kUnlimited;
  friend bool operator==(const TenantQuota&, const TenantQuota&) = default;
};

// A limit on the tenant's jobs whose priority lies in [min_priority, max_priority] only (HAI Platform's
// per-group-per-priority quota, e.g. "at most 8 devices at priority 80..100"). Same units as TenantQuota.
struct TenantPriorityQuota {
  int min_priority = 0;
  int max_priority = 100;
  TenantQuota quota;
  friend bool operator==(const TenantPriorityQuota&, const TenantPriorityQuota&) = default;
};

struct TenantRecord {
  TenantId id;
  std::string name;    // unique; 1..63 chars of [a-z0-9-]
  bool admin = false;  // admin tenants see and control everything
  TenantQuota quota;   // limits: never exceeded by new work
  TimeMicros created_us = 0;
  // Always obtainable (time-sharing): work within it may suspend other tenants' work that runs above theirs.
  // Same units as `quota`; -1 (kUnlimited) in a field means "no guarantee" there.
  TenantQuota guaranteed;
  std::vector<TenantPriorityQuota> priority_quotas;  // by min_priority; none = no per-priority limit
};

// A token as listed (the secret itself is never kept; only its hash, which is not returned either).
struct TokenRecord {
  int64_t id = 0;
  TenantId tenant;
  std::string label;  // free text, e.g. "ci" or "admin (first start)"
  TimeMicros created_us = 0;
};

struct JobRecord {
  JobId id;
  TenantId tenant;
  JobSpec spec;  // stored as canonical JSON (JobSpecToJson), parsed back on read
  JobState state = JobState::kQueued;
  int priority = kPriorityNormal;  // copied from spec.priority at submit
  // First submission; kept across suspend/resume and re-queueing so the job keeps its queue position.
  TimeMicros submitted_us = 0;
  TimeMicros updated_us = 0;  // last state change
  // Times the job went back to the queue (from scheduled, running, suspending or suspended): the placement epoch
  // every assignment and task report carries (docs/agent.md, "Fencing").
  int restart_count = 0;
  std::string pending_reason;    // the scheduler's "why pending"; "" when none
  std::string state_reason;      // reason given with the last transition
  TimeMicros last_start_us = 0;  // the last transition to running (min-runtime counts from it); 0 = never ran
};

// A replica of a job. Created with the job (replicas 0..n-1); the agent issue drives their own state.
struct TaskRecord {
  TaskId id;
  JobId job;
  int replica = 0;
  JobState state = JobState::kQueued;  // replicas reuse the job states (no transition rules enforced)
  std::string node;                    // "" until placed
  std::optional<int> exit_code;        // how it ended: an exit code (>= 0), or -N when signal N killed it
  TimeMicros updated_us = 0;
};

// One device given to a replica, by device uuid (indices are per ClusterState; uuids are stable).
struct DeviceGrantRecord {
  std::string device_uuid;
  int64_t memory_mib = 0;
  int64_t compute_milli = 0;
  friend bool operator==(const DeviceGrantRecord&, const DeviceGrantRecord&) = default;
};

// What one replica holds on one node. Lives while its job HoldsAllocation(); deleted when the job leaves those
// states (in the same transaction).
struct AllocationRecord {
  JobId job;
  int replica = 0;
  std::string node;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::vector<DeviceGrantRecord> devices;
  friend bool operator==(const AllocationRecord&, const AllocationRecord&) = default;
};

struct NodeRecord {
  Node node;  // name, labels, capacity, devices (uuid unique), links, ready, cordoned, simulated
  TimeMicros registered_us = 0;
  TimeMicros updated_us = 0;
};

struct EventRecord {
  int64_t id = 0;  // increasing in commit order
  TimeMicros time_us = 0;
  JobId job;                     // unset (0) for events not about a job
  std::string kind;              // "submitted", "transition", "placed", or a caller's kind ("node", "quota", ...)
  std::optional<JobState> from;  // set for transitions
  std::optional<JobState> to;
  std::string reason;
};

// One row of the usage history (server/usage_recorder.h): what a job — or, with `job` and `tenant` unset, one
// device as a whole — held and used during one bucket of time. Amounts are integrals over the bucket, so rows add
// up: milli-device-seconds (1000 × 3600 = one GPU-hour) and MiB-seconds. "Used" compute is the device's measured
// SM utilisation (per job: its share by compute grant); used memory is what the agent measured.
struct UsageRecord {
  TimeMicros bucket_us = 0;      // start of the bucket, a multiple of width_s
  int64_t width_s = 60;          // 60 (minute rows) or 3600 (hour rows, after CompactUsage)
  TenantId tenant;               // unset on a device's row
  JobId job;                     // unset on a device's row
  std::string node;              // "" on a job's row
  int device = -1;               // the device's index on `node`; -1 on a job's row
  int64_t seconds = 0;           // seconds observed in the bucket
  int64_t measured_seconds = 0;  // of those, seconds with a measurement of use
  int64_t alloc_compute_milli_s = 0;
  int64_t used_compute_milli_s = 0;
  int64_t alloc_memory_mib_s = 0;
  int64_t used_memory_mib_s = 0;
  friend bool operator==(const UsageRecord&, const UsageRecord&) = default;
};

// A filter for ListUsage: rows with since_us <= bucket_us < until_us.
struct UsageFilter {
  TimeMicros since_us = 0;
  TimeMicros until_us = 0;  // 0 = no end
  bool devices = false;     // true: devices' rows; false: jobs' rows
  TenantId tenant;          // jobs' rows of this tenant only; unset = every tenant
  JobId job;                // this job's rows only; unset = every job
};

struct JobFilter {
  std::optional<TenantId> tenant;
  std::vector<JobState> states;  // empty = any
  JobId after;                   // only ids > after (paging); unset = from the start
  int limit = 0;                 // 0 = no limit
};

class StateStore {
 public:
  virtual ~StateStore() = default;

  // "sqlite" or "postgres".
  virtual std::string_view Kind() const = 0;
  // Version of the schema after migrations.
  virtual Result<int> SchemaVersion() = 0;
  // Cheap liveness check of the database (for /readyz).
  virtual Status Ping() = 0;

  // ---- Tenants and tokens ----
  virtual Result<TenantRecord> CreateTenant(std::string_view name, bool admin, const TenantQuota& quota,
                                            TimeMicros now) = 0;
  virtual Result<TenantRecord> GetTenant(TenantId id) = 0;
  virtual Result<TenantRecord> FindTenant(std::string_view name) = 0;
  virtual Result<std::vector<TenantRecord>> ListTenants() = 0;
  virtual Status UpdateTenantQuota(TenantId id, const TenantQuota& quota) = 0;
  virtual Status UpdateTenantGuarantee(TenantId id, const TenantQuota& guaranteed) = 0;
  // Replaces the tenant's per-priority limits (empty = none). InvalidArgument for a band outside 0..100 or
  // upside down, or a negative amount; NotFound for an unknown tenant.
  virtual Status SetTenantPriorityQuotas(TenantId id, const std::vector<TenantPriorityQuota>& quotas) = 0;

  // Stores SHA-256(plaintext); the plaintext is not kept. Returns the token's id.
  virtual Result<int64_t> AddToken(TenantId tenant, std::string_view plaintext, std::string_view label,
                                   TimeMicros now) = 0;
  // The tenant owning this token; Unauthenticated when it matches none.
  virtual Result<TenantRecord> Authenticate(std::string_view plaintext) = 0;
  virtual Result<std::vector<TokenRecord>> ListTokens(TenantId tenant) = 0;
  virtual Status RevokeToken(int64_t token_id) = 0;

  // ---- Jobs ----
  // Validates the spec, inserts the job (queued, priority from the spec), its `replicas` tasks and a
  // "submitted" event in one transaction. Returns the record after commit.
  // Concurrent callers are group-committed: their submissions share one transaction (one fsync) and each call
  // returns only after that commit.
  virtual Result<JobRecord> SubmitJob(TenantId tenant, const JobSpec& spec, TimeMicros now) = 0;
  // Many submissions in ONE transaction. One result per item, in order: a refused item (bad spec, unknown
  // tenant) does not affect the others; all fail together only when the database refuses the write. Returns
  // after the commit.
  virtual std::vector<Result<JobRecord>> SubmitJobs(const std::vector<std::pair<TenantId, JobSpec>>& jobs,
                                                    TimeMicros now) = 0;
  virtual Result<JobRecord> GetJob(JobId id) = 0;
  // Ordered by id.
  virtual Result<std::vector<JobRecord>> ListJobs(const JobFilter& filter) = 0;
  // Checks CheckTransition(current, to) in the transaction; records a "transition" event with `reason`.
  // Leaving the allocation-holding states (to queued, suspended or a terminal state) deletes the job's
  // allocations in the same transaction. Every → queued increments restart_count (the placement epoch).
  // Every transition clears pending_reason; → running sets last_start_us = now; → suspending records a
  // suspension (SuspensionsSince). Tasks follow: → queued/suspended resets them (state, node ""),
  // → a terminal state marks every unfinished task with it.
  // `expected`, when set, must equal the current state (else FailedPrecondition): a compare-and-set.
  // `to` = scheduled is refused: that transition is CommitPlacement's.
  virtual Status TransitionJob(JobId id, JobState to, std::string_view reason, TimeMicros now,
                               std::optional<JobState> expected = std::nullopt) = 0;
  // The scheduler's placement of a queued job: writes one AllocationRecord per replica (replica indices
  // 0..replicas-1, exactly once each), moves the job queued → scheduled, sets each task's node, and records a
  // "placed" event — all in one transaction. FailedPrecondition if the job is no longer queued.
  virtual Status CommitPlacement(JobId id, const std::vector<AllocationRecord>& allocations, std::string_view reason,
                                 TimeMicros now) = 0;
  // An admin's change of a job's priority (0..100, else InvalidArgument naming `priority`): updates the job's
  // priority (the spec keeps what was submitted) and records a "priority" event with `reason` in the same
  // transaction. FailedPrecondition for a finished job. Returns the record after commit.
  virtual Result<JobRecord> SetJobPriority(JobId id, int priority, std::string_view reason, TimeMicros now) = 0;
  // Every suspension (transition to suspending, recorded by TransitionJob) at or after `since`, ordered by job
  // then time: what the per-job cap on suspensions per hour counts, after a restart too.
  virtual Result<std::vector<std::pair<JobId, TimeMicros>>> SuspensionsSince(TimeMicros since) = 0;
  // Sets the "why pending" reason of a queued job. No event; a no-op write is skipped when unchanged.
  virtual Status SetPendingReason(JobId id, std::string_view reason) = 0;
  // The same for many jobs in ONE transaction (one commit, one fsync): what a scheduling pass calls with the
  // reasons of every job it could not place. Only jobs still queued are updated; ids that are unknown or no
  // longer queued are skipped (they left the queue meanwhile), and unchanged reasons are not rewritten.
  // Unavailable when the database refuses the write (then nothing changed).
  virtual Status SetPendingReasons(const std::vector<std::pair<JobId, std::string>>& reasons) = 0;

  // ---- Tasks (replicas) ----
  virtual Result<std::vector<TaskRecord>> ListTasks(JobId job) = 0;
  virtual Status UpdateTask(JobId job, int replica, JobState state, std::optional<int> exit_code, TimeMicros now) = 0;

  // ---- Allocations ----
  // Every live allocation (to rebuild ClusterState on start), ordered by (job, replica).
  virtual Result<std::vector<AllocationRecord>> ListAllocations() = 0;
  virtual Result<std::vector<AllocationRecord>> JobAllocations(JobId job) = 0;
  // The allocations of every job with first <= id <= last, ordered by (job, replica): one read for a page of jobs.
  virtual Result<std::vector<AllocationRecord>> JobAllocationsBetween(JobId first, JobId last) = 0;

  // ---- Nodes and devices ----
  // Inserts or replaces the node and its devices (keyed by node name; device uuids unique cluster-wide).
  // Keeps registered_us of an existing node. Only call on change: heartbeats belong in memory.
  virtual Status UpsertNode(const Node& node, TimeMicros now) = 0;
  virtual Result<NodeRecord> GetNode(std::string_view name) = 0;
  virtual Result<std::vector<NodeRecord>> ListNodes() = 0;  // ordered by name
  virtual Status SetNodeCordoned(std::string_view name, bool cordoned, TimeMicros now) = 0;
  virtual Status SetNodeReady(std::string_view name, bool ready, TimeMicros now) = 0;
  virtual Status DeleteNode(std::string_view name) = 0;

  // ---- Events ----
  // Appends an event (its id is assigned; the returned value is the stored event).
  virtual Result<EventRecord> AppendEvent(const EventRecord& event) = 0;
  // A job's most recent `limit` events (0 = all), oldest first.
  virtual Result<std::vector<EventRecord>> JobEvents(JobId job, int limit = 0) = 0;
  // All events with id > after_id, oldest first (a feed); limit 0 = all.
  virtual Result<std::vector<EventRecord>> EventsSince(int64_t after_id, int limit = 0) = 0;

  // ---- Usage history ----
  // Adds the rows in one transaction: a row whose key (width, bucket, job, node, device) exists already is added
  // to it, field by field (a restart within a minute adds to that minute). InvalidArgument for a bucket that is
  // not a multiple of its width, a width other than 60 or 3600, or a negative amount.
  virtual Status AddUsage(const std::vector<UsageRecord>& rows) = 0;
  // Rows matching `filter`, ordered by (bucket, job, node, device); minute and hour rows alike.
  virtual Result<std::vector<UsageRecord>> ListUsage(const UsageFilter& filter) = 0;
  // Downsampling and retention, in one transaction: minute rows older than `minutes_before` are added into hour
  // rows and deleted; rows of either width older than `drop_before` are deleted.
  virtual Status CompactUsage(TimeMicros minutes_before, TimeMicros drop_before) = 0;
};

// Opens (creating and migrating as needed) a store:
//   "postgres://..." or "postgresql://..." (or a libpq "host=... dbname=..." string) → PostgreSQL;
//   "sqlite:PATH" or a plain PATH → SQLite at PATH.
Result<std::unique_ptr<StateStore>> OpenStateStore(std::string_view location);

// Maps a Status to whether the failure was the store being unwritable (full, read-only, down).
inline bool IsStoreUnavailable(const Status& status) { return status.code() == StatusCode::kUnavailable; }

}  // namespace xpool
