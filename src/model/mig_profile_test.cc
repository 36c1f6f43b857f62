#include "model/mig_profile.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace xpool {
namespace {

const MigModel& ModelNamed(std::string_view name) {
  const MigModel* model = MigModelNamed(name);
  EXPECT_NE(model, nullptr) << "no model " << name;
  return model != nullptr ? *model : AllMigModels()[0];
}

int Index(const MigModel& model, std::string_view profile) {
  const int i = MigProfileIndex(model, profile);
  EXPECT_GE(i, 0) << profile << " on " << model.name;
  return i;
}

TEST(MigProfileTest, TablesAreConsistent) {
  std::set<std::string_view> models;
  for (const MigModel& m : AllMigModels()) {
    SCOPED_TRACE(std::string(m.name));
    EXPECT_TRUE(models.insert(m.name).second);
    ASSERT_FALSE(m.profiles.empty());
    std::set<std::string_view> names;
    int full = 0;
    for (const MigProfile& p : m.profiles) {
      SCOPED_TRACE(std::string(p.name));
      EXPECT_TRUE(names.insert(p.name).second);
      EXPECT_TRUE(ValidateMigProfileName(p.name).ok());
      EXPECT_EQ(p.name.starts_with(std::to_string(p.compute_slices) + "g."), true);
      EXPECT_EQ(p.media_extensions, p.name.ends_with("+me"));
      EXPECT_GE(p.max_count, 1);
      EXPECT_GT(p.memory_mib, 0);
      EXPECT_LE(p.memory_mib, m.memory_mib);
      ASSERT_FALSE(p.starts.empty());
      for (int s : p.starts) EXPECT_LE(s + p.memory_slices, m.slots);
      // As many instances of the profile as its count, side by side, form a valid geometry.
      std::vector<MigPlacement> g;
      for (int s : p.starts) {
        if (static_cast<int>(g.size()) < p.max_count && MigPlacementFits(m, g, Index(m, p.name), s)) {
          g.push_back({Index(m, p.name), s});
        }
      }
      EXPECT_EQ(static_cast<int>(g.size()), p.max_count);
      EXPECT_TRUE(ValidateMigGeometry(m, g).ok());
      if (p.memory_slices == m.slots) ++full;
    }
    EXPECT_EQ(full, 1) << "one profile spans the whole GPU";
  }
  EXPECT_EQ(models.size(), 11u);
}

// The GH200 144GB, GB200 and B300 tables as NVIDIA's GPU Operator and mig-parted list their profiles: names smallest
// first, each with its instance count.
TEST(MigProfileTest, NewerModelsHaveTheirListedProfilesAndCounts) {
  struct Row {
    std::string_view model;
    int64_t memory_gib;
    std::vector<std::pair<std::string_view, int>> profiles;
  };
  const Row rows[] = {
      {"GH200-144GB",
       144,
       {{"1g.18gb", 7},
        {"1g.18gb+me", 1},
        {"1g.36gb", 4},
        {"2g.36gb", 3},
        {"3g.72gb", 2},
        {"4g.72gb", 1},
        {"7g.144gb", 1}}},
      {"GB200-186GB",
       186,
       {{"1g.23gb", 7},
        {"1g.23gb+me", 1},
        {"1g.47gb", 4},
        {"2g.47gb", 3},
        {"3g.93gb", 2},
        {"4g.93gb", 1},
        {"7g.186gb", 1}}},
      {"B300-269GB",
       269,
       {{"1g.34gb", 7},
        {"1g.34gb+me", 1},
        {"1g.67gb", 4},
        {"2g.67gb", 3},
        {"3g.135gb", 2},
        {"4g.135gb", 1},
        {"7g.269gb", 1}}},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(r.model));
    const MigModel& m = ModelNamed(r.model);
    EXPECT_EQ(m.compute_slices, 7);
    EXPECT_EQ(m.slots, 8);
    EXPECT_EQ(m.memory_mib, r.memory_gib * 1024);
    ASSERT_EQ(m.profiles.size(), r.profiles.size());
    for (size_t i = 0; i < r.profiles.size(); ++i) {
      EXPECT_EQ(m.profiles[i].name, r.profiles[i].first);
      EXPECT_EQ(m.profiles[i].max_count, r.profiles[i].second);
    }
    // As on the other 8-slot models: a 4g at slot 0 and a 3g at slot 4 fill the GPU; no 1g starts at slot 7.
    EXPECT_TRUE(ValidateMigGeometry(m, std::vector<MigPlacement>{{5, 0}, {4, 4}}).ok());
    EXPECT_FALSE(ValidateMigGeometry(m, std::vector<MigPlacement>{{0, 7}}).ok());
  }
}

