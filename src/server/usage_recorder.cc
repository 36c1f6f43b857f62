#include "server/usage_recorder.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace xpool::server {
namespace {

constexpr TimeMicros kMinuteUs = 60 * kMicrosPerSecond;
constexpr TimeMicros kHourUs = 60 * kMinuteUs;
constexpr size_t kMaxUnwritten = 200000;  // rows kept for a store that refuses writes (about 30 MiB)

int64_t ToSeconds(int64_t micro_amount) { return (micro_amount + kMicrosPerSecond / 2) / kMicrosPerSecond; }

}  // namespace

UsageRecorder::UsageRecorder(StateStore& store, Clock& clock, UsageRecorderOptions options)
    : store_(store), clock_(clock), options_(options) {}

UsageRecorder::~UsageRecorder() { Stop(); }

void UsageRecorder::OnHeartbeat(const std::string& node, const std::vector<protocol::DeviceUsageSample>& devices,
                                const std::vector<protocol::TaskReport>& tasks) {
  const TimeMicros now = clock_.NowMicros();
  std::lock_guard lock(mu_);
  for (const protocol::DeviceUsageSample& d : devices) {
    if (d.used_memory_mib < 0 && d.sm_permille < 0) continue;
    devices_[{node, d.index}] = Measure{now, d.used_memory_mib, d.sm_permille};
  }
  for (const protocol::TaskReport& r : tasks) {
    if (r.used_memory_mib < 0 || !r.status.running()) continue;
    tasks_[{r.job_id, r.replica}] = Measure{now, r.used_memory_mib, -1};
  }
}

TenantId UsageRecorder::TenantOf(JobId job) {
  auto it = tenants_.find(job.value());
  if (it != tenants_.end()) return it->second;
  Result<JobRecord> record = store_.GetJob(job);
  const TenantId tenant = record.ok() ? record->tenant : TenantId();
  if (record.ok()) tenants_[job.value()] = tenant;
  return tenant;
}

std::vector<UsageRecorder::Rate> UsageRecorder::RatesLocked(TimeMicros now, const std::vector<NodeView>& nodes,
                                                            const std::vector<AllocationRecord>& allocations) {
  auto fresh = [&](const Measure* m) { return m != nullptr && now - m->at <= options_.stale_after; };
  std::vector<Rate> rates;
  struct Where {
    size_t rate;  // the device's row in `rates`
    int64_t allocated_compute;
    int64_t allocated_memory;
    const Measure* measure;
  };
  std::map<std::string, Where> by_uuid;
  for (const NodeView& v : nodes) {
    for (size_t i = 0; i < v.node.devices.size(); ++i) {
      const Device& d = v.node.devices[i];
      Rate r;
      r.key.node = v.node.name;
      r.key.device = d.index;
      if (i < v.usage.devices.size()) {
        r.alloc_compute_milli = v.usage.devices[i].compute_milli;
        r.alloc_memory_mib = v.usage.devices[i].memory_mib;
      }
      auto m = devices_.find({v.node.name, d.index});
      const Measure* measure = m != devices_.end() && fresh(&m->second) ? &m->second : nullptr;
      if (measure != nullptr) {
        r.measured = true;
        r.used_compute_milli = std::max<int64_t>(0, measure->sm_permille);
        r.used_memory_mib = std::max<int64_t>(0, measure->used_memory_mib);
      }
      by_uuid[d.uuid] = Where{rates.size(), r.alloc_compute_milli, r.alloc_memory_mib, measure};
      rates.push_back(std::move(r));
    }
  }
  std::map<int64_t, size_t> job_rate;
  for (const AllocationRecord& a : allocations) {
    auto [it, added] = job_rate.try_emplace(a.job.value(), rates.size());
    if (added) {
      Rate r;
      r.key.job = a.job;
      r.key.tenant = TenantOf(a.job);
      rates.push_back(std::move(r));
    }
    Rate& job = rates[it->second];
    for (const DeviceGrantRecord& g : a.devices) {
      job.alloc_compute_milli += g.compute_milli;
      job.alloc_memory_mib += g.memory_mib;
      auto w = by_uuid.find(g.device_uuid);
      if (w == by_uuid.end() || w->second.measure == nullptr || w->second.measure->sm_permille < 0) continue;
      job.measured = true;
      // The job's share of the device's SM time: by compute grant; by memory grant where nobody reserved compute.
      const Where& where = w->second;
      if (where.allocated_compute > 0) {
        job.used_compute_milli += where.measure->sm_permille * g.compute_milli / where.allocated_compute;
      } else if (where.allocated_memory > 0) {
        job.used_compute_milli += where.measure->sm_permille * g.memory_mib / where.allocated_memory;
      }
    }
    auto t = tasks_.find({a.job.value(), a.replica});
    if (t != tasks_.end() && fresh(&t->second)) {
      job.measured = true;
      job.used_memory_mib += t->second.used_memory_mib;
    }
  }
  return rates;
}

