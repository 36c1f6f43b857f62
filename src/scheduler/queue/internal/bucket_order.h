#pragma once
// SortByBucketThenSubmit: the DRF queue's static order — waiting jobs grouped by bucket ((priority,
// tenant)), each bucket by (first submit, id, index) — for a pass's 100,000 jobs.
//
// A comparison sort of random submit times mispredicts about every other comparison (the per-bucket
// std::sort was ~9 % of a best-fit pass). Instead: a least-significant-digit radix sort by submit
// time (its offset from the earliest, trailing zero bits common to all dropped — whole seconds in
// microseconds drop six — a byte a pass, passes whose byte is the same for every key skipped), then
// a counting sort by bucket; both stable. Jobs of one bucket with equal submit times are then
// adjacent, and such runs (short, mostly already in order) are put in (id, index) order. The result
// is exactly that of sorting by (bucket, submit, id, index). Pure; thread-compatible.
#include <cstdint>
#include <vector>

namespace xpool::internal {

struct BucketKey {
  int64_t submit;
  int64_t id;
  int index;
  int bucket;  // 0 .. buckets - 1
};

// `keys` (taken: it is one of the two buffers the sort works in) sorted by (bucket, submit, id,
// index); `bucket_start` gets buckets + 1 entries, bucket b being [bucket_start[b], bucket_start[b
// + 1]) of the result.
std::vector<BucketKey> SortByBucketThenSubmit(std::vector<BucketKey> keys, int buckets, std::vector<int>* bucket_start);

}  // namespace xpool::internal