TEST(MigProfileTest, FindsModelsByDeviceName) {
  struct Row {
    std::string_view device;
    int64_t memory_mib;
    std::string_view want;  // "" = no table
  };
  const Row rows[] = {
      {"NVIDIA A100-SXM4-40GB", 0, "A100-SXM4-40GB"},
      {"NVIDIA A100-PCIE-40GB", 0, "A100-SXM4-40GB"},
      {"NVIDIA A100-SXM4-80GB", 0, "A100-80GB"},
      {"NVIDIA A100 80GB PCIe", 0, "A100-80GB"},
      {"A100", 81920, "A100-80GB"},
      {"A100", 40960, "A100-SXM4-40GB"},
      {"A100", 0, ""},
      {"NVIDIA A800-SXM4-80GB", 0, "A100-80GB"},
      {"NVIDIA A30", 0, "A30-24GB"},
      {"nvidia a30", 0, "A30-24GB"},
      {"NVIDIA RTX A3000", 0, ""},
      {"NVIDIA H100 80GB HBM3", 0, "H100-80GB"},
      {"NVIDIA H100 PCIe", 0, "H100-80GB"},
      {"NVIDIA H100 NVL", 0, "H100-94GB"},
      {"H100", 96256, "H100-94GB"},
      {"NVIDIA H800", 0, "H100-80GB"},
      {"NVIDIA H200", 0, "H200-141GB"},
      {"NVIDIA H200 NVL", 0, "H200-141GB"},
      {"H200", 0, "H200-141GB"},
      {"NVIDIA GH200 480GB", 0, "H100-96GB"},
      {"NVIDIA GH200 480GB", 97871, "H100-96GB"},
      {"NVIDIA GH200 144G HBM3e", 0, "GH200-144GB"},
      {"GH200", 146944, "GH200-144GB"},
      {"NVIDIA H100 96GB HBM3", 0, "H100-96GB"},
      {"NVIDIA H20", 0, "H100-96GB"},
      {"NVIDIA H20", 97871, "H100-96GB"},
      {"NVIDIA H20", 143771, ""},
      {"NVIDIA H20-3e", 0, ""},
      {"NVIDIA H20-3e", 143771, ""},
      {"NVIDIA B200", 0, "B200-180GB"},
      {"NVIDIA B200", 183359, "B200-180GB"},
      {"NVIDIA GB200", 0, "GB200-186GB"},
      {"NVIDIA GB200", 189471, "GB200-186GB"},
      {"NVIDIA B300 SXM6 AC", 0, "B300-269GB"},
      {"B300", 0, "B300-269GB"},
      {"NVIDIA GB300", 0, ""},
      {"NVIDIA RTX PRO 6000 Blackwell Server Edition", 0, ""},
      {"Tesla T4", 0, ""},
      {"NVIDIA L40S", 0, ""},
      {"", 0, ""},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(r.device));
    const MigModel* m = FindMigModel(r.device, r.memory_mib);
    if (r.want.empty()) {
      EXPECT_EQ(m, nullptr);
    } else {
      ASSERT_NE(m, nullptr);
      EXPECT_EQ(m->name, r.want);
    }
  }
}