void UsageRecorder::AddLocked(const std::vector<Rate>& rates, TimeMicros from, TimeMicros to) {
  while (from < to) {
    const TimeMicros bucket = from / kMinuteUs * kMinuteUs;
    const TimeMicros end = std::min(to, bucket + kMinuteUs);
    const int64_t span = end - from;
    for (const Rate& r : rates) {
      Open& o = open_[Key{bucket, r.key.job.value(), r.key.node, r.key.device}];
      if (o.micros == 0 && o.measured_micros == 0) {
        o.key = r.key;
        o.key.bucket_us = bucket;
        o.key.width_s = 60;
      }
      o.micros += span;
      if (r.measured) o.measured_micros += span;
      o.alloc_compute += r.alloc_compute_milli * span;
      o.used_compute += r.used_compute_milli * span;
      o.alloc_memory += r.alloc_memory_mib * span;
      o.used_memory += r.used_memory_mib * span;
    }
    from = end;
  }
}

std::vector<UsageRecord> UsageRecorder::TakeLocked(TimeMicros before) {
  std::vector<UsageRecord> rows;
  rows.swap(unwritten_);
  for (auto it = open_.begin(); it != open_.end() && std::get<0>(it->first) < before;) {
    const Open& o = it->second;
    UsageRecord r = o.key;
    r.seconds = ToSeconds(o.micros);
    r.measured_seconds = ToSeconds(o.measured_micros);
    r.alloc_compute_milli_s = ToSeconds(o.alloc_compute);
    r.used_compute_milli_s = ToSeconds(o.used_compute);
    r.alloc_memory_mib_s = ToSeconds(o.alloc_memory);
    r.used_memory_mib_s = ToSeconds(o.used_memory);
    rows.push_back(std::move(r));
    it = open_.erase(it);
  }
  return rows;
}

Status UsageRecorder::Step(TimeMicros now, const std::vector<NodeView>& nodes,
                           const std::vector<AllocationRecord>& allocations) {
  std::vector<UsageRecord> rows;
  bool compact = false;
  {
    std::lock_guard lock(mu_);
    if (last_step_ > 0 && now > last_step_) {
      const std::vector<Rate> rates = RatesLocked(now, nodes, allocations);
      AddLocked(rates, std::max(last_step_, now - options_.max_step), now);
    }
    if (now > last_step_) last_step_ = now;
    rows = TakeLocked(now / kMinuteUs * kMinuteUs);
    if (now / kHourUs != last_compaction_hour_) {
      last_compaction_hour_ = now / kHourUs;
      compact = true;
    }
  }
  Status written = store_.AddUsage(rows);
  if (!written.ok()) {
    std::lock_guard lock(mu_);
    unwritten_.insert(unwritten_.begin(), rows.begin(), rows.end());  // again at the next step
    if (unwritten_.size() > kMaxUnwritten) {                          // a store down for long: keep the newest minutes
      unwritten_.erase(unwritten_.begin(), unwritten_.end() - kMaxUnwritten);
    }
    return written;
  }
  if (compact) return store_.CompactUsage(now - options_.minute_retention, now - options_.retention);
  return Status::Ok();
}

Status UsageRecorder::Flush() {
  std::vector<UsageRecord> rows;
  {
    std::lock_guard lock(mu_);
    rows = TakeLocked(INT64_MAX);
  }
  return store_.AddUsage(rows);
}

void UsageRecorder::Start(std::function<std::vector<NodeView>()> nodes,
                          std::function<Result<std::vector<AllocationRecord>>()> allocations) {
  sampler_ = std::thread([this, nodes = std::move(nodes), allocations = std::move(allocations)] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      Result<std::vector<AllocationRecord>> held = allocations();
      Status s = held.ok() ? Step(clock_.NowMicros(), nodes(), *held) : held.status();
      if (!s.ok()) std::fprintf(stderr, "xpool server: usage history: %s\n", s.message().c_str());
      lock.lock();
      wake_.wait_for(lock, std::chrono::microseconds(options_.interval), [this] { return stopping_; });
    }
  });
}

void UsageRecorder::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (sampler_.joinable()) {
    sampler_.join();
    (void)Flush();  // the open minute; a failure loses at most that minute
  }
}

}  // namespace xpool::server
