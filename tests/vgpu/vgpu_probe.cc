// A small CUDA program for the preload tests (vgpu_preload_test.cc runs it as a separate process with
// LD_PRELOAD=libxpool-vgpu.so and the fake driver on LD_LIBRARY_PATH). It reaches the driver API in one of three
// ways, as real programs do: `direct` (linked against libcuda.so.1; only in the vgpu_probe build), `dlsym`
// (dlopen + dlsym, as cudart does) and `procaddr` (cuGetProcAddress_v2, as CUDA 12/13 lazy loading does), then
// runs one scenario and exits 0 when every check of the scenario held (failures are printed as "FAIL ...").
//
//   vgpu_probe <mode> paths <limit MiB>        every allocation path stops at the limit and frees give it back
//   vgpu_probe <mode> contexts <limit MiB>     context footprint (XPOOL_VGPU_CONTEXT_RESERVE_MIB = limit/4)
//   vgpu_probe <mode> queries <limit MiB>      virtualised cuMemGetInfo / cuDeviceTotalMem / NVML
//   vgpu_probe <mode> passthrough <dev MiB>    no limits: physical numbers, physical OOM, launches reach the driver
//   vgpu_probe <mode> race <chunk MiB> <start ms> <hold ms>   allocate until OOM at a common start, print, hold
//   vgpu_probe <mode> hold <MiB>               allocate, print "held", wait to be killed
//   vgpu_probe <mode> alloc <MiB>              one allocation; exit 0 if it succeeded, 2 if not
//   vgpu_probe <mode> threads <limit MiB>     8 threads race to allocate; together they take exactly the limit
//   vgpu_probe <mode> fork <limit MiB>        a forked child charges the same task from its own slot
//   vgpu_probe <mode> nvmltotals             print "nvml <index> total <MiB>" for the first two NVML devices
//   vgpu_probe <mode> throttle <ms>            launch 1000-block grids for <ms>; print the launch count
//   vgpu_probe <mode> pools <limit MiB>        memory stream-ordered pools keep after frees stays charged
//   vgpu_probe <mode> graphs <limit MiB>       graph memory nodes are charged when a graph is instantiated
//   vgpu_probe <mode> ipcexport <MiB>          allocate, print "handle <hex>", wait to be killed
//   vgpu_probe <mode> ipcimport <limit MiB> <hex> <exported MiB>   opening another process's memory charges it
//   vgpu_probe <mode> vmm <limit MiB>          VMM memory stays charged while mapped, retained or exported
//   vgpu_probe_nolink missing                  no driver at all: hooks answer errors, the program survives
//   vgpu_probe_nolink nvmlonly <limit MiB>     NVML queries are virtualised without libcuda ever being loaded
#include "vgpu_probe.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

using namespace probe;

