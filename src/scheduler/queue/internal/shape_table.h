#pragma once
// ShapeTable: gives equal (TaskRequest, replicas) pairs the same small integer, so a pass can
// remember per shape what the placer answered. Holds pointers into the caller's jobs, which must
// outlive it. Not thread-safe.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/task_request.h"

namespace xpool::internal {

class ShapeTable {
 public:
  int IdOf(const TaskRequest& request, int replicas) {
    auto [it, inserted] = ids_.try_emplace(Key{&request, replicas}, static_cast<int>(ids_.size()));
    return it->second;
  }
  int size() const { return static_cast<int>(ids_.size()); }

 private:
  struct Key {
    const TaskRequest* request;
    int replicas;
  };
  static void Mix(size_t& h, size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }
  static void MixStrings(size_t& h, const std::vector<std::string>& v) {
    for (const std::string& s : v) Mix(h, std::hash<std::string>()(s));
    Mix(h, v.size());
  }
  struct Hash {
    size_t operator()(const Key& k) const {
      const TaskRequest& r = *k.request;
      size_t h = static_cast<size_t>(k.replicas);
      Mix(h, static_cast<size_t>(r.cpu_milli));
      Mix(h, static_cast<size_t>(r.memory_mib));
      Mix(h, static_cast<size_t>(r.device_count));
      Mix(h, static_cast<size_t>(r.device_memory_mib));
      Mix(h, static_cast<size_t>(r.device_memory_percent));
      Mix(h, static_cast<size_t>(r.device_compute_milli));
      Mix(h, r.vendor ? static_cast<size_t>(*r.vendor) + 1 : 0);
      Mix(h, r.numa_bind);
      MixStrings(h, r.type_include);
      MixStrings(h, r.type_exclude);
      MixStrings(h, r.uuid_include);
      MixStrings(h, r.uuid_exclude);
      return h;
    }
  };
  struct Equal {
    bool operator()(const Key& a, const Key& b) const {
      const TaskRequest& x = *a.request;
      const TaskRequest& y = *b.request;
      return a.replicas == b.replicas && x.cpu_milli == y.cpu_milli &&
             x.memory_mib == y.memory_mib && x.device_count == y.device_count &&
             x.device_memory_mib == y.device_memory_mib &&
             x.device_memory_percent == y.device_memory_percent &&
             x.device_compute_milli == y.device_compute_milli && x.vendor == y.vendor &&
             x.numa_bind == y.numa_bind && x.type_include == y.type_include &&
             x.type_exclude == y.type_exclude && x.uuid_include == y.uuid_include &&
             x.uuid_exclude == y.uuid_exclude;
    }
  };
  std::unordered_map<Key, int, Hash, Equal> ids_;
};

}  // namespace xpool::internal