TEST(MigProfileTest, SameNameDiffersByModel) {
  // "1g.10gb" is two slots on an A100 40GB and one slot on an A100 80GB.
  EXPECT_EQ(FindMigProfile(ModelNamed("A100-SXM4-40GB"), "1g.10gb")->memory_slices, 2);
  EXPECT_EQ(FindMigProfile(ModelNamed("A100-80GB"), "1g.10gb")->memory_slices, 1);
  EXPECT_EQ(FindMigProfile(ModelNamed("H200-141GB"), "1g.10gb"), nullptr);
  EXPECT_EQ(FindMigProfile(ModelNamed("H200-141GB"), "1g.18gb")->max_count, 7);
  EXPECT_EQ(MigComputeMilli(ModelNamed("H200-141GB"), *FindMigProfile(ModelNamed("H200-141GB"), "1g.18gb")), 142);
  EXPECT_EQ(MigComputeMilli(ModelNamed("A30-24GB"), *FindMigProfile(ModelNamed("A30-24GB"), "2g.12gb")), 500);
  // The B200 and the GB200 share their 1g.23gb but not their two-slot 1g.
  EXPECT_EQ(FindMigProfile(ModelNamed("GB200-186GB"), "1g.23gb")->memory_slices, 1);
  EXPECT_EQ(FindMigProfile(ModelNamed("GB200-186GB"), "1g.45gb"), nullptr);
  EXPECT_EQ(FindMigProfile(ModelNamed("GB200-186GB"), "1g.47gb")->memory_slices, 2);
}

TEST(MigProfileTest, UnknownNamesListTheKnownOnes) {
  const Status s = ValidateMigProfileName("1g.11gb");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown MIG profile '1g.11gb'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("1g.10gb"), std::string::npos);
  EXPECT_NE(s.message().find("7g.141gb"), std::string::npos);
  EXPECT_NE(s.message().find("7g.269gb"), std::string::npos);
  EXPECT_TRUE(ValidateMigProfileName("3g.40gb").ok());
}

