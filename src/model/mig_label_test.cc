#include "model/mig_label.h"

#include <gtest/gtest.h>

namespace xpool {
namespace {

TEST(MigLabelTest, FormatsAndParsesBackEveryGpu) {
  const MigModel* a100 = MigModelNamed("A100-80GB");
  const MigModel* a30 = MigModelNamed("A30-24GB");
  ASSERT_NE(a100, nullptr);
  ASSERT_NE(a30, nullptr);
  std::vector<MigGpuGeometry> gpus = {
      {0, a100, {{MigProfileIndex(*a100, "3g.40gb"), 0}, {MigProfileIndex(*a100, "1g.10gb"), 4}}},
      {1, a100, {}},
      {3, a30, {{MigProfileIndex(*a30, "4g.24gb"), 0}}},
  };
  const std::string label = FormatMigDynamicLabel(gpus);
  EXPECT_EQ(label, "0=A100-80GB:3g.40gb@0,1g.10gb@4;1=A100-80GB:;3=A30-24GB:4g.24gb@0");
  auto parsed = ParseMigDynamicLabel(label);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->size(), 3u);
  for (size_t i = 0; i < gpus.size(); ++i) {
    EXPECT_EQ((*parsed)[i].gpu, gpus[i].gpu);
    EXPECT_EQ((*parsed)[i].model, gpus[i].model);
    EXPECT_EQ((*parsed)[i].instances, gpus[i].instances);
  }
  EXPECT_EQ(FormatMigGeometryText(gpus), "0=3g.40gb,1g.10gb;3=4g.24gb");
  // GPUs offered by slots name their first slot device; their geometry text keeps each instance's start.
  gpus[0].first_device = 1;
  gpus[2].first_device = 9;
  const std::string slotted = FormatMigDynamicLabel(gpus);
  EXPECT_EQ(slotted, "0@1=A100-80GB:3g.40gb@0,1g.10gb@4;1=A100-80GB:;3@9=A30-24GB:4g.24gb@0");
  auto back = ParseMigDynamicLabel(slotted);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)[0].first_device, 1);
  EXPECT_EQ((*back)[1].first_device, -1);
  EXPECT_EQ((*back)[2].first_device, 9);
  EXPECT_EQ(FormatMigGeometryText(gpus), "0=3g.40gb@0,1g.10gb@4;3=4g.24gb@0");
  EXPECT_EQ(MigSlotDevice(gpus[0], 0), 1);
  EXPECT_EQ(MigSlotDevice(gpus[0], 4), 5);   // starts 0..6: one device each
  EXPECT_EQ(MigSlotDevice(gpus[0], 7), -1);  // no profile starts at slot 7
  EXPECT_EQ(MigSlotDevice(gpus[1], 0), -1);  // offered as its instances
  EXPECT_EQ(MigSlotDevice(gpus[2], 3), 12);
  auto none = ParseMigDynamicLabel("");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(MigLabelTest, RefusesWhatTheTablesDoNotAllow) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"0:A100-80GB", "expected GPU[@FIRST-DEVICE]=TABLE:PROFILE@START"},
      {"x=A100-80GB:", "expected GPU[@FIRST-DEVICE]=TABLE:PROFILE@START"},
      {"0=B300:", "no MIG table named \"B300\""},
      {"0=A100-80GB:1g.5gb@0", "expected a A100-80GB profile and its start"},
      {"0=A100-80GB:1g.10gb", "expected a A100-80GB profile and its start"},
      {"0=A100-80GB:3g.40gb@2", "GPU 0"},            // 3g.40gb starts at 0 or 4
      {"0=A100-80GB:7g.80gb@0,1g.10gb@0", "GPU 0"},  // slots shared
      {"0=A100-80GB:;0=A100-80GB:", "GPU 0 is named twice"},
      {"0@x=A100-80GB:", "expected GPU[@FIRST-DEVICE]=TABLE"},
      {"0@-1=A100-80GB:", "expected GPU[@FIRST-DEVICE]=TABLE"},
  };
  for (const auto& [text, want] : rows) {
    auto parsed = ParseMigDynamicLabel(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(parsed.status().message().find(want), std::string::npos) << text << ": " << parsed.status().message();
  }
}

}  // namespace
}  // namespace xpool
