#include "http/gzip.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <string>

#include "http/testing/gunzip.h"

namespace xpool::http {
namespace {

using testing::Gunzip;

// Metrics-like lines with random hex, so that pieces cross deflate's 32 KiB window and block boundaries.
std::string SampleText(size_t lines, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string text;
  for (size_t i = 0; i < lines; ++i) {
    text += "xpool_device_memory_allocated_bytes{UUID=\"GPU-";
    for (int j = 0; j < 16; ++j) text += "0123456789abcdef"[rng() % 16];
    text += "\"} " + std::to_string(rng() % 100000) + "\n";
  }
  return text;
}

TEST(GzipTest, PiecesCompressedApartReadAsOneText) {
  const std::string a = SampleText(20000, 1), b = SampleText(3, 2), c = SampleText(50000, 3);
  const DeflatedText da = DeflateText(a), db = DeflateText(b), dc = DeflateText(c, 6), empty = DeflateText("");
  EXPECT_LT(da.deflate.size(), a.size() / 2);
  EXPECT_EQ(da.size, a.size());
  EXPECT_EQ(Gunzip(GzipOf({&da, &db, &dc})), a + b + c);
  EXPECT_EQ(Gunzip(GzipOf({&dc, &empty, &da})), c + a);  // the order given; an empty piece adds nothing
  EXPECT_EQ(Gunzip(GzipOf({&da, &da})), a + a);          // a piece may be sent twice: it refers to nothing outside
  EXPECT_EQ(Gunzip(GzipOf({&empty})), "");
  const DeflatedText none;  // no bytes at all: no block
  EXPECT_EQ(Gunzip(GzipOf({&none, &db, &none})), b);
  EXPECT_EQ(Gunzip(GzipOf({})), "");
}

TEST(GzipTest, AKeptDeflaterMakesPiecesOfTheirOwn) {
  Deflater deflater;
  const std::string a = SampleText(40, 6), b = SampleText(5000, 7), c = "short";
  const DeflatedText da = deflater.Deflate(a), db = deflater.Deflate(b), dc = deflater.Deflate(c);
  EXPECT_EQ(da.deflate, DeflateText(a).deflate);  // nothing of one piece's state leaks into the next
  EXPECT_EQ(dc.deflate, DeflateText(c).deflate);
  EXPECT_EQ(Gunzip(GzipOf({&dc, &da, &db, &da})), c + a + b + a);
}

TEST(GzipTest, PlainTextGoesBetweenPiecesAsStoredBlocks) {
  const std::string a = SampleText(2000, 4), big_plain = SampleText(3000, 5);  // > 65,535 bytes: several blocks
  ASSERT_GT(big_plain.size(), 2u * 65535u);
  const DeflatedText da = DeflateText(a);
  GzipWriter w;
  w.AppendPlain("{\"nodes\":[");
  w.Append(da);
  w.AppendPlain("1700000000");
  w.AppendPlain("");
  w.AppendPlain(",");
  w.Append(da);
  w.AppendPlain(big_plain);
  w.AppendPlain("]}");
  EXPECT_EQ(Gunzip(std::move(w).Finish()), "{\"nodes\":[" + a + "1700000000," + a + big_plain + "]}");
  GzipWriter only_plain;
  only_plain.AppendPlain("just text");
  EXPECT_EQ(Gunzip(std::move(only_plain).Finish()), "just text");
}

TEST(GzipTest, TheTrailerChecksTheWholeText) {
  const DeflatedText a = DeflateText("first piece\n"), b = DeflateText("second piece\n");
  std::string gz = GzipOf({&a, &b});
  ASSERT_EQ(Gunzip(gz), "first piece\nsecond piece\n");
  DeflatedText wrong_crc = b;
  wrong_crc.crc32 ^= 1;
  z_stream z{};
  ASSERT_EQ(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
  std::string bad = GzipOf({&a, &wrong_crc});
  char buf[256];
  z.next_in = reinterpret_cast<Bytef*>(bad.data());
  z.avail_in = static_cast<uInt>(bad.size());
  z.next_out = reinterpret_cast<Bytef*>(buf);
  z.avail_out = sizeof(buf);
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_DATA_ERROR);  // "incorrect data check"
  inflateEnd(&z);
}

TEST(GzipTest, AcceptEncodingTakesGzipUnlessWeightedZero) {
  struct Row {
    const char* header;
    bool gzip;
  };
  const Row rows[] = {
      {"gzip", true},
      {"GZIP", true},
      {"x-gzip", true},
      {"gzip, deflate, br", true},  // curl --compressed, browsers
      {"deflate,gzip;q=0.5", true},
      {"gzip;q=1.000", true},
      {"identity;q=1, gzip; q=0.001", true},
      {" *", true},
      {"", false},
      {"identity", false},
      {"deflate, br", false},
      {"gzip;q=0", false},
      {"gzip;Q=0.000", false},
      {"*;q=0", false},
      {"gzip;q=0, *", false},  // the named coding's weight wins over the wildcard's
      {"*;q=0, gzip", true},
      {"gzipx", false},
  };
  for (const Row& row : rows) EXPECT_EQ(AcceptsGzip(row.header), row.gzip) << row.header;
}

}  // namespace
}  // namespace xpool::http
