// Generated from vgpu/hook_list.h: the symbol enums, the name tables, the slots holding the real driver's
// functions, the typed callers of those functions (real::name(args)), and the exported hook prototypes.
//
// A slot is never NULL: it starts at a stub that returns CUDA_ERROR_NOT_INITIALIZED / NVML_ERROR_UNINITIALIZED
// and is replaced by the real function when the real library provides it. Slots are atomics (relaxed loads), so
// resolving them while another thread calls through them is well defined. Owned by the process (globals of the
// library); thread-safe.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <atomic>

#include "vgpu/cuda_abi.h"
#include "vgpu/hook_list.h"

#define XPOOL_VGPU_EXPORT __attribute__((visibility("default")))

// The exported hooks (defined in hooks_cuda.cc / hooks_nvml.cc).
extern "C" {
#define XPOOL_X(name, params, args) XPOOL_VGPU_EXPORT CUresult name params;
XPOOL_CUDA_HOOKS(XPOOL_X)
#undef XPOOL_X
#define XPOOL_X(name, params, args) XPOOL_VGPU_EXPORT nvmlReturn_t name params;
XPOOL_NVML_HOOKS(XPOOL_X)
#undef XPOOL_X
}

namespace xpool::vgpu {

// Enumerators carry the exact symbol names (not kCamelCase) so the list reads as the API it mirrors.
enum class CudaFn : int {
#define XPOOL_X(name, params, args) name,
  XPOOL_CUDA_HOOKS(XPOOL_X) XPOOL_CUDA_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
      kCount
};
enum class NvmlFn : int {
#define XPOOL_X(name, params, args) name,
  XPOOL_NVML_HOOKS(XPOOL_X) XPOOL_NVML_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
      kCount
};

#define XPOOL_X(name, params, args) +1
inline constexpr int kCudaHookCount = 0 XPOOL_CUDA_HOOKS(XPOOL_X);
inline constexpr int kNvmlHookCount = 0 XPOOL_NVML_HOOKS(XPOOL_X);
#undef XPOOL_X
inline constexpr int kCudaFnCount = static_cast<int>(CudaFn::kCount);
inline constexpr int kNvmlFnCount = static_cast<int>(NvmlFn::kCount);

namespace pfn {
#define XPOOL_X(name, params, args) using name = CUresult(*) params;
XPOOL_CUDA_HOOKS(XPOOL_X)
XPOOL_CUDA_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
#define XPOOL_X(name, params, args) using name = nvmlReturn_t(*) params;
XPOOL_NVML_HOOKS(XPOOL_X)
XPOOL_NVML_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
}  // namespace pfn

// The stubs a slot holds while its real symbol is missing.
namespace missing {
#define XPOOL_X(name, params, args) CUresult name params;
XPOOL_CUDA_HOOKS(XPOOL_X)
XPOOL_CUDA_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
#define XPOOL_X(name, params, args) nvmlReturn_t name params;
XPOOL_NVML_HOOKS(XPOOL_X)
XPOOL_NVML_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
}  // namespace missing

// The slots. Constant-initialised (no static-initialisation-order hazard when a hook runs before our
// constructors).
struct CudaRealTable {
#define XPOOL_X(name, params, args) std::atomic<pfn::name> name{&missing::name};
  XPOOL_CUDA_HOOKS(XPOOL_X)
  XPOOL_CUDA_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
};
struct NvmlRealTable {
#define XPOOL_X(name, params, args) std::atomic<pfn::name> name{&missing::name};
  XPOOL_NVML_HOOKS(XPOOL_X)
  XPOOL_NVML_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
};
extern CudaRealTable g_cuda_real;
extern NvmlRealTable g_nvml_real;

// Typed callers of the real functions.
namespace real {
#define XPOOL_X(name, params, args) \
  inline CUresult name params { return g_cuda_real.name.load(std::memory_order_relaxed) args; }
XPOOL_CUDA_HOOKS(XPOOL_X)
XPOOL_CUDA_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
#define XPOOL_X(name, params, args) \
  inline nvmlReturn_t name params { return g_nvml_real.name.load(std::memory_order_relaxed) args; }
XPOOL_NVML_HOOKS(XPOOL_X)
XPOOL_NVML_REAL_ONLY(XPOOL_X)
#undef XPOOL_X
}  // namespace real

const char* CudaFnName(CudaFn fn);
const char* NvmlFnName(NvmlFn fn);
// Index of a symbol by exact name, or -1. Linear over a few dozen names; used off the hot path only.
int FindCudaFn(const char* name);
int FindNvmlFn(const char* name);

// Our exported hook for a governed symbol (index < k*HookCount), else nullptr.
void* CudaHookAddress(int index);
void* NvmlHookAddress(int index);

// The real function currently in a slot (the stub when missing), and whether it is a stub.
void* LoadCudaReal(int index);
bool CudaRealIsMissing(int index);
bool NvmlRealIsMissing(int index);
void StoreCudaReal(int index, void* fn);
void StoreNvmlReal(int index, void* fn);

// Fills every slot that `lookup(handle, name)` resolves; returns how many resolved.
using SymbolLookup = void* (*)(void* handle, const char* name);
int ResolveCuda(void* handle, SymbolLookup lookup);
int ResolveNvml(void* handle, SymbolLookup lookup);

}  // namespace xpool::vgpu
