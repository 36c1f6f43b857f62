#include "scheduler/queue/quota_amounts.h"

#include <gtest/gtest.h>

namespace xpool {
namespace {

TEST(QuotaAmountsTest, DevicesCountAWholeDeviceAndTheSmallerOfTwoWins) {
  struct Row {
    int64_t devices, compute, unset, want;
  };
  const Row rows[] = {
      {2, -1, -7, 2000},     // devices only
      {-1, 1500, -7, 1500},  // compute only
      {2, 1500, -7, 1500},   // both: the smaller
      {1, 2500, -7, 1000},   // both: the smaller
      {0, 500, -7, 0},       // zero devices allow no compute
      {-1, -1, -7, -7},      // neither: unset
      {-1, -1, 0, 0},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(QuotaGpuComputeMilli(r.devices, r.compute, r.unset), r.want)
        << "devices " << r.devices << ", compute " << r.compute;
  }
}

TEST(QuotaAmountsTest, AGuaranteeIsCappedAtTheLimitAndGuaranteesNoJobCount) {
  ResourceAmounts limit = ResourceAmounts::Unlimited();
  limit.gpu_compute_milli = 4000;
  limit.cpu_milli = 8000;
  const ResourceAmounts guaranteed{
      .gpu_compute_milli = 6000, .gpu_memory_mib = 1024, .cpu_milli = 2000, .running_jobs = 3};
  const ResourceAmounts capped = CapGuaranteeAtLimit(guaranteed, limit);
  EXPECT_EQ(capped.gpu_compute_milli, 4000);
  EXPECT_EQ(capped.gpu_memory_mib, 1024);
  EXPECT_EQ(capped.cpu_milli, 2000);
  EXPECT_EQ(capped.running_jobs, 0);
}

}  // namespace
}  // namespace xpool
