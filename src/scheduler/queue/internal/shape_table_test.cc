#include "scheduler/queue/internal/shape_table.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

namespace xpool::internal {
namespace {

TaskRequest Plain(int64_t cpu, int64_t gpus, int64_t compute) {
  TaskRequest q;
  q.cpu_milli = cpu;
  q.memory_mib = 1024;
  q.device_count = static_cast<int>(gpus);
  q.device_compute_milli = compute;
  return q;
}

TEST(ShapeTableTest, EqualShapesShareAnIdAndEveryFieldCounts) {
  ShapeTable table;
  const TaskRequest base = Plain(1000, 1, 500);
  const int id = table.IdOf(base, 1);
  EXPECT_EQ(table.IdOf(Plain(1000, 1, 500), 1), id);
  std::vector<TaskRequest> variants(10, base);
  variants[0].cpu_milli = 2000;
  variants[1].memory_mib = 2048;
  variants[2].device_count = 2;
  variants[3].device_memory_mib = 4096;
  variants[4].device_memory_percent = 50;
  variants[5].device_compute_milli = 250;
  variants[6].vendor = Vendor::kNvidia;
  variants[7].numa_bind = true;
  variants[8].type_include = {"A100"};  // selectors: the map path
  variants[9].uuid_exclude = {"GPU-1"};
  std::vector<int> ids = {id};
  for (const TaskRequest& v : variants) ids.push_back(table.IdOf(v, 1));
  ids.push_back(table.IdOf(base, 2));  // replicas count too
  for (size_t a = 0; a < ids.size(); ++a) {
    EXPECT_EQ(ids[a], static_cast<int>(a)) << "ids are dense, in order of first sight";
  }
  EXPECT_EQ(table.size(), static_cast<int>(ids.size()));
  // Asked again (copies, so equality is by value): the same ids.
  for (size_t v = 0; v < variants.size(); ++v) {
    const TaskRequest copy = variants[v];
    EXPECT_EQ(table.IdOf(copy, 1), ids[v + 1]);
  }
}

// The flat key packs two 32-bit numbers to a word and vendor and NUMA binding beside the replicas: no field,
// negative or at its limits, may read as another. Each pair of these gets one id only when equal.
TEST(ShapeTableTest, PackedFieldsNeverReadAsEachOther) {
  struct Shape {
    TaskRequest q;
    int replicas;
  };
  std::vector<Shape> shapes;
  const int kInts[] = {0, 1, -1, 2, 1 << 16, INT32_MAX, INT32_MIN};
  for (int v : kInts) {
    for (int fields = 1; fields < 8; ++fields) {  // device count, percent, replicas: each set alone or together
      TaskRequest q;
      int replicas = 1;
      if (fields & 1) q.device_count = v;
      if (fields & 2) q.device_memory_percent = v;
      if (fields & 4) replicas = v;
      shapes.push_back({q, replicas});
    }
  }
  for (int64_t v : {int64_t{-1}, int64_t{1} << 32, INT64_MIN, INT64_MAX}) {
    for (int field = 0; field < 4; ++field) {
      TaskRequest q;
      (field == 0   ? q.cpu_milli
       : field == 1 ? q.memory_mib
       : field == 2 ? q.device_memory_mib
                    : q.device_compute_milli) = v;
      shapes.push_back({q, 1});
    }
  }
  for (Vendor v : {Vendor::kNvidia, Vendor::kAscend, Vendor::kMetax}) {
    TaskRequest q;
    q.vendor = v;
    shapes.push_back({q, 1});
    q.numa_bind = true;
    shapes.push_back({q, 1});
  }
  TaskRequest numa;
  numa.numa_bind = true;
  shapes.push_back({numa, 1});
  shapes.push_back({numa, -1});
  ShapeTable table;
  std::vector<int> ids;
  for (const Shape& s : shapes) ids.push_back(table.IdOf(s.q, s.replicas));
  for (size_t a = 0; a < shapes.size(); ++a) {
    for (size_t b = 0; b < shapes.size(); ++b) {
      SCOPED_TRACE(testing::Message() << a << " vs " << b);
      const bool same =
          shapes[a].replicas == shapes[b].replicas && scheduler_internal::SameRequest(shapes[a].q, shapes[b].q);
      EXPECT_EQ(ids[a] == ids[b], same);
    }
  }
}

// Many shapes (the flat table grows several times): ids stay stable and match a plain reference.
TEST(ShapeTableTest, ManyShapesMatchAReference) {
  std::mt19937_64 rng(3);
  ShapeTable table;
  std::vector<std::pair<TaskRequest, int>> seen;
  std::vector<int> seen_ids;
  std::deque<TaskRequest> asked;  // the table keeps pointers to requests with selectors
  for (int i = 0; i < 5000; ++i) {
    TaskRequest q = Plain(100 * static_cast<int64_t>(rng() % 40), static_cast<int64_t>(rng() % 4),
                          250 * static_cast<int64_t>(rng() % 4));
    if (rng() % 50 == 0) q.type_include = {rng() % 2 == 0 ? "A100" : "V100"};
    const int replicas = 1 + static_cast<int>(rng() % 2);
    int expected = -1;
    for (size_t s = 0; s < seen.size(); ++s) {
      const TaskRequest& r = seen[s].first;
      if (seen[s].second == replicas && r.cpu_milli == q.cpu_milli && r.device_count == q.device_count &&
          r.device_compute_milli == q.device_compute_milli && r.type_include == q.type_include) {
        expected = seen_ids[s];
      }
    }
    asked.push_back(q);
    const int id = table.IdOf(asked.back(), replicas);
    if (expected < 0) {
      EXPECT_EQ(id, static_cast<int>(seen.size()));
      seen.emplace_back(q, replicas);
      seen_ids.push_back(id);
    } else {
      EXPECT_EQ(id, expected);
    }
  }
  EXPECT_EQ(table.size(), static_cast<int>(seen.size()));
  EXPECT_GT(table.size(), 200);
}

}  // namespace
}  // namespace xpool::internal
