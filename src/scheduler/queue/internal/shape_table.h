#pragma once
// ShapeTable: gives equal (TaskRequest, replicas) pairs the same small integer, so a pass can
// remember per shape what the placer answered. Requests without type / uuid selectors (nearly all)
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
    if (!request.type_include.empty() || !request.type_exclude.empty() ||
        !request.uuid_include.empty() || !request.uuid_exclude.empty()) {
      auto [it, inserted] = ids_.try_emplace(Key{&request, replicas}, size_);
      if (inserted) ++size_;
      return it->second;
    }
    const Flat key = {request.cpu_milli,
                      request.memory_mib,
                      request.device_count,
                      request.device_memory_mib,
                      request.device_memory_percent,
                      request.device_compute_milli,
                      request.vendor ? static_cast<int64_t>(*request.vendor) + 1 : 0,
                      request.numa_bind ? 1 : 0,
                      replicas};
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
  using Flat = std::array<int64_t, 9>;
  // A slot: the key's hash's high 32 bits, then its index into flat_keys_; kEmpty when free.
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static constexpr uint64_t kTagMask = ~uint64_t{0} << 32;
  static bool SameFlat(const Flat& a, const Flat& b) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  static size_t HashFlat(const Flat& k) {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (int64_t v : k) {
      h ^= static_cast<uint64_t>(v);
      h *= 0xff51afd7ed558ccdULL;
      h ^= h >> 32;
    }
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
  std::vector<int> flat_ids_;  // parallel to flat_keys_
  std::unordered_map<Key, int, Hash, Equal> ids_;  // requests with selectors
};

}  // namespace xpool::internal
