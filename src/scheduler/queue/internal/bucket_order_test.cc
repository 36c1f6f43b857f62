#include "scheduler/queue/internal/bucket_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace xpool::internal {
namespace {

std::vector<BucketKey> Reference(std::vector<BucketKey> keys) {
  std::sort(keys.begin(), keys.end(), [](const BucketKey& a, const BucketKey& b) {
    return std::tie(a.bucket, a.submit, a.id, a.index) < std::tie(b.bucket, b.submit, b.id, b.index);
  });
  return keys;
}

void ExpectSame(const std::vector<BucketKey>& got, const std::vector<BucketKey>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(got[i].bucket, want[i].bucket);
    ASSERT_EQ(got[i].submit, want[i].submit);
    ASSERT_EQ(got[i].id, want[i].id);
    ASSERT_EQ(got[i].index, want[i].index);
  }
}

// `draw_submit` / `draw_id` give each key's numbers; indices are a permutation (not in input
// order), so ties in (bucket, submit) test the (id, index) order.
template <typename Submit, typename Id>
void CheckSort(const std::string& name, int n, int buckets, Submit draw_submit, Id draw_id, std::mt19937_64& rng) {
  SCOPED_TRACE(name);
  std::vector<int> index(n);
  std::iota(index.begin(), index.end(), 0);
  std::shuffle(index.begin(), index.end(), rng);
  std::vector<BucketKey> keys;
  for (int i = 0; i < n; ++i) {
    const int bucket = static_cast<int>(rng() % static_cast<uint64_t>(buckets)) / 2 * 2;  // odd buckets empty
    keys.push_back({draw_submit(), draw_id(), index[i], bucket});
  }
  const std::vector<BucketKey> want = Reference(keys);
  std::vector<int> want_start(buckets + 1, 0);
  for (const BucketKey& k : keys) ++want_start[k.bucket + 1];
  for (int b = 1; b <= buckets; ++b) want_start[b] += want_start[b - 1];
  std::vector<int> start;
  ExpectSame(SortByBucketThenSubmit(keys, buckets, &start), want);
  EXPECT_EQ(start, want_start);
}

TEST(BucketOrderTest, MatchesSortingByBucketSubmitIdIndex) {
  std::mt19937_64 rng(5);
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const auto few = [&rng](int64_t lo, int64_t span) {
    return [&rng, lo, span] { return lo + static_cast<int64_t>(rng() % span); };
  };
  const auto any = [&rng] { return static_cast<int64_t>(rng()); };
  const auto fixed = [](int64_t v) { return [v] { return v; }; };
  // Many ties in submit (runs to order by id, then index), negative numbers.
  CheckSort("narrow, many ties", 5000, 20, few(-50, 100), few(-3, 8), rng);
  // Whole seconds in microseconds (trailing zero bits dropped), ids like a queue's.
  CheckSort(
      "times and ids like a queue's", 20000, 300,
      [&rng] { return 1'000'000'000'000 - static_cast<int64_t>(rng() % 86'400) * 1'000'000; }, few(1, 130'000), rng);
  CheckSort("one bucket", 3000, 1, few(0, 1000), few(0, 1000), rng);
  CheckSort(
      "odd offsets only", 3000, 4, [&rng] { return 1 + 2 * static_cast<int64_t>(rng() % 5000); }, few(0, 100), rng);
  // Offsets over all 64 bits; all submits equal (one run per bucket, ordered by id alone).
  CheckSort("submit spans int64", 3000, 8, any, few(0, 5), rng);
  CheckSort(
      "extremes", 3000, 4, [&rng, kMin, kMax] { return rng() % 2 ? kMin : kMax; }, any, rng);
  CheckSort("equal submits", 3000, 8, fixed(-9), any, rng);
  CheckSort("equal submits and ids", 3000, 8, fixed(4), fixed(4), rng);
  CheckSort("empty", 0, 3, any, any, rng);
}

}  // namespace
}  // namespace xpool::internal
