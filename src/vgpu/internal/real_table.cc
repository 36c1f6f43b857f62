// Generated tables of internal/real_table.h. Everything here expands vgpu/hook_list.h.
#include "vgpu/internal/real_table.h"

#include <string.h>

namespace xpool::vgpu {

CudaRealTable g_cuda_real;
NvmlRealTable g_nvml_real;

namespace missing {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define XPOOL_X(name, params, args) \
  CUresult name params { return CUDA_ERROR_NOT_INITIALIZED; }
XPOOL_CUDA_HOOKS(XPOOL_X)
XPOOL_CUDA_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
#define XPOOL_X(name, params, args) \
  nvmlReturn_t name params { return NVML_ERROR_UNINITIALIZED; }
XPOOL_NVML_HOOKS(XPOOL_X)
XPOOL_NVML_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
#pragma GCC diagnostic pop
}  // namespace missing

namespace {
constexpr const char* kCudaNames[] = {
#define XPOOL_X(name, params, args) #name,
    XPOOL_CUDA_HOOKS(XPOOL_X) XPOOL_CUDA_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
};
constexpr const char* kNvmlNames[] = {
#define XPOOL_X(name, params, args) #name,
    XPOOL_NVML_HOOKS(XPOOL_X) XPOOL_NVML_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
};
static_assert(sizeof(kCudaNames) / sizeof(kCudaNames[0]) == kCudaFnCount);
static_assert(sizeof(kNvmlNames) / sizeof(kNvmlNames[0]) == kNvmlFnCount);

template <typename Fn>
void* AsVoid(Fn fn) {
  return reinterpret_cast<void*>(fn);
}
}  // namespace

const char* CudaFnName(CudaFn fn) { return kCudaNames[static_cast<int>(fn)]; }
const char* NvmlFnName(NvmlFn fn) { return kNvmlNames[static_cast<int>(fn)]; }

int FindCudaFn(const char* name) {
  for (int i = 0; i < kCudaFnCount; ++i) {
    if (strcmp(kCudaNames[i], name) == 0) return i;
  }
  return -1;
}

int FindNvmlFn(const char* name) {
  for (int i = 0; i < kNvmlFnCount; ++i) {
    if (strcmp(kNvmlNames[i], name) == 0) return i;
  }
  return -1;
}

void* CudaHookAddress(int index) {
  switch (static_cast<CudaFn>(index)) {
#define XPOOL_X(name, params, args) \
  case CudaFn::name:                \
    return AsVoid(&::name);
    XPOOL_CUDA_HOOKS(XPOOL_X)
#undef XPOOL_X
    default:
      return nullptr;
  }
}

void* NvmlHookAddress(int index) {
  switch (static_cast<NvmlFn>(index)) {
#define XPOOL_X(name, params, args) \
  case NvmlFn::name:                \
    return AsVoid(&::name);
    XPOOL_NVML_HOOKS(XPOOL_X)
#undef XPOOL_X
    default:
      return nullptr;
  }
}

void* LoadCudaReal(int index) {
  switch (static_cast<CudaFn>(index)) {
#define XPOOL_X(name, params, args) \
  case CudaFn::name:                \
    return AsVoid(g_cuda_real.name.load(std::memory_order_relaxed));
    XPOOL_CUDA_HOOKS(XPOOL_X)
    XPOOL_CUDA_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
    default:
      return nullptr;
  }
}

bool CudaRealIsMissing(int index) {
  switch (static_cast<CudaFn>(index)) {
#define XPOOL_X(name, params, args) \
  case CudaFn::name:                \
    return g_cuda_real.name.load(std::memory_order_relaxed) == &missing::name;
    XPOOL_CUDA_HOOKS(XPOOL_X)
    XPOOL_CUDA_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
    default:
      return true;
  }
}

bool NvmlRealIsMissing(int index) {
  switch (static_cast<NvmlFn>(index)) {
#define XPOOL_X(name, params, args) \
  case NvmlFn::name:                \
    return g_nvml_real.name.load(std::memory_order_relaxed) == &missing::name;
    XPOOL_NVML_HOOKS(XPOOL_X)
    XPOOL_NVML_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
    default:
      return true;
  }
}

void StoreCudaReal(int index, void* fn) {
  if (fn == nullptr) return;
  switch (static_cast<CudaFn>(index)) {
#define XPOOL_X(name, params, args)                                                     \
  case CudaFn::name:                                                                    \
    g_cuda_real.name.store(reinterpret_cast<pfn::name>(fn), std::memory_order_relaxed); \
    break;
    XPOOL_CUDA_HOOKS(XPOOL_X)
    XPOOL_CUDA_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
    default:
      break;
  }
}

void StoreNvmlReal(int index, void* fn) {
  if (fn == nullptr) return;
  switch (static_cast<NvmlFn>(index)) {
#define XPOOL_X(name, params, args)                                                     \
  case NvmlFn::name:                                                                    \
    g_nvml_real.name.store(reinterpret_cast<pfn::name>(fn), std::memory_order_relaxed); \
    break;
    XPOOL_NVML_HOOKS(XPOOL_X)
    XPOOL_NVML_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
    default:
      break;
  }
}

int ResolveCuda(void* handle, SymbolLookup lookup) {
  int found = 0;
  for (int i = 0; i < kCudaFnCount; ++i) {
    void* fn = lookup(handle, kCudaNames[i]);
    // Never store one of our own hooks as "real" (a real library that re-exports through us would loop).
    if (fn != nullptr && fn != CudaHookAddress(i)) {
      StoreCudaReal(i, fn);
      ++found;
    }
  }
  return found;
}

int ResolveNvml(void* handle, SymbolLookup lookup) {
  int found = 0;
  for (int i = 0; i < kNvmlFnCount; ++i) {
    void* fn = lookup(handle, kNvmlNames[i]);
    if (fn != nullptr && fn != NvmlHookAddress(i)) {
      StoreNvmlReal(i, fn);
      ++found;
    }
  }
  return found;
}

}  // namespace xpool::vgpu
