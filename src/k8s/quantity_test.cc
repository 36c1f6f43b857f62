#include "k8s/quantity.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace xpool::k8s {
namespace {

using Format = KubeQuantity::Format;
constexpr Format kDec = Format::kDecimalSI;
constexpr Format kBin = Format::kBinarySI;
constexpr Format kExp = Format::kDecimalExponent;

KubeQuantity Q(int64_t mantissa, int exponent, Format format) {
  Result<KubeQuantity> q = KubeQuantity::FromDecimal(mantissa, exponent, format);
  EXPECT_TRUE(q.ok()) << q.status().message();
  return *q;
}

// The rows of apimachinery's TestQuantityParse: text → value (mantissa × 10^exponent) and format.
TEST(KubeQuantityTest, ParsesLikeKubernetes) {
  constexpr int64_t kKi = 1024;
  const struct {
    const char* input;
    int64_t mantissa;
    int exponent;
    Format format;
  } rows[] = {
      {"0", 0, 0, kDec},
      {"0n", 0, 0, kDec},
      {"0u", 0, 0, kDec},
      {"0m", 0, 0, kDec},
      {"0Ki", 0, 0, kBin},
      {"0k", 0, 0, kDec},
      {"0Mi", 0, 0, kBin},
      {"0M", 0, 0, kDec},
      {"0Gi", 0, 0, kBin},
      {"0G", 0, 0, kDec},
      {"0Ti", 0, 0, kBin},
      {"0T", 0, 0, kDec},
      {"1", 1, 0, kDec},
      {"1Ki", kKi, 0, kBin},
      {"8Ki", 8 * kKi, 0, kBin},
      {"7Mi", 7 * kKi * kKi, 0, kBin},
      {"6Gi", 6 * kKi * kKi * kKi, 0, kBin},
      {"5Ti", 5 * kKi * kKi * kKi * kKi, 0, kBin},
      {"4Pi", 4 * kKi * kKi * kKi * kKi * kKi, 0, kBin},
      {"3Ei", 3 * kKi * kKi * kKi * kKi * kKi * kKi, 0, kBin},
      {"10Ti", 10 * kKi * kKi * kKi * kKi, 0, kBin},
      {"100Ti", 100 * kKi * kKi * kKi * kKi, 0, kBin},
      {"5n", 5, -9, kDec},
      {"4u", 4, -6, kDec},
      {"3m", 3, -3, kDec},
      {"9", 9, 0, kDec},
      {"8k", 8, 3, kDec},
      {"50k", 5, 4, kDec},
      {"7M", 7, 6, kDec},
      {"6G", 6, 9, kDec},
      {"5T", 5, 12, kDec},
      {"40T", 4, 13, kDec},
      {"300T", 3, 14, kDec},
      {"2P", 2, 15, kDec},
      {"1E", 1, 18, kDec},
      {"1E-3", 1, -3, kExp},
      {"1e3", 1, 3, kExp},
      {"1E6", 1, 6, kExp},
      {"1e9", 1, 9, kExp},
      {"1E12", 1, 12, kExp},
      {"1e15", 1, 15, kExp},
      {"1E18", 1, 18, kExp},
      {"1e14", 1, 14, kExp},
      {"1e13", 1, 13, kExp},
      {"100.035k", 100035, 0, kDec},
      {"0.001", 1, -3, kDec},
      {"0.0005k", 5, -1, kDec},
      {"0.005", 5, -3, kDec},
      {"0.05", 5, -2, kDec},
      {"0.5", 5, -1, kDec},
      {"0.00050k", 5, -1, kDec},
      {"0.00500", 5, -3, kDec},
      {"0.05000", 5, -2, kDec},
      {"0.50000", 5, -1, kDec},
      {"0.5e0", 5, -1, kExp},
      {"0.5e-1", 5, -2, kExp},
      {"0.5e-2", 5, -3, kExp},
      {"10.035M", 10035, 3, kDec},
      {"1.2e3", 12, 2, kExp},
      {"1.3E+6", 13, 5, kExp},
      {"1.40e9", 14, 8, kExp},
      {"1.53E12", 153, 10, kExp},
      {"1.6e15", 16, 14, kExp},
      {"1.7E18", 17, 17, kExp},
      {"9.01", 901, -2, kDec},
      {"8.1k", 81, 2, kDec},
      {"7.123456M", 7123456, 0, kDec},
      {"6.987654321G", 6987654321, 0, kDec},
      {"5.444T", 5444, 9, kDec},
      {"40.1T", 401, 11, kDec},
      {"300.2T", 3002, 11, kDec},
      {"2.5P", 25, 14, kDec},
      {"1.01E", 101, 16, kDec},
      {"3.001n", 4, -9, kDec},
      {"1.1E-9", 2, -9, kExp},
      {"0.0000000001", 1, -9, kDec},
      {"0.0000000005", 1, -9, kDec},
      {"0.00000000050", 1, -9, kDec},
      {"0.5e-9", 1, -9, kExp},
      {"0.9n", 1, -9, kDec},
      {"0.00000012345", 124, -9, kDec},
      {"0.00000012354", 124, -9, kDec},
      {"9Ei", std::numeric_limits<int64_t>::max(), 0, kBin},
      {"9223372036854775807Ki", std::numeric_limits<int64_t>::max(), 0, kBin},
      {"12E", 12, 18, kDec},
      {"100.035Ki", 10243584, -2, kBin},
      {"0.5Mi", 512 * kKi, 0, kBin},
      {"0.05Gi", 536870912, -1, kBin},
      {"0.025Ti", 274877906944, -1, kBin},
      {"0.000000000001Ki", 2, -9, kDec},
      {".001", 1, -3, kDec},
      {".0001k", 100, -3, kDec},
      {"1.", 1, 0, kDec},
      {"1.G", 1, 9, kDec},
  };
  for (const auto& row : rows) {
    for (const std::string sign : {"", "+", "-"}) {
      SCOPED_TRACE(sign + row.input);
      Result<KubeQuantity> got = KubeQuantity::Parse(sign + row.input);
      ASSERT_TRUE(got.ok()) << got.status().message();
      const KubeQuantity want = Q(sign == "-" ? -row.mantissa : row.mantissa, row.exponent, row.format);
      EXPECT_EQ(static_cast<long double>(got->nanos()), static_cast<long double>(want.nanos()));
      EXPECT_TRUE(got->nanos() == want.nanos());
      EXPECT_EQ(got->format(), row.format);
    }
  }
}

TEST(KubeQuantityTest, RefusesWhatKubernetesRefuses) {
  for (const char* bad : {"", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-",
                          "1e4294967297", " 1", "1 ", "1ki", "8 Gi", "1e", "1ee3", "1Ki2"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(KubeQuantity::Parse(bad).ok());
  }
}

// apimachinery's TestQuantityString (the rows that round-trip through parsing) and TestQuantityParseEmit: the
// canonical text, and the canonical text of the alternate spelling.
TEST(KubeQuantityTest, CanonicalFormLikeKubernetes) {
  constexpr int64_t kKi = 1024;
  const struct {
    int64_t mantissa;
    int exponent;
    Format format;
    const char* expect;
    const char* alternate;
  } rows[] = {
      {kKi * kKi * kKi, 0, kBin, "1Gi", "1024Mi"},
      {300 * kKi * kKi, 0, kBin, "300Mi", "307200Ki"},
      {6 * kKi, 0, kBin, "6Ki", ""},
      {1001 * kKi * kKi * kKi, 0, kBin, "1001Gi", "1025024Mi"},
      {kKi * kKi * kKi * kKi, 0, kBin, "1Ti", "1024Gi"},
      {5, 0, kBin, "5", "5000m"},
      {500, -3, kBin, "500m", "0.5"},
      {1, 9, kDec, "1G", "1000M"},
      {1000, 6, kDec, "1G", "0.001T"},
      {1000000, 3, kDec, "1G", ""},
      {1000000000, 0, kDec, "1G", ""},
      {1, -3, kDec, "1m", "1000u"},
      {80, -3, kDec, "80m", ""},
      {1080, -3, kDec, "1080m", "1.08"},
      {108, -2, kDec, "1080m", "1080000000n"},
      {10800, -4, kDec, "1080m", ""},
      {300, 6, kDec, "300M", ""},
      {1, 12, kDec, "1T", ""},
      {1, 18, kDec, "1E", ""},
      {1, 21, kDec, "1e21", "1000E"},
      {5, 21, kDec, "5e21", "5000E"},
      {1, 24, kDec, "1e24", "1000000E"},
      {1234567, 6, kDec, "1234567M", ""},
      {1234567, -3, kBin, "1234567m", ""},
      {3, 3, kDec, "3k", ""},
      {1025, 0, kBin, "1025", ""},
      {0, 0, kDec, "0", ""},
      {0, 0, kBin, "0", ""},
      {1, 9, kExp, "1e9", ".001e12"},
      {1, -3, kExp, "1e-3", "0.001e0"},
      {1, -9, kExp, "1e-9", "1000e-12"},
      {80, -3, kExp, "80e-3", ""},
      {300, 6, kExp, "300e6", ""},
      {1, 12, kExp, "1e12", ""},
      {1, 3, kExp, "1e3", ""},
      {3, 3, kExp, "3e3", ""},
      {0, 0, kExp, "0", "00"},
      {1, -9, kDec, "1n", ""},
      {80, -9, kDec, "80n", ""},
      {1080, -9, kDec, "1080n", ""},
      {108, -8, kDec, "1080n", ""},
      {10800, -10, kDec, "1080n", ""},
      {1, -6, kDec, "1u", ""},
      {80, -6, kDec, "80u", ""},
      {1080, -6, kDec, "1080u", ""},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.expect);
    EXPECT_EQ(Q(row.mantissa, row.exponent, row.format).Canonical(), row.expect);
    if (row.mantissa != 0) {
      EXPECT_EQ(Q(-row.mantissa, row.exponent, row.format).Canonical(), "-" + std::string(row.expect));
    }
    Result<std::string> again = CanonicalQuantity(row.expect);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(*again, row.expect);
    if (std::string(row.alternate).empty()) continue;
    Result<std::string> alternate = CanonicalQuantity(row.alternate);
    ASSERT_TRUE(alternate.ok()) << alternate.status().message();
    EXPECT_EQ(*alternate, row.expect);
  }
  // TestBinarySIZeroExponentString: a BinarySI value that is not a multiple of 1024 prints as a plain number.
  EXPECT_EQ(Q(2000, 0, kBin).Canonical(), "2000");
  const struct {
    const char* in;
    const char* expect;
  } emits[] = {
      {"1Ki", "1Ki"},
      {"1Mi", "1Mi"},
      {"1Gi", "1Gi"},
      {"1024Mi", "1Gi"},
      {"1000M", "1G"},
      {".001Ki", "1024m"},
      {".000001Ki", "1024u"},
      {".000000001Ki", "1024n"},
      {".000000000001Ki", "2n"},
      // What the API server does to the HAMi resources pods ask for.
      {"8000", "8k"},
      {"1000", "1k"},
      {"10000", "10k"},
      {"3Ki", "3Ki"},
      {"4000000m", "4k"},
      {"1e2", "100"},
      {"1.5", "1500m"},
      {"1.5Gi", "1536Mi"},
      {"30", "30"},
      {"24576", "24576"},
      {"0.5Ki", "512"},
      {"1.1Ki", "1126400m"},
  };
  for (const auto& e : emits) {
    SCOPED_TRACE(e.in);
    Result<std::string> got = CanonicalQuantity(e.in);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(*got, e.expect);
    Result<std::string> negative = CanonicalQuantity(std::string("-") + e.in);
    ASSERT_TRUE(negative.ok());
    EXPECT_EQ(*negative, std::string("-") + e.expect);
  }
}

TEST(KubeQuantityTest, WholeNumbersNameTheField) {
  const struct {
    const char* text;
    int64_t want;  // -1: an error
    const char* error;
  } rows[] = {
      {"8k", 8000, ""},
      {"8000", 8000, ""},
      {"3Ki", 3072, ""},
      {"4000000m", 4000, ""},
      {"1e2", 100, ""},
      {"1.5k", 1500, ""},
      {"0", 0, ""},
      {"8.5", -1, "nvidia.com/gpumem \"8.5\" is not a whole number"},
      {"500m", -1, "nvidia.com/gpumem \"500m\" is not a whole number"},
      {"-1", -1, "nvidia.com/gpumem \"-1\" is negative"},
      {"1e30", -1, "nvidia.com/gpumem \"1e30\" is too large"},
      {"1e19", -1, "nvidia.com/gpumem \"1e19\" is too large"},
      {"1e40", -1, "nvidia.com/gpumem \"1e40\" is too large"},
      {"8GB", -1, "nvidia.com/gpumem \"8GB\" is not a quantity (unexpected \"B\")"},
      {"abc", -1, "nvidia.com/gpumem \"abc\" is not a quantity (unexpected \"a\")"},
      {"8mi", -1, "nvidia.com/gpumem \"8mi\" has an unknown suffix \"mi\""},
      {"", -1, "nvidia.com/gpumem \"\" is empty"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.text);
    Result<int64_t> got = WholeQuantity(row.text, "nvidia.com/gpumem");
    if (row.want >= 0) {
      ASSERT_TRUE(got.ok()) << got.status().message();
      EXPECT_EQ(*got, row.want);
    } else {
      ASSERT_FALSE(got.ok());
      EXPECT_EQ(got.status().message().rfind(row.error, 0), 0u) << got.status().message();
    }
  }
}

}  // namespace
}  // namespace xpool::k8s