namespace {

bool InOurLibrary(void* fn) {
  Dl_info info;
  return fn != nullptr && dladdr(fn, &info) != 0 && info.dli_fname != nullptr &&
         strstr(info.dli_fname, "libxpool-vgpu") != nullptr;
}

template <typename Fn>
void Count(Api& api, Fn fn) {
  if (fn == nullptr) return;
  ++api.total;
  if (InOurLibrary(reinterpret_cast<void*>(fn))) ++api.ours;
}

// The base name cuGetProcAddress is asked for, and whether `name` is the variant it should answer with.
bool ProcAddressName(const char* name, std::string* base, bool* per_thread) {
  std::string n = name;
  *per_thread = n.size() > 5 && n.compare(n.size() - 5, 5, "_ptsz") == 0;
  if (*per_thread) {
    *base = n.substr(0, n.size() - 5);
    return true;
  }
  size_t v = n.rfind("_v");
  if (v != std::string::npos && v + 2 < n.size() && n.find_first_not_of("0123456789", v + 2) == std::string::npos) {
    *base = n.substr(0, v);
  } else {
    *base = n;
  }
  // Only the newest variant of a base gets the answer (the fake and the real driver return the newest).
  static const char* const kNames[] = {
#define PROBE_X(nm, params, args) #nm,
      XPOOL_CUDA_HOOKS(PROBE_X)
#undef PROBE_X
  };
  for (const char* other : kNames) {
    std::string o = other;
    if (o != n && o.compare(0, base->size(), *base) == 0 && o.size() > base->size() + 2 &&
        o.compare(base->size(), 2, "_v") == 0 && o > n && o.find("_ptsz") == std::string::npos) {
      return false;
    }
  }
  return true;
}

bool LoadApi(const char* mode, Api& api) {
  api.cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (strcmp(mode, "direct") == 0) {
#ifdef XPOOL_PROBE_LINKED
#define PROBE_X(name, params, args) api.name = &::name;
    XPOOL_CUDA_HOOKS(PROBE_X)
    PROBE_EXTRA_CUDA(PROBE_X)
#undef PROBE_X
#else
    printf("FAIL direct mode needs the linked probe\n");
    return false;
#endif
  } else if (strcmp(mode, "dlsym") == 0) {
    if (api.cuda == nullptr) return false;
#define PROBE_X(name, params, args) api.name = reinterpret_cast<decltype(api.name)>(dlsym(api.cuda, #name));
    XPOOL_CUDA_HOOKS(PROBE_X)
    PROBE_EXTRA_CUDA(PROBE_X)
#undef PROBE_X
  } else if (strcmp(mode, "procaddr") == 0) {
    if (api.cuda == nullptr) return false;
    auto get = reinterpret_cast<CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*)>(
        dlsym(api.cuda, "cuGetProcAddress_v2"));
    if (get == nullptr) return false;
    std::string base;
    bool per_thread = false;
#define PROBE_X(name, params, args)                                                                               \
  if (ProcAddressName(#name, &base, &per_thread)) {                                                               \
    void* fn = nullptr;                                                                                           \
    CUdriverProcAddressQueryResult status;                                                                        \
    if (get(base.c_str(), &fn, 13000, per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, &status) == \
        CUDA_SUCCESS) {                                                                                           \
      api.name = reinterpret_cast<decltype(api.name)>(fn);                                                        \
    }                                                                                                             \
  }
    XPOOL_CUDA_HOOKS(PROBE_X)
    PROBE_EXTRA_CUDA(PROBE_X)
#undef PROBE_X
  } else {
    printf("FAIL unknown mode %s\n", mode);
    return false;
  }
#define PROBE_X(name, params, args) Count(api, api.name);
  XPOOL_CUDA_HOOKS(PROBE_X)
#undef PROBE_X
  if (api.cuda != nullptr) {
    api.fake_launches = reinterpret_cast<uint64_t (*)()>(dlsym(api.cuda, "xpoolFakeLaunchCount"));
    api.fake_used = reinterpret_cast<uint64_t (*)(int)>(dlsym(api.cuda, "xpoolFakeUsedBytes"));
  }
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (nvml != nullptr) {
#define PROBE_X(name, params, args) api.name = reinterpret_cast<decltype(api.name)>(dlsym(nvml, #name));
    XPOOL_NVML_HOOKS(PROBE_X)
    XPOOL_NVML_REAL_ONLY(PROBE_X)
#undef PROBE_X
  }
  printf("hooks %d/%d\n", api.ours, api.total);
  return true;
}

}  // namespace

bool probe::Setup(Api& api, int dev) {
  CUcontext ctx = nullptr;
  CUresult rc = api.cuInit(0);
  if (rc != CUDA_SUCCESS) {
    printf("FAIL cuInit -> %d\n", rc);
    return false;
  }
  rc = api.cuDevicePrimaryCtxRetain(&ctx, dev);
  if (rc != CUDA_SUCCESS) {
    printf("FAIL cuDevicePrimaryCtxRetain -> %d\n", rc);
    return false;
  }
  return api.cuCtxSetCurrent(ctx) == CUDA_SUCCESS;
}

namespace {

struct Path {
  const char* name;
  bool (*available)(const Api&);
  CUresult (*alloc)(Api&, uint64_t bytes, uint64_t* handle);
  CUresult (*release)(Api&, uint64_t handle);
};

CUmemAllocationProp DeviceProp(int dev) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  return prop;
}

