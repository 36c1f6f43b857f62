// Shared by the fake libcuda.so.1 and libnvidia-ml.so.1: the devices described by XPOOL_FAKE_DEVICES
// ("<count>x<MiB>", default "1x16384"), parsed once. Thread-safe (immutable after the first call).
#pragma once

#include <stdint.h>

namespace xpool::vgpu::fake {

inline constexpr int kMaxFakeDevices = 16;

struct FakeDevices {
  int count = 1;
  uint64_t bytes = 16384ull << 20;
};

const FakeDevices& Devices();

}  // namespace xpool::vgpu::fake
