// The dlsym override: cudart (and anything else) that opens libcuda.so.1 / libnvidia-ml.so.1 and looks functions up
// by name gets our hook for every governed symbol the real library has, and the real answer for everything else.
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include <atomic>

#include "vgpu/internal/dl.h"
#include "vgpu/internal/real_table.h"
#include "vgpu/runtime.h"

namespace xpool::vgpu {
namespace {
std::atomic<DlsymFn> g_real_dlsym{nullptr};

struct link_map* LinkMapOf(const void* address) {
  Dl_info info;
  struct link_map* map = nullptr;
  if (dladdr1(address, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0) return nullptr;
  return map;
}
}  // namespace

DlsymFn RealDlsym() {
  DlsymFn fn = g_real_dlsym.load(std::memory_order_acquire);
  if (fn != nullptr) return fn;
  // dlvsym is not overridden, so this reaches libc's dlsym (GLIBC_2.34 on current glibc, 2.2.5 before).
  fn = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"));
  if (fn == nullptr) fn = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"));
  g_real_dlsym.store(fn, std::memory_order_release);
  return fn;
}

void* NextSymbolAfter(const void* caller, const char* name) {
  DlsymFn real = RealDlsym();
  if (real == nullptr) return nullptr;
  struct link_map* self = LinkMapOf(caller);
  if (self == nullptr) return real(RTLD_NEXT, name);
  // Search the objects loaded after the caller, in load order, accepting a definition only from the object itself
  // (dlsym on a handle also searches that object's dependencies).
  for (struct link_map* map = self->l_next; map != nullptr; map = map->l_next) {
    void* handle = dlopen(map->l_name[0] != '\0' ? map->l_name : nullptr, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* symbol = real(handle, name);
    dlclose(handle);
    if (symbol != nullptr && LinkMapOf(symbol) == map) return symbol;
  }
  return nullptr;
}

}  // namespace xpool::vgpu

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnonnull-compare"  // glibc declares `name` nonnull; callers still pass NULL
extern "C" XPOOL_VGPU_EXPORT void* dlsym(void* handle, const char* name) {
  using namespace xpool::vgpu;
  DlsymFn real = RealDlsym();
  if (real == nullptr || name == nullptr) return nullptr;
  void* found = handle == RTLD_NEXT ? NextSymbolAfter(__builtin_return_address(0), name) : real(handle, name);
  if (found == nullptr) return nullptr;  // the real library lacks it: so do we
  // A specific handle the application opened is the real library. If ours failed to load (the application found
  // the driver by a path we do not search), adopt the application's.
  const bool real_handle = handle != RTLD_DEFAULT && handle != RTLD_NEXT;
  if (name[0] == 'c' && name[1] == 'u') {
    int index = FindCudaFn(name);
    if (index >= 0 && index < kCudaHookCount) {
      EnsureCudaInit();
      if (real_handle && CudaRealIsMissing(index)) ResolveCuda(handle, real);
      return CudaHookAddress(index);
    }
  } else if (strncmp(name, "nvml", 4) == 0) {
    int index = FindNvmlFn(name);
    if (index >= 0 && index < kNvmlHookCount) {
      EnsureNvml();
      if (real_handle && NvmlRealIsMissing(index)) ResolveNvml(handle, real);
      return NvmlHookAddress(index);
    }
  }
  return found;
}
#pragma GCC diagnostic pop