// Every allocation path, with the matching free. Sizes are chosen so that each allocation charges exactly `b`.
const Path kPaths[] = {
    {"cuMemAlloc_v2", [](const Api& a) -> bool { return a.cuMemAlloc_v2 && a.cuMemFree_v2; },
     [](Api& api, uint64_t b, uint64_t* h) {
       CUdeviceptr p = 0;
       CUresult rc = api.cuMemAlloc_v2(&p, b);
       *h = p;
       return rc;
     },
     [](Api& api, uint64_t h) { return api.cuMemFree_v2(h); }},
    {"cuMemAlloc", [](const Api& a) -> bool { return a.cuMemAlloc && a.cuMemFree; },
     [](Api& api, uint64_t b, uint64_t* h) {
       CUdeviceptr_v1 p = 0;
       CUresult rc = api.cuMemAlloc(&p, static_cast<unsigned int>(b));
       *h = p;
       return rc;
     },
     [](Api& api, uint64_t h) { return api.cuMemFree(static_cast<CUdeviceptr_v1>(h)); }},
    {"cuMemAllocPitch_v2", [](const Api& a) -> bool { return a.cuMemAllocPitch_v2 && a.cuMemFree_v2; },
     [](Api& api, uint64_t b, uint64_t* h) {
       CUdeviceptr p = 0;
       size_t pitch = 0;
       CUresult rc = api.cuMemAllocPitch_v2(&p, &pitch, b / 64, 64, 4);
       *h = p;
       return rc;
     },
     [](Api& api, uint64_t h) { return api.cuMemFree_v2(h); }},
    {"cuMemAllocPitch", [](const Api& a) -> bool { return a.cuMemAllocPitch && a.cuMemFree; },
     [](Api& api, uint64_t b, uint64_t* h) {
       CUdeviceptr_v1 p = 0;
       unsigned int pitch = 0;
       CUresult rc = api.cuMemAllocPitch(&p, &pitch, static_cast<unsigned int>(b / 64), 64, 4);
       *h = p;
       return rc;
     },
     [](Api& api, uint64_t h) { return api.cuMemFree(static_cast<CUdeviceptr_v1>(h)); }},
    {"cuMemAllocManaged", [](const Api& a) -> bool { return a.cuMemAllocManaged && a.cuMemFree_v2; },
     [](Api& api, uint64_t b, uint64_t* h) {
       CUdeviceptr p = 0;
       CUresult rc = api.cuMemAllocManaged(&p, b, CU_MEM_ATTACH_GLOBAL);
       *h = p;
       return rc;
     },
     [](Api& api, uint64_t h) { return api.cuMemFree_v2(h); }},
    {"cuMemAllocAsync", [](const Api& a) -> bool { return a.cuMemAllocAsync && a.cuMemFreeAsync; },
     [](Api& api, uint64_t b, uint64_t* h) {
       CUdeviceptr p = 0;
       CUresult rc = api.cuMemAllocAsync(&p, b, nullptr);
       *h = p;
       return rc;
     },
     [](Api& api, uint64_t h) { return api.cuMemFreeAsync(h, nullptr); }},
    {"cuMemAllocAsync_ptsz", [](const Api& a) -> bool { return a.cuMemAllocAsync_ptsz && a.cuMemFreeAsync_ptsz; },
     [](Api& api, uint64_t b, uint64_t* h) {
       CUdeviceptr p = 0;
       CUresult rc = api.cuMemAllocAsync_ptsz(&p, b, nullptr);
       *h = p;
       return rc;
     },
     [](Api& api, uint64_t h) { return api.cuMemFreeAsync_ptsz(h, nullptr); }},
    {"cuMemAllocFromPoolAsync", [](const Api& a) -> bool { return a.cuMemAllocFromPoolAsync && a.cuMemFreeAsync; },
     [](Api& api, uint64_t b, uint64_t* h) {
       CUdeviceptr p = 0;
       static CUmemoryPool pool = nullptr;
       if (pool == nullptr) {
         CUmemPoolProps props;
         memset(&props, 0, sizeof(props));
         props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
         props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
         props.location.id = 0;
         if (api.cuMemPoolCreate(&pool, &props) != CUDA_SUCCESS) return CUDA_ERROR_UNKNOWN;
       }
       CUresult rc = api.cuMemAllocFromPoolAsync(&p, b, pool, nullptr);
       *h = p;
       return rc;
     },
     [](Api& api, uint64_t h) { return api.cuMemFreeAsync(h, nullptr); }},
    {"cuMemCreate", [](const Api& a) -> bool { return a.cuMemCreate && a.cuMemRelease; },
     [](Api& api, uint64_t b, uint64_t* h) {
       CUmemGenericAllocationHandle handle = 0;
       CUmemAllocationProp prop = DeviceProp(0);
       CUresult rc = api.cuMemCreate(&handle, b, &prop, 0);
       *h = handle;
       return rc;
     },
     [](Api& api, uint64_t h) { return api.cuMemRelease(h); }},
    {"cuArrayCreate_v2", [](const Api& a) -> bool { return a.cuArrayCreate_v2 && a.cuArrayDestroy; },
     [](Api& api, uint64_t b, uint64_t* h) {
       CUDA_ARRAY_DESCRIPTOR d{b / 4, 1, CU_AD_FORMAT_FLOAT, 1};
       CUarray array = nullptr;
       CUresult rc = api.cuArrayCreate_v2(&array, &d);
       *h = reinterpret_cast<uint64_t>(array);
       return rc;
     },
     [](Api& api, uint64_t h) { return api.cuArrayDestroy(reinterpret_cast<CUarray>(h)); }},
    {"cuArrayCreate", [](const Api& a) -> bool { return a.cuArrayCreate && a.cuArrayDestroy; },
     [](Api& api, uint64_t b, uint64_t* h) {
       CUDA_ARRAY_DESCRIPTOR_v1 d{static_cast<unsigned int>(b / 1024), 256, CU_AD_FORMAT_UNSIGNED_INT8, 4};
       CUarray array = nullptr;
       CUresult rc = api.cuArrayCreate(&array, &d);
       *h = reinterpret_cast<uint64_t>(array);
       return rc;
     },
     [](Api& api, uint64_t h) { return api.cuArrayDestroy(reinterpret_cast<CUarray>(h)); }},
    {"cuArray3DCreate_v2", [](const Api& a) -> bool { return a.cuArray3DCreate_v2 && a.cuArrayDestroy; },
     [](Api& api, uint64_t b, uint64_t* h) {
       CUDA_ARRAY3D_DESCRIPTOR d{b / 32, 4, 4, CU_AD_FORMAT_HALF, 1, 0};
       CUarray array = nullptr;
       CUresult rc = api.cuArray3DCreate_v2(&array, &d);
       *h = reinterpret_cast<uint64_t>(array);
       return rc;
     },
     [](Api& api, uint64_t h) { return api.cuArrayDestroy(reinterpret_cast<CUarray>(h)); }},
    {"cuArray3DCreate", [](const Api& a) -> bool { return a.cuArray3DCreate && a.cuArrayDestroy; },
     [](Api& api, uint64_t b, uint64_t* h) {
       CUDA_ARRAY3D_DESCRIPTOR_v1 d{static_cast<unsigned int>(b / 16), 4, 4, CU_AD_FORMAT_SIGNED_INT8, 1, 0};
       CUarray array = nullptr;
       CUresult rc = api.cuArray3DCreate(&array, &d);
       *h = reinterpret_cast<uint64_t>(array);
       return rc;
     },
     [](Api& api, uint64_t h) { return api.cuArrayDestroy(reinterpret_cast<CUarray>(h)); }},
    {"cuMipmappedArrayCreate",
     [](const Api& a) -> bool { return a.cuMipmappedArrayCreate && a.cuMipmappedArrayDestroy; },
     [](Api& api, uint64_t b, uint64_t* h) {
       CUDA_ARRAY3D_DESCRIPTOR d{b / 16, 4, 4, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0};
       CUmipmappedArray array = nullptr;
       CUresult rc = api.cuMipmappedArrayCreate(&array, &d, 1);
       *h = reinterpret_cast<uint64_t>(array);
       return rc;
     },
     [](Api& api, uint64_t h) { return api.cuMipmappedArrayDestroy(reinterpret_cast<CUmipmappedArray>(h)); }},
};

}  // namespace

