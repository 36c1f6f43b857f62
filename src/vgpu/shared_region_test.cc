#include "vgpu/shared_region.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

namespace xpool::vgpu {
namespace {

constexpr uint64_t kLimit = 100 * kMiB;
constexpr int kFakePidA = 0x3ffff001;  // pids of processes that "run" for FakeLiveness
constexpr int kFakePidB = 0x3ffff002;
bool FakeLiveness(int pid, uint64_t start_time) {
  return pid == kFakePidA || pid == kFakePidB || ProcessIsAlive(pid, start_time);
}

class SharedRegionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/xpool-region-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/region";
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  SharedRegion::OpenStatus Open(SharedRegion* region, const char* identity = "job/0") {
    char why[256] = {0};
    SharedRegion::OpenStatus status = region->OpenFile(path_.c_str(), identity, why, sizeof(why));
    why_ = why;
    return status;
  }

  std::string dir_;
  std::string path_;
  std::string why_;
};

TEST_F(SharedRegionTest, CheckAndAddHoldsTheLimitAcrossMappings) {
  SharedRegion a, b;
  ASSERT_EQ(Open(&a), SharedRegion::OpenStatus::kOk) << why_;
  ASSERT_EQ(Open(&b), SharedRegion::OpenStatus::kOk) << why_;
  a.set_liveness_check(&FakeLiveness);
  b.set_liveness_check(&FakeLiveness);
  ASSERT_TRUE(a.Attach(kFakePidA, 1));  // two processes of the task
  ASSERT_TRUE(b.Attach(kFakePidB, 1));
  EXPECT_TRUE(a.TryCharge(0, 60 * kMiB, kLimit));
  EXPECT_FALSE(b.TryCharge(0, 41 * kMiB, kLimit));
  EXPECT_TRUE(b.TryCharge(0, 40 * kMiB, kLimit));
  EXPECT_EQ(a.Used(0), kLimit);
  EXPECT_EQ(a.Used(1), 0u);
  EXPECT_TRUE(a.TryCharge(1, kLimit, kLimit));  // devices are accounted apart
  a.Release(0, 60 * kMiB);
  EXPECT_EQ(b.Used(0), 40 * kMiB);
  b.Detach();  // a detached process gives its charge back
  EXPECT_EQ(a.Used(0), 0u);
}

TEST_F(SharedRegionTest, RacingProcessesNeverExceedTheLimit) {
  constexpr int kChildren = 6;
  int results[2];
  int release[2];
  ASSERT_EQ(pipe(results), 0);
  ASSERT_EQ(pipe(release), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < kChildren; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(release[1]);  // else no child ever sees the release (every child holds the write end)
      close(results[0]);
      SharedRegion region;
      char why[128];
      int count = 0;
      if (region.OpenFile(path_.c_str(), "job/0", why, sizeof(why)) == SharedRegion::OpenStatus::kOk &&
          region.Attach(getpid(), ProcessStartTime(getpid()))) {
        while (region.TryCharge(0, kMiB, kLimit)) ++count;
      } else {
        count = -1000;
      }
      if (write(results[1], &count, sizeof(count)) != sizeof(count)) _exit(3);
      char byte;
      if (read(release[0], &byte, 1) < 0) _exit(4);  // hold the charge until every child has reported
      _exit(0);
    }
    children.push_back(pid);
  }
  int total = 0;
  for (int i = 0; i < kChildren; ++i) {
    int count = 0;
    ASSERT_EQ(read(results[0], &count, sizeof(count)), static_cast<ssize_t>(sizeof(count)));
    ASSERT_GE(count, 0);
    total += count;
  }
  close(release[1]);
  for (pid_t pid : children) waitpid(pid, nullptr, 0);
  EXPECT_EQ(total, 100);  // every MiB of the limit taken exactly once
}