TEST(MigProfileTest, ResourceNames) {
  EXPECT_EQ(*MigProfileFromResourceName("nvidia.com/mig-1g.10gb"), "1g.10gb");
  EXPECT_EQ(*MigProfileFromResourceName("nvidia.com/mig-1g.10gb.me"), "1g.10gb+me");
  EXPECT_EQ(*MigProfileFromResourceName("nvidia.com/mig-7g.141gb"), "7g.141gb");
  EXPECT_EQ(*MigProfileFromResourceName("nvidia.com/mig-3g.135gb"), "3g.135gb");
  EXPECT_EQ(*MigProfileFromResourceName("nvidia.com/mig-1g.34gb.me"), "1g.34gb+me");
  EXPECT_EQ(MigResourceName("1g.18gb+me"), "nvidia.com/mig-1g.18gb.me");
  EXPECT_EQ(*MigProfileFromResourceName(MigResourceName("2g.12gb+me")), "2g.12gb+me");
  for (std::string_view bad : {"nvidia.com/gpu", "nvidia.com/mig-", "nvidia.com/mig-1g", "nvidia.com/mig-1g.11gb",
                               "nvidia.com/mig-1g.10gb.xx", "amd.com/mig-1g.10gb", "nvidia.com/mig-1g.10gb "}) {
    SCOPED_TRACE(std::string(bad));
    EXPECT_EQ(MigProfileFromResourceName(bad).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(MigProfileTest, SmallestCoveringProfile) {
  struct Row {
    std::string_view model;
    int64_t memory_mib;
    int64_t compute_milli;
    std::string_view want;  // "" = none covers
  };
  const Row rows[] = {
      {"A100-SXM4-40GB", 0, 0, "1g.5gb"},        {"A100-SXM4-40GB", 5120, 0, "1g.5gb"},
      {"A100-SXM4-40GB", 5121, 0, "1g.10gb"},  // 2 slots, 1 compute slice: smaller than 2g.10gb
      {"A100-SXM4-40GB", 4096, 200, "2g.10gb"},  {"A100-SXM4-40GB", 4096, 300, "3g.20gb"},
      {"A100-SXM4-40GB", 20480, 500, "4g.20gb"}, {"A100-SXM4-40GB", 20481, 0, "7g.40gb"},
      {"A100-SXM4-40GB", 40961, 0, ""},          {"A100-SXM4-40GB", 0, 1000, "7g.40gb"},
      {"H200-141GB", 16384, 0, "1g.18gb"},       {"H200-141GB", 30000, 0, "1g.35gb"},
      {"H200-141GB", 60000, 0, "3g.71gb"},       {"H100-96GB", 12288, 0, "1g.12gb"},
      {"H100-96GB", 12289, 0, "1g.24gb"},        {"H100-96GB", 0, 500, "4g.48gb"},
      {"B200-180GB", 23552, 0, "1g.23gb"},       {"B200-180GB", 46080, 200, "2g.45gb"},
      {"B200-180GB", 92161, 0, "7g.180gb"},      {"GH200-144GB", 18433, 0, "1g.36gb"},
      {"GH200-144GB", 0, 300, "3g.72gb"},        {"GB200-186GB", 23552, 0, "1g.23gb"},
      {"GB200-186GB", 0, 500, "4g.93gb"},        {"B300-269GB", 34817, 0, "1g.67gb"},
      {"B300-269GB", 138241, 0, "7g.269gb"},     {"B300-269GB", 275457, 0, ""},
      {"A30-24GB", 8192, 0, "2g.12gb"},          {"A30-24GB", 0, 250, "1g.6gb"},
      {"A30-24GB", 0, 251, "2g.12gb"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(r.model) + " " + std::to_string(r.memory_mib) + " MiB " + std::to_string(r.compute_milli) +
                 " milli");
    const MigProfile* p = SmallestCoveringMigProfile(ModelNamed(r.model), r.memory_mib, r.compute_milli);
    if (r.want.empty()) {
      EXPECT_EQ(p, nullptr);
    } else {
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(p->name, r.want);
    }
  }
}

TEST(MigProfileTest, GeometryRules) {
  const MigModel& a100 = ModelNamed("A100-SXM4-40GB");
  const int g1 = Index(a100, "1g.5gb"), me = Index(a100, "1g.5gb+me"), g3 = Index(a100, "3g.20gb"),
            g4 = Index(a100, "4g.20gb"), g7 = Index(a100, "7g.40gb"), g2 = Index(a100, "2g.10gb");
  struct Row {
    std::string name;
    std::vector<MigPlacement> geometry;
    bool valid;
  };
  const Row rows[] = {
      {"empty", {}, true},
      {"whole", {{g7, 0}}, true},
      {"4g + 3g", {{g4, 0}, {g3, 4}}, true},
      {"seven 1g", {{g1, 0}, {g1, 1}, {g1, 2}, {g1, 3}, {g1, 4}, {g1, 5}, {g1, 6}}, true},
      {"2g 2g 2g 1g", {{g2, 0}, {g2, 2}, {g2, 4}, {g1, 6}}, true},
      {"1g at slot 7", {{g1, 7}}, false},
      {"3g at slot 2", {{g3, 2}}, false},
      {"overlap", {{g4, 0}, {g1, 3}}, false},
      {"two +me", {{me, 0}, {me, 1}}, false},
      {"unknown profile", {{99, 0}}, false},
      {"7g and a 1g", {{g7, 0}, {g1, 6}}, false},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(ValidateMigGeometry(a100, r.geometry).ok(), r.valid) << ValidateMigGeometry(a100, r.geometry).message();
    if (!r.geometry.empty()) {
      // MigPlacementFits agrees with ValidateMigGeometry on the last instance added to a valid prefix.
      std::vector<MigPlacement> prefix(r.geometry.begin(), r.geometry.end() - 1);
      if (ValidateMigGeometry(a100, prefix).ok()) {
        EXPECT_EQ(MigPlacementFits(a100, prefix, r.geometry.back().profile, r.geometry.back().start), r.valid);
      }
    }
  }
}

TEST(MigProfileOfDeviceTest, ReadsTheProfileFromAnInstancesModel) {
  Device d;
  d.mode = DeviceMode::kMig;
  d.model = "A100-SXM4-80GB MIG 1g.10gb+me";
  EXPECT_EQ(MigProfileOfDevice(d), "1g.10gb+me");
  d.model = "H200 MIG 7g.141gb";
  EXPECT_EQ(MigProfileOfDevice(d), "7g.141gb");
  d.model = "A100-SXM4-80GB";
  EXPECT_EQ(MigProfileOfDevice(d), "");
  d.model = "A100-SXM4-80GB MIG 1g.10gb";
  d.mode = DeviceMode::kShared;  // named like an instance, but not one
  EXPECT_EQ(MigProfileOfDevice(d), "");
}

}  // namespace
}  // namespace xpool