size_t probe::FreeBytes(Api& api) {
  size_t free = 0, total = 0;
  if (api.cuMemGetInfo_v2(&free, &total) != CUDA_SUCCESS) return 0;
  return free;
}

namespace {

int ScenarioPaths(Api& api, uint64_t limit_mib) {
  if (!Setup(api, 0)) return 1;
  const uint64_t limit = limit_mib * kMiB;
  const uint64_t chunk = limit / 4;
  int tested = 0;
  for (const Path& path : kPaths) {
    if (!path.available(api)) continue;
    ++tested;
    uint64_t handles[4] = {};
    for (int i = 0; i < 4; ++i) {
      CUresult rc = path.alloc(api, chunk, &handles[i]);
      CHECK(rc == CUDA_SUCCESS, "%s: allocation %d of 4 -> %d", path.name, i, rc);
    }
    uint64_t extra = 0;
    CUresult over = path.alloc(api, chunk, &extra);
    CHECK(over == CUDA_ERROR_OUT_OF_MEMORY, "%s: allocation past the limit -> %d", path.name, over);
    CUresult small = path.alloc(api, 64 * 1024, &extra);
    CHECK(small == CUDA_ERROR_OUT_OF_MEMORY, "%s: 64 KiB past the limit -> %d", path.name, small);
    CHECK(FreeBytes(api) == 0, "%s: free at the limit is %zu", path.name, FreeBytes(api));
    CUresult rc = path.release(api, handles[3]);
    CHECK(rc == CUDA_SUCCESS, "%s: free -> %d", path.name, rc);
    rc = path.alloc(api, chunk, &handles[3]);
    CHECK(rc == CUDA_SUCCESS, "%s: allocation after a free -> %d", path.name, rc);
    for (uint64_t h : handles) path.release(api, h);
    api.cuCtxSynchronize();  // stream-ordered pools give their memory back at a synchronisation
    CHECK(FreeBytes(api) == limit, "%s: free after releasing all is %zu, want %llu", path.name, FreeBytes(api),
          static_cast<unsigned long long>(limit));
    printf("path %s checked\n", path.name);
  }
  printf("paths tested %d\n", tested);
  return g_failures == 0 ? 0 : 1;
}

int ScenarioContexts(Api& api, uint64_t limit_mib) {
  if (!Setup(api, 0)) return 1;  // the primary context takes a quarter
  std::vector<CUcontext> contexts;
  for (int i = 0; i < 3; ++i) {
    CUcontext ctx = nullptr;
    CUresult rc = api.cuCtxCreate_v2(&ctx, 0, 0);
    CHECK(rc == CUDA_SUCCESS, "context %d -> %d", i, rc);
    contexts.push_back(ctx);
  }
  CUcontext ctx = nullptr;
  CUresult rc = api.cuCtxCreate_v2(&ctx, 0, 0);
  CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "context past the limit -> %d", rc);
  api.cuCtxSetCurrent(contexts[0]);
  CHECK(FreeBytes(api) == 0, "free with 4 contexts is %zu", FreeBytes(api));
  rc = api.cuCtxDestroy_v2(contexts[2]);
  CHECK(rc == CUDA_SUCCESS, "destroy -> %d", rc);
  CHECK(FreeBytes(api) == limit_mib * kMiB / 4, "free after a destroy is %zu", FreeBytes(api));
  CUdeviceptr p = 0;
  rc = api.cuMemAlloc_v2(&p, limit_mib * kMiB / 4 + 1);
  CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "allocation above what contexts left -> %d", rc);
  return g_failures == 0 ? 0 : 1;
}