TEST_F(SharedRegionTest, KilledProcessChargeIsReclaimedWhenNeeded) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    SharedRegion region;
    char why[128];
    bool ok = region.OpenFile(path_.c_str(), "job/0", why, sizeof(why)) == SharedRegion::OpenStatus::kOk &&
              region.Attach(getpid(), ProcessStartTime(getpid())) && region.TryCharge(0, 80 * kMiB, kLimit);
    char byte = ok ? 1 : 0;
    if (write(ready[1], &byte, 1) != 1) _exit(3);
    pause();
    _exit(0);
  }
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, 1);
  SharedRegion region;
  ASSERT_EQ(Open(&region), SharedRegion::OpenStatus::kOk);
  ASSERT_TRUE(region.Attach(getpid(), ProcessStartTime(getpid())));
  EXPECT_FALSE(region.TryCharge(0, 50 * kMiB, kLimit));  // the child is alive: its charge counts
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_TRUE(region.TryCharge(0, 50 * kMiB, kLimit));
  EXPECT_EQ(region.Used(0), 50 * kMiB);
}

TEST_F(SharedRegionTest, ReusedPidIsNotTakenForTheDeadProcess) {
  const uint64_t start = ProcessStartTime(getpid());
  ASSERT_GT(start, 0u);
  SharedRegion stale, live, me;
  ASSERT_EQ(Open(&stale), SharedRegion::OpenStatus::kOk);
  ASSERT_EQ(Open(&live), SharedRegion::OpenStatus::kOk);
  ASSERT_EQ(Open(&me), SharedRegion::OpenStatus::kOk);
  me.set_liveness_check(&FakeLiveness);
  // A slot recorded for our pid with another start time: a dead process whose pid we now hold.
  ASSERT_TRUE(stale.Attach(getpid(), start + 1));
  ASSERT_TRUE(stale.TryCharge(0, 50 * kMiB, kLimit));
  ASSERT_TRUE(live.Attach(kFakePidA, 1));  // another process of the task, alive
  ASSERT_TRUE(live.TryCharge(0, 40 * kMiB, kLimit));
  ASSERT_TRUE(me.Attach(getpid(), start));
  EXPECT_TRUE(me.TryCharge(0, 50 * kMiB, kLimit));   // the stale 50 MiB are reclaimed
  EXPECT_FALSE(me.TryCharge(0, 20 * kMiB, kLimit));  // the live 40 MiB are not
  EXPECT_EQ(me.Used(0), 90 * kMiB);
}

// Containers of a pod sharing a host-path region, and the node reading it, see each other's pids as meaningless
// numbers: a slot's liveness is its lock, whatever its pid means here.
TEST_F(SharedRegionTest, LiveProcessOfAnotherPidNamespaceKeepsItsCharge) {
  SharedRegion other, me;
  ASSERT_EQ(Open(&other), SharedRegion::OpenStatus::kOk);
  ASSERT_EQ(Open(&me), SharedRegion::OpenStatus::kOk);
  other.set_pid_namespace(OwnPidNamespace() + 1000);
  ASSERT_TRUE(other.Attach(0x3ffffff5, 1));  // no such pid here; alive in its own namespace
  ASSERT_TRUE(other.TryCharge(0, 60 * kMiB, kLimit));
  ASSERT_TRUE(me.Attach(getpid(), ProcessStartTime(getpid())));
  EXPECT_FALSE(me.TryCharge(0, 50 * kMiB, kLimit));
  EXPECT_EQ(me.Used(0), 60 * kMiB);
}

TEST_F(SharedRegionTest, DeadProcessOfAnotherPidNamespaceIsReclaimedByItsLock) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t parent = getpid();
  const uint64_t parent_start = ProcessStartTime(parent);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    SharedRegion region;
    char why[128];
    bool ok = region.OpenFile(path_.c_str(), "job/0", why, sizeof(why)) == SharedRegion::OpenStatus::kOk;
    region.set_pid_namespace(OwnPidNamespace() + 1000);
    // In its namespace it has the number and start time that a live process (the test) has here.
    ok = ok && region.Attach(parent, parent_start) && region.TryCharge(0, 80 * kMiB, kLimit);
    char byte = ok ? 1 : 0;
    if (write(ready[1], &byte, 1) != 1) _exit(3);
    pause();
    _exit(0);
  }
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, 1);
  SharedRegion me;
  ASSERT_EQ(Open(&me), SharedRegion::OpenStatus::kOk);
  ASSERT_TRUE(me.Attach(getpid(), ProcessStartTime(getpid())));
  EXPECT_FALSE(me.TryCharge(0, 50 * kMiB, kLimit));  // alive: its lock is held
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_TRUE(me.TryCharge(0, 50 * kMiB, kLimit));  // its lock died with it
  EXPECT_EQ(me.Used(0), 50 * kMiB);
}

