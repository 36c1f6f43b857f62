#include "agent/vendor/smi_parsers.h"

#include <gtest/gtest.h>

#include "agent/vendor/internal/smi_table.h"
#include "common/testing/test_util.h"

namespace xpool::agent {
namespace {

using Parser = Result<std::vector<Device>> (*)(std::string_view, std::vector<std::string>*);

std::string Fixture(const std::string& name) {
  const std::string text = ReadFile(std::string(XPOOL_VENDOR_TESTDATA) + "/" + name);
  EXPECT_FALSE(text.empty()) << "fixture " << name << " is missing or empty";
  return text;
}

// One device as a row expects it.
struct Want {
  int index;
  std::string model;
  int64_t memory_mib;
  std::string uuid;
  bool healthy;
};

struct Case {
  std::string fixture;
  Parser parse;
  Vendor vendor;
  std::vector<Want> first;  // the first devices, in order (all of them when count equals its size)
  size_t count;             // devices expected; ignored when error is set
  std::string note;         // a substring of the notes ("" = no notes)
  std::string error;        // a substring of the error; "" = must parse
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      // Ascend: 8 × 910B3 with the process table after the devices.
      {"npu_smi_910b_8.txt",
       &ParseNpuSmiInfo,
       Vendor::kAscend,
       {{0, "910B3", 65536, "ASCEND-0000:C1:00.0", true}, {1, "910B3", 65536, "ASCEND-0000:C2:00.0", true}},
       8,
       "",
       ""},
      // Warning is usable; Critical (with its HBM unreadable) is not.
      {"npu_smi_critical.txt",
       &ParseNpuSmiInfo,
       Vendor::kAscend,
       {{0, "910B2C", 65536, "ASCEND-0000:66:00.0", true}, {1, "910B2C", 0, "ASCEND-0000:19:00.0", false}},
       2,
       "device 1: npu-smi health \"Critical\"",
       ""},
      // 310P Duo: two chips per card, the Device column gives the index, Memory-Usage the memory; chips sharing a
      // bus id get distinct uuids.
      {"npu_smi_310p_duo.txt",
       &ParseNpuSmiInfo,
       Vendor::kAscend,
       {{0, "310P3", 21527, "ASCEND-0000:01:00.0", true},
        {1, "310P3", 21527, "ASCEND-0000:01:00.0#2", true},
        {2, "310P3", 21527, "ASCEND-0000:81:00.0", true},
        {3, "310P3", 21527, "ASCEND-0000:81:00.0#2", true}},
       4,
       "",
       ""},
      // Indentation, trailing blanks, CRLF, extra blanks in a cell.
      {"npu_smi_whitespace.txt",
       &ParseNpuSmiInfo,
       Vendor::kAscend,
       {{4, "910B3", 65536, "ASCEND-0000:01:00.0", true}},
       1,
       "",
       ""},
      {"npu_smi_truncated.txt",
       &ParseNpuSmiInfo,
       Vendor::kAscend,
       {},
       0,
       "",
       "npu-smi line 10: the device's record has 1 row(s), the header 2 (output cut short?)"},
      {"npu_smi_driver_error.txt",
       &ParseNpuSmiInfo,
       Vendor::kAscend,
       {},
       0,
       "",
       "no device table (a header with \"NPU Name Health\") in the output of npu-smi: \"dcmi module initialize "
       "failed. ret is -8005\""},

      // Cambricon.
      {"cnmon_mlu370_2.txt",
       &ParseCnmon,
       Vendor::kCambricon,
       {{0, "MLU370-X8", 23374, "CAMBRICON-0000:13:00.0", true},
        {1, "MLU370-X8", 23374, "CAMBRICON-0000:16:00.0", true}},
       2,
       "",
       ""},
      // cnmon v4 prints no bus id: uuids by card index.
      {"cnmon_v4_no_bus.txt",
       &ParseCnmon,
       Vendor::kCambricon,
       {{0, "MLU370-X4", 23308, "CAMBRICON-0", true},
        {1, "MLU370-X4", 23308, "CAMBRICON-1", true},
        {2, "MLU370-X4", 23308, "CAMBRICON-2", true}},
       3,
       "",
       ""},
      {"cnmon_memory_na.txt",
       &ParseCnmon,
       Vendor::kCambricon,
       {{0, "MLU370-X8", 23374, "CAMBRICON-0000:39:00.0", true}, {1, "MLU370-X8", 0, "CAMBRICON-0000:3D:00.0", false}},
       2,
       "device 1: memory size not readable",
       ""},
      {"cnmon_garbled.txt",
       &ParseCnmon,
       Vendor::kCambricon,
       {},
       0,
       "",
       "cnmon line 7: 2 column(s) where the header (line 4) has 3"},

