#pragma once
// The bytes a CUDA array takes, by its element format: what the interposer charges for cuArrayCreate /
// cuArray3DCreate / cuMipmappedArrayCreate (hooks_cuda.cc) and what the fake driver allocates for them
// (fake_driver/fake_cuda.cc), one rule for both. Header-only; stateless; no exceptions.
#include <stdint.h>

#include "vgpu/cuda_abi.h"

namespace xpool::vgpu::internal {

// Bytes per channel of one element.
inline uint64_t ArrayFormatBytes(CUarray_format format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4;
    default:
      return 1;  // 8-bit and packed/compressed formats: at least one byte per element
  }
}

// A width x height x depth array (0 height or depth: 1) of `channels` channels (0: 1).
inline uint64_t ArrayBytes(uint64_t width, uint64_t height, uint64_t depth, CUarray_format format, unsigned channels) {
  const uint64_t elements = width * (height == 0 ? 1 : height) * (depth == 0 ? 1 : depth);
  return elements * ArrayFormatBytes(format) * (channels == 0 ? 1 : channels);
}

}  // namespace xpool::vgpu::internal