int ScenarioQueries(Api& api, uint64_t limit_mib) {
  if (!Setup(api, 0)) return 1;
  const uint64_t limit = limit_mib * kMiB;
  CUdeviceptr p = 0;
  CHECK(api.cuMemAlloc_v2(&p, limit / 4) == CUDA_SUCCESS, "allocation");
  size_t free = 0, total = 0;
  CHECK(api.cuMemGetInfo_v2(&free, &total) == CUDA_SUCCESS, "cuMemGetInfo_v2");
  CHECK(total == limit && free == limit - limit / 4, "cuMemGetInfo_v2 free %zu total %zu", free, total);
  unsigned int free32 = 0, total32 = 0;
  if (api.cuMemGetInfo != nullptr) {
    CHECK(api.cuMemGetInfo(&free32, &total32) == CUDA_SUCCESS, "cuMemGetInfo");
    CHECK(total32 == limit && free32 == limit - limit / 4, "cuMemGetInfo free %u total %u", free32, total32);
  }
  size_t device_total = 0;
  CHECK(api.cuDeviceTotalMem_v2(&device_total, 0) == CUDA_SUCCESS && device_total == limit,
        "cuDeviceTotalMem_v2(0) = %zu", device_total);
  CHECK(api.cuDeviceTotalMem_v2(&device_total, 1) == CUDA_SUCCESS && device_total == 16384 * kMiB,
        "cuDeviceTotalMem_v2(1) (no limit) = %zu", device_total);
  CHECK(api.nvmlInit_v2 != nullptr && api.nvmlInit_v2() == NVML_SUCCESS, "nvmlInit_v2");
  nvmlDevice_t d0 = nullptr, d1 = nullptr;
  CHECK(api.nvmlDeviceGetHandleByIndex_v2(0, &d0) == NVML_SUCCESS, "handle 0");
  CHECK(api.nvmlDeviceGetHandleByIndex_v2(1, &d1) == NVML_SUCCESS, "handle 1");
  nvmlMemory_t mem;
  CHECK(api.nvmlDeviceGetMemoryInfo(d0, &mem) == NVML_SUCCESS, "nvml memory");
  CHECK(mem.total == limit && mem.used == limit / 4 && mem.free == limit - limit / 4,
        "nvml memory total %llu used %llu free %llu", mem.total, mem.used, mem.free);
  nvmlMemory_v2_t mem2;
  mem2.version = 0;
  CHECK(api.nvmlDeviceGetMemoryInfo_v2(d0, &mem2) == NVML_SUCCESS, "nvml memory v2");
  CHECK(mem2.total == limit && mem2.used == limit / 4, "nvml v2 total %llu used %llu", mem2.total, mem2.used);
  CHECK(api.nvmlDeviceGetMemoryInfo(d1, &mem) == NVML_SUCCESS && mem.total == 16384 * kMiB,
        "nvml memory of the unlimited device: total %llu", mem.total);
  unsigned int count = 0;
  nvmlReturn_t rc = api.nvmlDeviceGetComputeRunningProcesses_v3(d0, &count, nullptr);
  CHECK(rc == NVML_ERROR_INSUFFICIENT_SIZE && count == 1, "process count query -> %d, %u", rc, count);
  nvmlProcessInfo_t infos[8];
  count = 8;
  rc = api.nvmlDeviceGetComputeRunningProcesses_v3(d0, &count, infos);
  CHECK(rc == NVML_SUCCESS && count == 1 && infos[0].pid == static_cast<unsigned int>(getpid()) &&
            infos[0].usedGpuMemory == limit / 4,
        "process list -> %d, %u entries", rc, count);
  nvmlProcessInfo_v1_t infos1[8];
  count = 8;
  rc = api.nvmlDeviceGetComputeRunningProcesses(d0, &count, infos1);
  CHECK(rc == NVML_SUCCESS && count == 1 && infos1[0].usedGpuMemory == limit / 4, "v1 process list");
  return g_failures == 0 ? 0 : 1;
}