      // Hygon.
      {"hy_smi_k100_4.txt",
       &ParseHySmi,
       Vendor::kHygon,
       {{0, "K100_AI", 65520, "0x9a1c2e4f6b8d0011", true}, {1, "K100_AI", 65520, "0x9a1c2e4f6b8d0012", true}},
       4,
       "",
       ""},
      // HCU prefix, bytes, no unique id (bus ids instead), the bus line with the serial number after it, a warning
      // line.
      {"hy_smi_hcu_bytes.txt",
       &ParseHySmi,
       Vendor::kHygon,
       {{0, "BW1000", 65520, "HYGON-0000:1B:00.0", true}, {1, "BW1000", 65520, "HYGON-0000:3D:00.0", true}},
       2,
       "",
       ""},
      {"hy_smi_missing_memory.txt",
       &ParseHySmi,
       Vendor::kHygon,
       {{0, "Z100SM", 32752, "0x11", true}, {1, "Z100SM", 0, "0x12", false}},
       2,
       "device 1: memory size not readable",
       ""},
      {"hy_smi_garbage.txt",
       &ParseHySmi,
       Vendor::kHygon,
       {},
       0,
       "",
       "hy-smi line 15: expected \"DCU[<index>] : <field>: <value>\", found \"Segmentation fault (core dumped)\""},
      {"hy_smi_usage_error.txt",
       &ParseHySmi,
       Vendor::kHygon,
       {},
       0,
       "",
       "hy-smi line 1: expected \"DCU[<index>] : <field>: <value>\", found \"usage: hy-smi"},

      // Iluvatar.
      {"ixsmi_bi_v100_2.txt",
       &ParseIxsmi,
       Vendor::kIluvatar,
       {{0, "BI-V100", 32768, "ILUVATAR-00000000:14:00.0", true},
        {1, "BI-V100", 32768, "ILUVATAR-00000000:15:00.0", true}},
       2,
       "",
       ""},
      {"ixsmi_err.txt",
       &ParseIxsmi,
       Vendor::kIluvatar,
       {{0, "BI-V100", 32768, "ILUVATAR-00000000:14:00.0", true},
        {1, "BI-V150S", 0, "ILUVATAR-00000000:8A:00.0", false}},
       2,
       "device 1: ixsmi reports ERR! (line 11)",
       ""},
      {"ixsmi_truncated.txt",
       &ParseIxsmi,
       Vendor::kIluvatar,
       {},
       0,
       "",
       "ixsmi line 11: the device's record has 1 row(s), the header 2 (output cut short?)"},