TEST_F(SharedRegionTest, ExecedProcessTakesOverItsSlotWithACleanCharge) {
  const uint64_t start = ProcessStartTime(getpid());
  SharedRegion before_exec, after_exec;
  ASSERT_EQ(Open(&before_exec), SharedRegion::OpenStatus::kOk);
  ASSERT_EQ(Open(&after_exec), SharedRegion::OpenStatus::kOk);
  ASSERT_TRUE(before_exec.Attach(getpid(), start));
  ASSERT_TRUE(before_exec.TryCharge(0, 80 * kMiB, kLimit));
  // exec() keeps pid and start time and runs no destructors: the new image must not inherit the old charge.
  ASSERT_TRUE(after_exec.Attach(getpid(), start));
  EXPECT_EQ(after_exec.Used(0), 0u);
  EXPECT_TRUE(after_exec.TryCharge(0, kLimit, kLimit));
}

TEST_F(SharedRegionTest, ForeignAndCorruptFilesAreRefused) {
  {
    SharedRegion owner;
    ASSERT_EQ(Open(&owner, "job-a/0"), SharedRegion::OpenStatus::kOk);
  }
  SharedRegion other;
  EXPECT_EQ(Open(&other, "job-b/0"), SharedRegion::OpenStatus::kForeign);
  EXPECT_NE(why_.find("job-a/0"), std::string::npos);
  EXPECT_FALSE(other.is_open());

  {
    std::ofstream garbage(path_, std::ios::trunc);
    garbage << "not a region";
  }
  EXPECT_EQ(Open(&other), SharedRegion::OpenStatus::kCorrupt);

  // Right size, wrong magic.
  SharedRegion sized;
  unlink(path_.c_str());
  ASSERT_EQ(Open(&sized), SharedRegion::OpenStatus::kOk);
  {
    std::fstream file(path_, std::ios::in | std::ios::out | std::ios::binary);
    file.write("GARBAGE!", 8);
  }
  SharedRegion again;
  EXPECT_EQ(Open(&again), SharedRegion::OpenStatus::kCorrupt);
  EXPECT_NE(why_.find("magic"), std::string::npos);
}

TEST_F(SharedRegionTest, PrivateRegionEnforcesPerProcess) {
  SharedRegion region;
  ASSERT_TRUE(region.OpenPrivate());
  EXPECT_FALSE(region.is_shared());
  ASSERT_TRUE(region.Attach(getpid(), 0));
  EXPECT_TRUE(region.TryCharge(0, kLimit, kLimit));
  EXPECT_FALSE(region.TryCharge(0, 1, kLimit));
  SharedRegion::ProcessUsage procs[4];
  ASSERT_EQ(region.ListProcesses(0, procs, 4), 1);
  EXPECT_EQ(procs[0].pid, getpid());
  EXPECT_EQ(procs[0].bytes, kLimit);
}

TEST(ProcessTest, StartTimeAndLiveness) {
  uint64_t start = ProcessStartTime(getpid());
  EXPECT_GT(start, 0u);
  EXPECT_TRUE(ProcessIsAlive(getpid(), start));
  EXPECT_FALSE(ProcessIsAlive(getpid(), start + 1));
  EXPECT_FALSE(ProcessIsAlive(0, 0));
  EXPECT_EQ(ProcessStartTime(0x3ffffff0), 0u);
}

}  // namespace
}  // namespace xpool::vgpu
