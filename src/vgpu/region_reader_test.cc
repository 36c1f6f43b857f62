#include "vgpu/region_reader.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include "vgpu/shared_region.h"

namespace xpool::vgpu {
namespace {

constexpr uint64_t kLimit = 1024 * kMiB;

class RegionReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/xpool-reader-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(system(cmd.c_str()), 0);
  }
  std::string Contents(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::string dir_;
};

const RegionProcess* Find(const RegionSnapshot& s, int pid) {
  for (const RegionProcess& p : s.processes) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

TEST_F(RegionReaderTest, ReportsLiveProcessesPerDeviceAndDeadOnesApart) {
  const std::string path = dir_ + "/job.0.region";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    SharedRegion region;
    char why[128];
    bool ok = region.OpenFile(path.c_str(), "job/0", why, sizeof(why)) == SharedRegion::OpenStatus::kOk &&
              region.Attach(getpid(), ProcessStartTime(getpid())) && region.TryCharge(1, 300 * kMiB, kLimit);
    char byte = ok ? 1 : 0;
    if (write(ready[1], &byte, 1) != 1) _exit(3);
    pause();
    _exit(0);
  }
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, 1);
  SharedRegion me;
  char why[128];
  ASSERT_EQ(me.OpenFile(path.c_str(), "job/0", why, sizeof(why)), SharedRegion::OpenStatus::kOk);
  ASSERT_TRUE(me.Attach(getpid(), ProcessStartTime(getpid())));
  ASSERT_TRUE(me.TryCharge(0, 100 * kMiB, kLimit));

  RegionSnapshot snapshot;
  std::string error;
  ASSERT_TRUE(ReadRegion(path, &snapshot, &error)) << error;
  EXPECT_EQ(snapshot.identity, "job/0");
  ASSERT_EQ(snapshot.processes.size(), 2u);
  const RegionProcess* mine = Find(snapshot, getpid());
  const RegionProcess* theirs = Find(snapshot, child);
  ASSERT_NE(mine, nullptr);
  ASSERT_NE(theirs, nullptr);
  EXPECT_TRUE(mine->alive);
  EXPECT_EQ(mine->host_pid, getpid());  // same pid namespace
  EXPECT_EQ(mine->used[0], 100 * kMiB);
  EXPECT_TRUE(theirs->alive);
  EXPECT_EQ(theirs->used[1], 300 * kMiB);
  EXPECT_EQ(snapshot.used[0], 100 * kMiB);
  EXPECT_EQ(snapshot.used[1], 300 * kMiB);

  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  const std::string before = Contents(path);
  ASSERT_TRUE(ReadRegion(path, &snapshot, &error)) << error;
  theirs = Find(snapshot, child);
  ASSERT_NE(theirs, nullptr);  // reported, not reclaimed: reading never writes
  EXPECT_FALSE(theirs->alive);
  EXPECT_EQ(snapshot.used[1], 0u);
  EXPECT_EQ(snapshot.used[0], 100 * kMiB);
  EXPECT_EQ(Contents(path), before);
}

TEST_F(RegionReaderTest, ALiveProcessOfAnotherPidNamespaceIsAliveByItsLock) {
  const std::string path = dir_ + "/other.region";
  SharedRegion other;
  char why[128];
  ASSERT_EQ(other.OpenFile(path.c_str(), "job/1", why, sizeof(why)), SharedRegion::OpenStatus::kOk);
  other.set_pid_namespace(OwnPidNamespace() + 1000);
  ASSERT_TRUE(other.Attach(0x3ffffff5, 1));  // a pid that means nothing here
  ASSERT_TRUE(other.TryCharge(0, 64 * kMiB, kLimit));
  RegionSnapshot snapshot;
  std::string error;
  ASSERT_TRUE(ReadRegion(path, &snapshot, &error)) << error;
  ASSERT_EQ(snapshot.processes.size(), 1u);
  EXPECT_TRUE(snapshot.processes[0].alive);
  EXPECT_EQ(snapshot.processes[0].host_pid, 0);  // no process of that namespace here
  EXPECT_EQ(snapshot.used[0], 64 * kMiB);
}

TEST_F(RegionReaderTest, ScansDirectoriesAndSkipsWhatIsNotARegion) {
  ASSERT_EQ(mkdir((dir_ + "/pod-a").c_str(), 0700), 0);
  SharedRegion a, b;
  char why[128];
  ASSERT_EQ(a.OpenFile((dir_ + "/pod-a/task.0.region").c_str(), "a/0", why, sizeof(why)),
            SharedRegion::OpenStatus::kOk);
  ASSERT_EQ(b.OpenFile((dir_ + "/hami.cache").c_str(), "b/0", why, sizeof(why)), SharedRegion::OpenStatus::kOk);
  std::ofstream(dir_ + "/junk.region") << "not a region";
  std::ofstream(dir_ + "/notes.txt") << "ignored";
  std::vector<std::string> skipped;
  std::vector<RegionSnapshot> found = ReadRegionsUnder(dir_, 1, &skipped);
  ASSERT_EQ(found.size(), 2u);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("junk.region"), std::string::npos);
  EXPECT_TRUE(ReadRegionsUnder(dir_ + "/missing", 1, nullptr).empty());
  EXPECT_EQ(ReadRegionsUnder(dir_, 0, nullptr).size(), 1u);  // not below the top directory

  RegionSnapshot snapshot;
  std::string error;
  EXPECT_FALSE(ReadRegion(dir_ + "/nope.region", &snapshot, &error));
  EXPECT_FALSE(error.empty());
}

}  // namespace
}  // namespace xpool::vgpu