int ScenarioPassthrough(Api& api, uint64_t device_mib) {
  if (!Setup(api, 0)) return 1;
  const uint64_t physical = device_mib * kMiB;
  size_t free = 0, total = 0;
  CHECK(api.cuMemGetInfo_v2(&free, &total) == CUDA_SUCCESS && total == physical && free == physical,
        "free %zu total %zu", free, total);
  std::vector<CUdeviceptr> ptrs;
  for (int i = 0; i < 3; ++i) {
    CUdeviceptr p = 0;
    CHECK(api.cuMemAlloc_v2(&p, physical / 4) == CUDA_SUCCESS, "physical allocation %d", i);
    ptrs.push_back(p);
  }
  CUdeviceptr p = 0;
  CHECK(api.cuMemAlloc_v2(&p, physical / 2) == CUDA_ERROR_OUT_OF_MEMORY, "physical OOM passes through");
  CHECK(api.cuMemFree_v2(0xdead) == CUDA_ERROR_INVALID_VALUE, "driver errors pass through");
  // dlsym(RTLD_NEXT, ...) keeps its meaning (relative to the caller, not to the interposer).
  Dl_info next_info;
  void* next_malloc = dlsym(RTLD_NEXT, "malloc");
  CHECK(next_malloc != nullptr && dladdr(next_malloc, &next_info) != 0 && strstr(next_info.dli_fname, "libc.so"),
        "dlsym(RTLD_NEXT, malloc) -> %p", next_malloc);
  // From the executable, the next "dlsym" is the preloaded library's (a lookup relative to the interposer would
  // have skipped it and found libc's).
  if (InOurLibrary(reinterpret_cast<void*>(api.cuInit))) {
    CHECK(InOurLibrary(dlsym(RTLD_NEXT, "dlsym")), "dlsym(RTLD_NEXT, dlsym) is not the preloaded one");
  }
  for (CUdeviceptr q : ptrs) api.cuMemFree_v2(q);
  uint64_t before = api.fake_launches ? api.fake_launches() : 0;
  for (int i = 0; i < 1000; ++i) {
    api.cuLaunchKernel(reinterpret_cast<CUfunction>(0x1), 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr);
  }
  CHECK(api.cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr) == CUDA_ERROR_INVALID_HANDLE,
        "launch errors pass through");
  if (api.fake_launches != nullptr) {
    CHECK(api.fake_launches() - before == 1000, "launches reaching the driver: %llu",
          static_cast<unsigned long long>(api.fake_launches() - before));
  }
  return g_failures == 0 ? 0 : 1;
}

int ScenarioThreads(Api& api, uint64_t limit_mib) {
  if (!Setup(api, 0)) return 1;
  CUcontext ctx = nullptr;
  api.cuDevicePrimaryCtxRetain(&ctx, 0);
  std::atomic<uint64_t> total{0};
  std::vector<std::vector<CUdeviceptr>> held(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      api.cuCtxSetCurrent(ctx);
      CUdeviceptr p = 0;
      while (api.cuMemAlloc_v2(&p, 4 * kMiB) == CUDA_SUCCESS) {
        held[t].push_back(p);
        total += 4 * kMiB;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(total == limit_mib * kMiB, "threads took %llu bytes of %llu", static_cast<unsigned long long>(total.load()),
        static_cast<unsigned long long>(limit_mib * kMiB));
  threads.clear();
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      api.cuCtxSetCurrent(ctx);
      for (CUdeviceptr p : held[t]) api.cuMemFree_v2(p);
    });
  }
  for (auto& t : threads) t.join();
  CHECK(FreeBytes(api) == limit_mib * kMiB, "free after the threads released: %zu", FreeBytes(api));
  return g_failures == 0 ? 0 : 1;
}

int ScenarioFork(Api& api, uint64_t limit_mib) {
  if (!Setup(api, 0)) return 1;
  const uint64_t half = limit_mib * kMiB / 2;
  CUdeviceptr p = 0;
  CHECK(api.cuMemAlloc_v2(&p, half) == CUDA_SUCCESS, "parent allocation");
  pid_t child = fork();
  if (child == 0) {
    g_failures = 0;
    CUdeviceptr q = 0;
    CHECK(api.cuMemAlloc_v2(&q, half) == CUDA_SUCCESS, "child allocation of the other half");
    CHECK(api.cuMemAlloc_v2(&q, kMiB) == CUDA_ERROR_OUT_OF_MEMORY, "child past the task's limit");
    exit(g_failures == 0 ? 0 : 1);  // a normal exit detaches the child's slot
  }
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed (status %d)", status);
  CUdeviceptr r = 0;
  CHECK(api.cuMemAlloc_v2(&r, half) == CUDA_SUCCESS, "the child's half came back when it exited");
  CHECK(api.cuMemAlloc_v2(&r, kMiB) == CUDA_ERROR_OUT_OF_MEMORY, "parent past the limit");
  return g_failures == 0 ? 0 : 1;
}

