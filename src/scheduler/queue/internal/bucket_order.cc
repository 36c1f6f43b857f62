#include "scheduler/queue/internal/bucket_order.h"

#include <algorithm>
#include <array>
#include <bit>
#include <tuple>
#include <utility>

namespace xpool::internal {
namespace {

// Counts per bucket, as first positions: buckets + 1 entries.
void CountBuckets(const std::vector<BucketKey>& keys, int buckets, std::vector<int>* bucket_start) {
  bucket_start->assign(static_cast<size_t>(buckets) + 1, 0);
  for (const BucketKey& k : keys) ++(*bucket_start)[k.bucket + 1];
  for (int b = 1; b <= buckets; ++b) (*bucket_start)[b] += (*bucket_start)[b - 1];
}

// Stable LSD radix sort of `a` by its submit fields, which hold offsets with set bits only below
// `bits`; a byte a pass (256 counters and 256 write positions stay in L1). `b` is scratch of a's
// size; the result is in `a`.
void RadixByOffset(std::vector<BucketKey>& a, std::vector<BucketKey>& b, int bits) {
  const int passes = (bits + 7) / 8;
  std::vector<std::array<uint32_t, 256>> counts(passes);  // value-initialised: zeros
  for (const BucketKey& k : a) {
    const uint64_t offset = static_cast<uint64_t>(k.submit);
    for (int d = 0; d < passes; ++d) ++counts[d][(offset >> (8 * d)) & 255];
  }
  for (int d = 0; d < passes; ++d) {
    std::array<uint32_t, 256>& c = counts[d];
    if (*std::max_element(c.begin(), c.end()) == a.size()) continue;  // the same byte in every key
    uint32_t sum = 0;
    for (uint32_t& n : c) {  // counts -> first positions
      const uint32_t here = n;
      n = sum;
      sum += here;
    }
    for (const BucketKey& k : a) b[c[(static_cast<uint64_t>(k.submit) >> (8 * d)) & 255]++] = k;
    a.swap(b);
  }
}

// Runs of equal (bucket, submit) into (id, index) order.
void OrderTies(std::vector<BucketKey>* keys) {
  std::vector<BucketKey>& k = *keys;
  const auto by_id = [](const BucketKey& x, const BucketKey& y) {
    return std::tie(x.id, x.index) < std::tie(y.id, y.index);
  };
  for (size_t begin = 0; begin < k.size();) {
    size_t end = begin + 1;
    while (end < k.size() && k[end].bucket == k[begin].bucket && k[end].submit == k[begin].submit) ++end;
    if (end - begin > 1 && !std::is_sorted(k.begin() + begin, k.begin() + end, by_id)) {
      std::sort(k.begin() + begin, k.begin() + end, by_id);
    }
    begin = end;
  }
}

}  // namespace

std::vector<BucketKey> SortByBucketThenSubmit(std::vector<BucketKey> keys, int buckets,
                                              std::vector<int>* bucket_start) {
  CountBuckets(keys, buckets, bucket_start);
  if (keys.empty()) return keys;
  const uint64_t submit_min =
      static_cast<uint64_t>(std::min_element(keys.begin(), keys.end(), [](const BucketKey& x, const BucketKey& y) {
                              return x.submit < y.submit;
                            })->submit);
  uint64_t offsets = 0;  // every offset's bits: their width and common trailing zeros bound the radix passes
  for (const BucketKey& k : keys) offsets |= static_cast<uint64_t>(k.submit) - submit_min;  // exact, unsigned
  const int shift = offsets == 0 ? 0 : std::countr_zero(offsets);
  // While sorting, a key's submit field holds its offset >> shift (restored in the bucket pass).
  for (BucketKey& k : keys) k.submit = static_cast<int64_t>((static_cast<uint64_t>(k.submit) - submit_min) >> shift);
  std::vector<BucketKey> other(keys.size());
  RadixByOffset(keys, other, std::bit_width(offsets >> shift));
  // Last, and stable: by bucket.
  std::vector<int> next(bucket_start->begin(), bucket_start->end() - 1);
  for (const BucketKey& k : keys) {
    BucketKey& out = other[next[k.bucket]++];
    out = k;
    out.submit = static_cast<int64_t>(submit_min + (static_cast<uint64_t>(k.submit) << shift));
  }
  OrderTies(&other);
  return other;
}

}  // namespace xpool::internal
