#pragma once
// Byte keys for grouping alike nodes and devices (the Scheduler's node states, the PlacementExplainer's device
// groups): values appended as raw bytes, strings with their length first. Two keys are equal exactly when every
// appended value is. Free functions, no state.
#include <string>

#include "model/device.h"

namespace xpool::scheduler_internal {

// Appends the raw bytes of a trivially copyable value.
template <typename T>
void PutBytes(std::string* key, const T& v) {
  key->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

inline void PutString(std::string* key, const std::string& s) {
  PutBytes(key, s.size());
  key->append(s);
}

// What fitting and scoring read of a device's description: everything but its index and uuid.
inline void PutDeviceDescription(const Device& d, std::string* key) {
  PutBytes(key, static_cast<int>(d.vendor));
  PutString(key, d.model);
  PutBytes(key, d.memory_mib);
  PutBytes(key, d.compute_milli);
  PutBytes(key, d.max_sharers);
  PutBytes(key, d.numa_node);
  PutBytes(key, static_cast<int>(d.mode));
  PutBytes(key, static_cast<uint8_t>(d.healthy));
  PutBytes(key, static_cast<uint8_t>(d.cordoned));
}

}  // namespace xpool::scheduler_internal