int ScenarioNvmlTotals(Api& api) {
  if (api.nvmlInit_v2 == nullptr || api.nvmlInit_v2() != NVML_SUCCESS) return 1;
  for (unsigned int i = 0; i < 2; ++i) {
    nvmlDevice_t device = nullptr;
    nvmlMemory_t mem;
    if (api.nvmlDeviceGetHandleByIndex_v2(i, &device) != NVML_SUCCESS ||
        api.nvmlDeviceGetMemoryInfo(device, &mem) != NVML_SUCCESS) {
      return 1;
    }
    printf("nvml %u total %llu\n", i, mem.total >> 20);
  }
  return 0;
}

uint64_t NowMs() {
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  return static_cast<uint64_t>(tv.tv_sec) * 1000 + static_cast<uint64_t>(tv.tv_usec) / 1000;
}

int ScenarioRace(Api& api, uint64_t chunk_mib, uint64_t start_ms, uint64_t hold_ms) {
  if (!Setup(api, 0)) return 1;
  while (NowMs() < start_ms) usleep(200);
  uint64_t allocated = 0;
  for (;;) {
    CUdeviceptr p = 0;
    CUresult rc = api.cuMemAlloc_v2(&p, chunk_mib * kMiB);
    if (rc != CUDA_SUCCESS) {
      CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "race allocation -> %d", rc);
      break;
    }
    allocated += chunk_mib * kMiB;
  }
  printf("allocated %llu\n", static_cast<unsigned long long>(allocated));
  fflush(stdout);
  usleep(static_cast<useconds_t>(hold_ms * 1000));
  return g_failures == 0 ? 0 : 1;
}

int ScenarioHold(Api& api, uint64_t mib) {
  if (!Setup(api, 0)) return 1;
  CUdeviceptr p = 0;
  CUresult rc = api.cuMemAlloc_v2(&p, mib * kMiB);
  printf("held %d\n", rc);
  fflush(stdout);
  for (;;) pause();
}

int ScenarioAlloc(Api& api, uint64_t mib) {
  if (!Setup(api, 0)) return 1;
  CUdeviceptr p = 0;
  CUresult rc = api.cuMemAlloc_v2(&p, mib * kMiB);
  printf("alloc %d\n", rc);
  return rc == CUDA_SUCCESS ? 0 : 2;
}

int ScenarioThrottle(Api& api, uint64_t ms) {
  if (!Setup(api, 0)) return 1;
  const uint64_t start = NowMs();
  const uint64_t end = start + ms;
  const uint64_t last_third = end - ms / 3;
  uint64_t launches = 0, late_launches = 0;
  for (uint64_t now = start; now < end; now = NowMs()) {
    api.cuLaunchKernel(reinterpret_cast<CUfunction>(0x1), 1000, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr);
    ++launches;
    if (now >= last_third) ++late_launches;
  }
  printf("launches %llu\n", static_cast<unsigned long long>(launches));
  // Blocks per second over the last third (the controller has converged by then).
  printf("late_rate %.0f\n", late_launches * 1000.0 / (static_cast<double>(ms) / 3.0 / 1000.0));
  return 0;
}

// No driver library at all: the program resolves the CUDA and NVML entry points it was given by the preloaded
// library (as a program linked against a stub would) and must get error codes, not a crash.
int ScenarioMissing() {
  auto get = [](const char* name) { return dlsym(RTLD_DEFAULT, name); };
  auto init = reinterpret_cast<CUresult (*)(unsigned int)>(get("cuInit"));
  auto alloc = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(get("cuMemAlloc_v2"));
  auto info = reinterpret_cast<CUresult (*)(size_t*, size_t*)>(get("cuMemGetInfo_v2"));
  auto launch = reinterpret_cast<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                              unsigned, CUstream, void**, void**)>(get("cuLaunchKernel"));
  auto proc = reinterpret_cast<CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*)>(
      get("cuGetProcAddress_v2"));
  auto nvml_mem = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>(get("nvmlDeviceGetMemoryInfo"));
  if (init == nullptr || alloc == nullptr || info == nullptr || launch == nullptr || proc == nullptr ||
      nvml_mem == nullptr) {
    printf("FAIL the preloaded library does not export the hooks\n");
    return 1;
  }
  CHECK(init(0) == CUDA_ERROR_NOT_INITIALIZED, "cuInit");
  CUdeviceptr p = 0;
  CHECK(alloc(&p, 1 << 20) == CUDA_ERROR_NOT_INITIALIZED, "cuMemAlloc_v2");
  size_t free = 0, total = 0;
  CHECK(info(&free, &total) == CUDA_ERROR_NOT_INITIALIZED, "cuMemGetInfo_v2");
  CHECK(launch(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr) == CUDA_ERROR_NOT_INITIALIZED, "launch");
  void* fn = nullptr;
  CHECK(proc("cuMemAlloc", &fn, 13000, 0, nullptr) == CUDA_ERROR_NOT_INITIALIZED, "cuGetProcAddress_v2");
  nvmlMemory_t mem;
  CHECK(nvml_mem(nullptr, &mem) == NVML_ERROR_UNINITIALIZED, "nvmlDeviceGetMemoryInfo");
  CHECK(dlsym(RTLD_DEFAULT, "surely_not_a_symbol") == nullptr, "dlsym of an unknown symbol");
  printf("survived\n");
  return g_failures == 0 ? 0 : 1;
}

