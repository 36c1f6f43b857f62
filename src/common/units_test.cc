#include "common/units.h"

#include <gtest/gtest.h>

namespace xpool {
namespace {

TEST(UnitsTest, MemoryAccepted) {
  struct Row {
    const char* text;
    int64_t mib;
  };
  const Row rows[] = {{"8Gi", 8192},   {"8192Mi", 8192}, {"8192", 8192}, {"1Ti", 1048576},
                      {"1.5Gi", 1536}, {"1024Ki", 1},    {"0", 0},       {" 16Gi ", 16384},
                      {"1G", 954},     {"1048576B", 1},  {"500M", 477}};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    auto got = ParseMemoryMiB(row.text);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, row.mib);
  }
}

TEST(UnitsTest, MemoryRejectedWithReason) {
  struct Row {
    const char* text;
    const char* reason;
  };
  const Row rows[] = {{"", "empty"},
                      {"-1Gi", "negative"},
                      {"8Gb", "unknown unit"},
                      {"abc", "not a number"},
                      {"1Ki", "whole number"},
                      {"99999999999999999999", "too large"},
                      {"1.23456Gi", "decimals"}};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.text);
    auto got = ParseMemoryMiB(row.text);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find(row.reason), std::string::npos) << got.status().message();
  }
}

TEST(UnitsTest, Cpu) {
  EXPECT_EQ(ParseCpuMilli("500m").value_or(-1), 500);
  EXPECT_EQ(ParseCpuMilli("2").value_or(-1), 2000);
  EXPECT_EQ(ParseCpuMilli("1.5").value_or(-1), 1500);
  EXPECT_EQ(ParseCpuMilli("0.125").value_or(-1), 125);
  EXPECT_FALSE(ParseCpuMilli("-1").ok());
  EXPECT_FALSE(ParseCpuMilli("1.0005").ok());
  EXPECT_FALSE(ParseCpuMilli("2 cores").ok());
  EXPECT_FALSE(ParseCpuMilli("m").ok());
  EXPECT_FALSE(ParseCpuMilli("").ok());
}

TEST(UnitsTest, Percent) {
  EXPECT_EQ(*ParsePercent("50%"), 50);
  EXPECT_EQ(*ParsePercent("100"), 100);
  EXPECT_EQ(*ParsePercent("0"), 0);
  EXPECT_NE(ParsePercent("101%").status().message().find("above 100"), std::string::npos);
  EXPECT_NE(ParsePercent("-5%").status().message().find("negative"), std::string::npos);
  EXPECT_FALSE(ParsePercent("half").ok());
}

TEST(UnitsTest, FormatMemory) {
  EXPECT_EQ(FormatMemoryMiB(8192), "8Gi");
  EXPECT_EQ(FormatMemoryMiB(1536), "1536Mi");
  EXPECT_EQ(FormatMemoryMiB(1048576), "1Ti");
  EXPECT_EQ(FormatMemoryMiB(0), "0Mi");
}

// The display style: GiB with one decimal, units from milli-units, device shares in percent.
TEST(UnitsTest, FormatForPeople) {
  EXPECT_EQ(FormatGiB(81920), "80.0");
  EXPECT_EQ(FormatGiB(24105), "23.5");
  EXPECT_EQ(FormatGiB(1536), "1.5");
  EXPECT_EQ(FormatGiB(64), "0.1");
  EXPECT_EQ(FormatGiB(0), "0.0");
  EXPECT_EQ(FormatGiB(-2048), "-2.0");
  EXPECT_EQ(FormatMilliUnits(2000), "2");
  EXPECT_EQ(FormatMilliUnits(1700), "1.7");
  EXPECT_EQ(FormatMilliUnits(250), "0.25");
  EXPECT_EQ(FormatMilliUnits(1), "0.001");
  EXPECT_EQ(FormatMilliUnits(0), "0");
  EXPECT_EQ(FormatMilliUnits(-1500), "-1.5");
  EXPECT_EQ(FormatDevicePercent(500), "50%");
  EXPECT_EQ(FormatDevicePercent(1000), "100%");
  EXPECT_EQ(FormatDevicePercent(5), "0.5%");
  EXPECT_EQ(FormatDevicePercent(1234), "123.4%");
  EXPECT_EQ(FormatDevicePercent(0), "0%");
}

}  // namespace
}  // namespace xpool
