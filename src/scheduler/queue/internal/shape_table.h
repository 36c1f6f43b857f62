#pragma once
// ShapeTable: gives equal (TaskRequest, replicas) pairs the same small integer, so a pass can
// remember per shape what the placer answered. Requests without type / uuid / MIG selectors or an MPS user (nearly all)
// are kept by value in a flat open-addressing table (a pass asks once per waiting job: 100,000
// lookups must not chase pointers into the jobs); the others go to a map keyed by pointers into the
// caller's jobs, which must outlive the table. Not thread-safe.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/task_request.h"
#include "scheduler/internal/request_key.h"

namespace xpool::internal {

class ShapeTable {
 public:
  int IdOf(const TaskRequest& request, int replicas) {
    if (!request.type_include.empty() || !request.type_exclude.empty() || !request.uuid_include.empty() ||
        !request.uuid_exclude.empty() || !request.mig_profile.empty() || request.mps_user != 0) {
      auto [it, inserted] = ids_.try_emplace(Key{&request, replicas}, size_);
      if (inserted) ++size_;
      return it->second;
    }
    const Flat key = Pack(request, replicas);
    if (2 * (flat_keys_.size() + 1) > slots_.size()) Grow();
    const size_t mask = slots_.size() - 1;
    const size_t h = HashFlat(key);
    const uint64_t tag = static_cast<uint64_t>(h >> 32) << 32;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const uint64_t slot = slots_[i];
      if (slot == kEmpty) {
        slots_[i] = tag | flat_keys_.size();
        flat_keys_.push_back(key);
        flat_ids_.push_back(size_);
        return size_++;
      }
      // The hash's high half first: a pass looks up every waiting job, and a key compare is a
      // cache miss into thousands of keys.
      if ((slot & kTagMask) != tag) continue;
      const uint32_t k = static_cast<uint32_t>(slot);
      if (SameFlat(flat_keys_[k], key)) return flat_ids_[k];
    }
  }
  int size() const { return size_; }

 private:
  // A plain request and its replicas, exactly, in six words: the 64-bit numbers as they are, the 32-bit ones two
  // to a word (as unsigned, so a negative one cannot spill into its neighbour), vendor and NUMA binding beside
  // the replicas. Fewer words to build, hash and compare for each of a pass's 100,000 lookups.
  using Flat = std::array<uint64_t, 6>;
  static Flat Pack(const TaskRequest& r, int replicas) {
    const auto u32 = [](int v) { return static_cast<uint64_t>(static_cast<uint32_t>(v)); };
    const uint64_t vendor = r.vendor ? static_cast<uint64_t>(*r.vendor) + 1 : 0;  // 0..256: 9 bits
    return {static_cast<uint64_t>(r.cpu_milli),
            static_cast<uint64_t>(r.memory_mib),
            static_cast<uint64_t>(r.device_memory_mib),
            static_cast<uint64_t>(r.device_compute_milli),
            u32(r.device_count) | u32(r.device_memory_percent) << 32,
            u32(replicas) | vendor << 32 | static_cast<uint64_t>(r.numa_bind) << 48};
  }
  // A slot: the key's hash's high 32 bits, then its index into flat_keys_; kEmpty when free.
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static constexpr uint64_t kTagMask = ~uint64_t{0} << 32;
  static bool SameFlat(const Flat& a, const Flat& b) {
    uint64_t diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i];
    return diff == 0;
  }
  // Each word times its own odd constant, summed (independent multiplies, no chain through them), then
  // murmur3's finaliser so the high half (the slot's tag) depends on every bit.
  static size_t HashFlat(const Flat& k) {
    static constexpr uint64_t kMul[6] = {0x9e3779b97f4a7c15ULL, 0xc2b2ae3d27d4eb4fULL, 0x165667b19e3779f9ULL,
                                         0xd6e8feb86659fd93ULL, 0xff51afd7ed558ccdULL, 0xc4ceb9fe1a85ec53ULL};
    uint64_t h = 0;
    for (size_t i = 0; i < k.size(); ++i) h += k[i] * kMul[i];
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return static_cast<size_t>(h);
  }
  void Grow() {
    std::vector<uint64_t> slots(slots_.empty() ? 64 : 2 * slots_.size(), kEmpty);
    const size_t mask = slots.size() - 1;
    for (size_t k = 0; k < flat_keys_.size(); ++k) {
      const size_t h = HashFlat(flat_keys_[k]);
      size_t i = h & mask;
      while (slots[i] != kEmpty) i = (i + 1) & mask;
      slots[i] = (static_cast<uint64_t>(h >> 32) << 32) | k;
    }
    slots_ = std::move(slots);
  }

  struct Key {
    const TaskRequest* request;
    int replicas;
  };
  struct Hash {
    size_t operator()(const Key& k) const {
      return scheduler_internal::HashRequest(*k.request) ^ (static_cast<size_t>(k.replicas) * 0x9e3779b97f4a7c15ULL);
    }
  };
  struct Equal {
    bool operator()(const Key& a, const Key& b) const {
      return a.replicas == b.replicas && scheduler_internal::SameRequest(*a.request, *b.request);
    }
  };
  int size_ = 0;
  std::vector<uint64_t> slots_;  // tag | index into flat_keys_ (see kEmpty); at most half full
  std::vector<Flat> flat_keys_;
  std::vector<int> flat_ids_;                      // parallel to flat_keys_
  std::unordered_map<Key, int, Hash, Equal> ids_;  // requests with selectors
};

}  // namespace xpool::internal