int ScenarioNvmlOnly(uint64_t limit_mib) {
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (nvml == nullptr) {
    printf("FAIL no NVML\n");
    return 1;
  }
  auto init = reinterpret_cast<nvmlReturn_t (*)()>(dlsym(nvml, "nvmlInit_v2"));
  auto handle =
      reinterpret_cast<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>(dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2"));
  auto info = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>(dlsym(nvml, "nvmlDeviceGetMemoryInfo"));
  nvmlDevice_t device = nullptr;
  nvmlMemory_t mem;
  CHECK(init && handle && info && init() == NVML_SUCCESS && handle(0, &device) == NVML_SUCCESS &&
            info(device, &mem) == NVML_SUCCESS,
        "NVML calls");
  CHECK(mem.total == limit_mib * kMiB, "virtualised total %llu", mem.total);
  CHECK(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == nullptr, "libcuda.so.1 was loaded into an NVML-only process");
  return g_failures == 0 ? 0 : 1;
}

uint64_t Arg(int argc, char** argv, int i) { return i < argc ? strtoull(argv[i], nullptr, 10) : 0; }

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc >= 2 && strcmp(argv[1], "missing") == 0) return ScenarioMissing();
  if (argc >= 3 && strcmp(argv[1], "nvmlonly") == 0) return ScenarioNvmlOnly(strtoull(argv[2], nullptr, 10));
  if (argc < 3) {
    fprintf(stderr, "usage: %s direct|dlsym|procaddr SCENARIO [ARGS]\n", argv[0]);
    return 64;
  }
  Api api;
  if (!LoadApi(argv[1], api)) {
    printf("FAIL cannot load the driver API in mode %s\n", argv[1]);
    return 1;
  }
  const char* scenario = argv[2];
  if (strcmp(scenario, "paths") == 0) return ScenarioPaths(api, Arg(argc, argv, 3));
  if (strcmp(scenario, "contexts") == 0) return ScenarioContexts(api, Arg(argc, argv, 3));
  if (strcmp(scenario, "queries") == 0) return ScenarioQueries(api, Arg(argc, argv, 3));
  if (strcmp(scenario, "passthrough") == 0) return ScenarioPassthrough(api, Arg(argc, argv, 3));
  if (strcmp(scenario, "race") == 0) {
    return ScenarioRace(api, Arg(argc, argv, 3), Arg(argc, argv, 4), Arg(argc, argv, 5));
  }
  if (strcmp(scenario, "hold") == 0) return ScenarioHold(api, Arg(argc, argv, 3));
  if (strcmp(scenario, "alloc") == 0) return ScenarioAlloc(api, Arg(argc, argv, 3));
  if (strcmp(scenario, "nvmltotals") == 0) return ScenarioNvmlTotals(api);
  if (strcmp(scenario, "fork") == 0) return ScenarioFork(api, Arg(argc, argv, 3));
  if (strcmp(scenario, "threads") == 0) return ScenarioThreads(api, Arg(argc, argv, 3));
  if (strcmp(scenario, "throttle") == 0) return ScenarioThrottle(api, Arg(argc, argv, 3));
  if (strcmp(scenario, "pools") == 0) return ScenarioPools(api, Arg(argc, argv, 3));
  if (strcmp(scenario, "graphs") == 0) return ScenarioGraphs(api, Arg(argc, argv, 3));
  if (strcmp(scenario, "ipcexport") == 0) return ScenarioIpcExport(api, Arg(argc, argv, 3));
  if (strcmp(scenario, "ipcimport") == 0 && argc >= 6) {
    return ScenarioIpcImport(api, Arg(argc, argv, 3), argv[4], Arg(argc, argv, 5));
  }
  if (strcmp(scenario, "vmm") == 0) return ScenarioVmm(api, Arg(argc, argv, 3));
  fprintf(stderr, "unknown scenario %s\n", scenario);
  return 64;
}