      // MetaX.
      {"mx_smi_c500_2.txt",
       &ParseMxSmi,
       Vendor::kMetax,
       {{0, "C500", 65536, "METAX-0000:0e:00.0", true}, {1, "C500", 65536, "METAX-0000:0f:00.0", true}},
       2,
       "",
       ""},
      // Persistence-M after the name; GPU-State other than Available.
      {"mx_smi_n260_state.txt",
       &ParseMxSmi,
       Vendor::kMetax,
       {{0, "N260", 65536, "METAX-0000:01:00.0", true}, {1, "N260", 65536, "METAX-0000:02:00.0", false}},
       2,
       "device 1: mx-smi GPU-State \"Unavailable\"",
       ""},
      {"mx_smi_short.txt",
       &ParseMxSmi,
       Vendor::kMetax,
       {},
       0,
       "",
       "mx-smi: \"Attached GPUs\" says 8, the table lists 1 (output cut short?)"},
  };
  return cases;
}

TEST(SmiParsersTest, EachFixture) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.fixture);
    std::vector<std::string> notes;
    auto devices = c.parse(Fixture(c.fixture), &notes);
    if (!c.error.empty()) {
      ASSERT_FALSE(devices.ok());
      EXPECT_EQ(devices.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(devices.status().message().find(c.error), std::string::npos) << devices.status().message();
      continue;
    }
    ASSERT_TRUE(devices.ok()) << devices.status().ToString();
    ASSERT_EQ(devices->size(), c.count);
    for (size_t i = 0; i < c.first.size(); ++i) {
      SCOPED_TRACE("device " + std::to_string(i));
      const Device& d = (*devices)[i];
      const Want& w = c.first[i];
      EXPECT_EQ(d.vendor, c.vendor);
      EXPECT_EQ(d.index, w.index);
      EXPECT_EQ(d.model, w.model);
      EXPECT_EQ(d.memory_mib, w.memory_mib);
      EXPECT_EQ(d.uuid, w.uuid);
      EXPECT_EQ(d.healthy, w.healthy);
      EXPECT_EQ(d.max_sharers, ProfileFor(c.vendor).default_max_sharers);
    }
    std::string all;
    for (const std::string& n : notes) all += n + "\n";
    if (c.note.empty()) {
      EXPECT_TRUE(notes.empty()) << all;
    } else {
      EXPECT_NE(all.find(c.note), std::string::npos) << all;
    }
    Node node;
    node.name = "n";
    node.devices = *devices;
    EXPECT_TRUE(ValidateNode(node).ok()) << ValidateNode(node).ToString();
  }
}

// Every parser refuses empty output and another vendor's listing, naming the tool.
TEST(SmiParsersTest, RefusesEmptyAndForeignOutput) {
  const std::vector<std::pair<std::string, Parser>> parsers = {{"npu-smi", &ParseNpuSmiInfo},
                                                               {"cnmon", &ParseCnmon},
                                                               {"hy-smi", &ParseHySmi},
                                                               {"ixsmi", &ParseIxsmi},
                                                               {"mx-smi", &ParseMxSmi}};
  const std::vector<std::string> foreign = {"cnmon_mlu370_2.txt", "npu_smi_910b_8.txt", "ixsmi_bi_v100_2.txt",
                                            "mx_smi_c500_2.txt", "hy_smi_k100_4.txt"};
  for (size_t i = 0; i < parsers.size(); ++i) {
    SCOPED_TRACE(parsers[i].first);
    auto empty = parsers[i].second("", nullptr);
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.status().message().find("it printed nothing"), std::string::npos) << empty.status().message();
    auto other = parsers[i].second(Fixture(foreign[i]), nullptr);
    ASSERT_FALSE(other.ok());
    EXPECT_NE(other.status().message().find(parsers[i].first), std::string::npos) << other.status().message();
  }
}

TEST(SmiTableTest, UsageTotals) {
  using internal::UsageTotals;
  EXPECT_EQ(UsageTotals("0           0    / 0          3161 / 65536"), (std::vector<int64_t>{0, 65536}));
  EXPECT_EQ(UsageTotals("0 MiB/ 23374 MiB"), (std::vector<int64_t>{23374}));
  EXPECT_EQ(UsageTotals("114MiB / 32768MiB"), (std::vector<int64_t>{32768}));
  EXPECT_EQ(UsageTotals("858/65536 MiB"), (std::vector<int64_t>{65536}));
  EXPECT_EQ(UsageTotals("N/A"), (std::vector<int64_t>{}));
  EXPECT_EQ(UsageTotals("NA   / NA"), (std::vector<int64_t>{}));
}

TEST(SmiTableTest, DeviceIndex) {
  EXPECT_EQ(*internal::ParseDeviceIndex("7", ""), 7);
  EXPECT_FALSE(internal::ParseDeviceIndex("-1", "").ok());
  EXPECT_FALSE(internal::ParseDeviceIndex("x", "").ok());
  EXPECT_FALSE(internal::ParseDeviceIndex("4096", "").ok());
}

}  // namespace
}  // namespace xpool::agent
