// The StateStore typed suite (fixture: state_store_test_fixture.h): the usage history.
#include "store/state_store_test_fixture.h"

namespace xpool::store_test {
namespace {

constexpr TimeMicros kMinuteUs = 60 * kMicrosPerSecond;
constexpr TimeMicros kHourUs = 60 * kMinuteUs;
constexpr TimeMicros kDay = 24 * kHourUs;

UsageFilter Filter(TimeMicros since, TimeMicros until = 0, bool devices = false, int64_t tenant = 0, int64_t job = 0) {
  UsageFilter f;
  f.since_us = since;
  f.until_us = until;
  f.devices = devices;
  f.tenant = TenantId(tenant);
  f.job = JobId(job);
  return f;
}

UsageRecord JobRow(TimeMicros bucket, int64_t tenant, int64_t job, int64_t alloc_milli_s, int64_t used_milli_s) {
  UsageRecord r;
  r.bucket_us = bucket;
  r.tenant = TenantId(tenant);
  r.job = JobId(job);
  r.seconds = 60;
  r.measured_seconds = 60;
  r.alloc_compute_milli_s = alloc_milli_s;
  r.used_compute_milli_s = used_milli_s;
  r.alloc_memory_mib_s = 1000 * 60;
  r.used_memory_mib_s = 400 * 60;
  return r;
}

UsageRecord DeviceRow(TimeMicros bucket, const std::string& node, int device, int64_t used_milli_s) {
  UsageRecord r;
  r.bucket_us = bucket;
  r.node = node;
  r.device = device;
  r.seconds = 60;
  r.measured_seconds = 60;
  r.alloc_compute_milli_s = 60000;
  r.used_compute_milli_s = used_milli_s;
  return r;
}

TYPED_TEST(StateStoreTest, UsageRowsAddUpByKeyAndFilterByTenantJobAndTime) {
  StateStore& s = *this->store_;
  const TimeMicros t0 = 100 * kDay;
  ASSERT_TRUE(s.AddUsage({JobRow(t0, 1, 10, 60000, 30000), JobRow(t0, 2, 20, 30000, 3000),
                          JobRow(t0 + kMinuteUs, 1, 10, 60000, 45000), DeviceRow(t0, "n1", 0, 33000)})
                  .ok());
  // The same minute again (a server restarted within it): added, not replaced.
  ASSERT_TRUE(s.AddUsage({JobRow(t0, 1, 10, 60000, 30000)}).ok());

  auto tenant1 = s.ListUsage(Filter(t0, 0, false, 1));
  ASSERT_TRUE(tenant1.ok()) << tenant1.status().ToString();
  ASSERT_EQ(tenant1->size(), 2u);
  EXPECT_EQ((*tenant1)[0].bucket_us, t0);
  EXPECT_EQ((*tenant1)[0].seconds, 120);
  EXPECT_EQ((*tenant1)[0].alloc_compute_milli_s, 120000);
  EXPECT_EQ((*tenant1)[0].used_compute_milli_s, 60000);
  EXPECT_EQ((*tenant1)[0].node, "");
  EXPECT_EQ((*tenant1)[0].device, -1);
  EXPECT_EQ((*tenant1)[1].used_compute_milli_s, 45000);

  auto all_jobs = s.ListUsage(Filter(t0, t0 + kMinuteUs));
  ASSERT_EQ(all_jobs->size(), 2u);  // both tenants' first minute; the device row is not a job's
  EXPECT_EQ((*all_jobs)[1].tenant, TenantId(2));
  EXPECT_EQ(s.ListUsage(Filter(t0, 0, false, 0, 20))->size(), 1u);
  EXPECT_TRUE(s.ListUsage(Filter(t0 + 2 * kMinuteUs))->empty());

  auto devices = s.ListUsage(Filter(0, 0, true));
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].node, "n1");
  EXPECT_EQ((*devices)[0].device, 0);
  EXPECT_FALSE((*devices)[0].job.valid());
  EXPECT_EQ((*devices)[0].used_compute_milli_s, 33000);
}

TYPED_TEST(StateStoreTest, BadUsageRowsAreRefusedWhole) {
  StateStore& s = *this->store_;
  UsageRecord off_minute = JobRow(100 * kDay + 1, 1, 10, 1, 1);
  UsageRecord odd_width = JobRow(100 * kDay, 1, 10, 1, 1);
  odd_width.width_s = 10;
  UsageRecord negative = JobRow(100 * kDay, 1, 10, -1, 1);
  for (const UsageRecord& bad : {off_minute, odd_width, negative}) {
    EXPECT_EQ(s.AddUsage({JobRow(100 * kDay, 1, 11, 1, 1), bad}).code(), StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(s.ListUsage(Filter(0))->empty());
}

TYPED_TEST(StateStoreTest, CompactionRollsOldMinutesIntoHoursAndDropsWhatIsPastRetention) {
  StateStore& s = *this->store_;
  const TimeMicros hour = 1000 * kHourUs;
  std::vector<UsageRecord> rows;
  for (int m = 0; m < 60; ++m) rows.push_back(JobRow(hour + m * kMinuteUs, 1, 10, 60000, 1000 * m));
  rows.push_back(JobRow(hour + kHourUs, 1, 10, 60000, 7));  // the next hour: kept as minutes
  rows.push_back(DeviceRow(hour + 5 * kMinuteUs, "n1", 3, 9));
  rows.push_back(JobRow(hour - 30 * kDay, 1, 10, 60000, 1));  // past retention
  ASSERT_TRUE(s.AddUsage(rows).ok());

  // Minutes before hour + 1h 30m are rolled up, whole hours only: the next hour's minute stays.
  ASSERT_TRUE(s.CompactUsage(hour + kHourUs + 30 * kMinuteUs, hour - kDay).ok());
  auto jobs = s.ListUsage(Filter(0));
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 2u);
  const UsageRecord& rolled = (*jobs)[0];
  EXPECT_EQ(rolled.width_s, 3600);
  EXPECT_EQ(rolled.bucket_us, hour);
  EXPECT_EQ(rolled.tenant, TenantId(1));
  EXPECT_EQ(rolled.seconds, 3600);
  EXPECT_EQ(rolled.alloc_compute_milli_s, 3600000);     // one GPU-hour allocated
  EXPECT_EQ(rolled.used_compute_milli_s, 1000 * 1770);  // 0 + 1 + ... + 59 thousand
  EXPECT_EQ((*jobs)[1].width_s, 60);
  auto devices = s.ListUsage(Filter(0, 0, true));
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].width_s, 3600);
  EXPECT_EQ((*devices)[0].device, 3);

  // Compacting again changes nothing (no minute rows are old enough).
  ASSERT_TRUE(s.CompactUsage(hour + kHourUs + 30 * kMinuteUs, hour - kDay).ok());
  EXPECT_EQ(s.ListUsage(Filter(0))->at(0).used_compute_milli_s, 1000 * 1770);
}

}  // namespace
}  // namespace xpool::store_test
