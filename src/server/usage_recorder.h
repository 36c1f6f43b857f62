#pragma once
// UsageRecorder: the durable usage history — what every job (and so every tenant) and every device held and
// actually used, in the store's minute rows (StateStore::AddUsage), compacted into hour rows and dropped after a
// retention (StateStore::CompactUsage).
//
// Agents' heartbeats bring measurements (OnHeartbeat: each device's memory in use and SM utilisation, each task's
// memory); a sampler (Start, or Step in tests) integrates over time what is allocated now (the live allocations)
// and what was measured lately (not older than `stale_after`):
//   1. a device's row: its allocated compute and memory, its measured SM utilisation and memory in use;
//   2. a job's row (with its tenant): its grants summed over replicas and devices; its used compute is, per
//      device, the device's measured SM utilisation × the job's share of the compute allocated there (of the
//      memory allocated there when no grant on the device reserves compute); its used memory is what its tasks
//      reported.
// Amounts are integrals (milli-device-seconds, MiB-seconds); a step's interval is split at minute boundaries, and
// a minute is written once it has passed (a store error keeps it for the next step). A gap longer than `max_step`
// (a paused server) counts as `max_step`.
//
// Owned by the Server; AgentService calls OnHeartbeat. Thread-safe: a mutex guards the measurements and the open
// buckets; the store's writes (AddUsage, CompactUsage) run outside it, from the sampler.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "protocol/messages.h"
#include "server/control_plane.h"
#include "store/state_store.h"

namespace xpool::server {

struct UsageRecorderOptions {
  TimeMicros interval = 10 * kMicrosPerSecond;                 // sampler period
  TimeMicros stale_after = 30 * kMicrosPerSecond;              // older measurements are not used
  TimeMicros max_step = 60 * kMicrosPerSecond;                 // the most one step counts
  TimeMicros minute_retention = 2 * 86400 * kMicrosPerSecond;  // minute rows older than this become hour rows
  TimeMicros retention = 90 * 86400 * kMicrosPerSecond;        // rows older than this are dropped
};

class UsageRecorder {
 public:
  // `store` and `clock` outlive the recorder (the server's caching store: GetJob is served from memory).
  UsageRecorder(StateStore& store, Clock& clock, UsageRecorderOptions options = {});
  ~UsageRecorder();
  UsageRecorder(const UsageRecorder&) = delete;
  UsageRecorder& operator=(const UsageRecorder&) = delete;

  // A heartbeat's measurements, taken as of now: node `node`'s measured devices and its vetted reports
  // (TaskReport::used_memory_mib of running tasks).
  void OnHeartbeat(const std::string& node, const std::vector<protocol::DeviceUsageSample>& devices,
                   const std::vector<protocol::TaskReport>& tasks);
  // Integrates from the previous step to `now`, then writes every minute that has passed (and, once an hour,
  // compacts). The first step only starts the count.
  Status Step(TimeMicros now, const std::vector<NodeView>& nodes, const std::vector<AllocationRecord>& allocations);
  // Writes the open minute too (at shutdown).
  Status Flush();

  // Steps every interval until Stop(); `nodes` and `allocations` read the cluster now.
  void Start(std::function<std::vector<NodeView>()> nodes,
             std::function<Result<std::vector<AllocationRecord>>()> allocations);
  void Stop();

 private:
  struct Measure {
    TimeMicros at = 0;
    int64_t used_memory_mib = -1;
    int64_t sm_permille = -1;
  };
  // Rates at one moment: per row key, amounts per second (milli-devices, MiB) and whether use was measured.
  struct Rate {
    UsageRecord key;  // tenant, job, node, device
    int64_t alloc_compute_milli = 0, used_compute_milli = 0, alloc_memory_mib = 0, used_memory_mib = 0;
    bool measured = false;
  };
  using Key = std::tuple<TimeMicros, int64_t, std::string, int>;  // bucket, job, node, device
  // Amounts integrated over microseconds (converted to seconds when written).
  struct Open {
    UsageRecord key;
    int64_t micros = 0, measured_micros = 0;
    int64_t alloc_compute = 0, used_compute = 0, alloc_memory = 0, used_memory = 0;
  };

  std::vector<Rate> RatesLocked(TimeMicros now, const std::vector<NodeView>& nodes,
                                const std::vector<AllocationRecord>& allocations);
  void AddLocked(const std::vector<Rate>& rates, TimeMicros from, TimeMicros to);
  // Moves the open buckets that start before `before` out as rows.
  std::vector<UsageRecord> TakeLocked(TimeMicros before);
  TenantId TenantOf(JobId job);

  StateStore& store_;
  Clock& clock_;
  const UsageRecorderOptions options_;
  std::mutex mu_;
  std::map<std::pair<std::string, int>, Measure> devices_;  // (node, index); guarded by mu_
  std::map<std::pair<int64_t, int>, Measure> tasks_;        // (job, replica); guarded by mu_
  std::map<int64_t, TenantId> tenants_;                     // job → tenant; guarded by mu_
  std::map<Key, Open> open_;                                // guarded by mu_
  std::vector<UsageRecord> unwritten_;                      // a failed write's rows; guarded by mu_
  TimeMicros last_step_ = 0;                                // guarded by mu_
  TimeMicros last_compaction_hour_ = 0;                     // guarded by mu_

  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread sampler_;
};

}  // namespace xpool::server
