/* A fake libnvidia-ml for the agent's tests: exports the NVML functions the agent resolves, with a small
 * machine described by environment variables read at nvmlInit_v2:
 *   FAKE_NVML_INIT_RC   return code of nvmlInit_v2 (default 0)
 *   FAKE_NVML_COUNT     device count (default 4, at most 16)
 *   FAKE_NVML_LOST      index of a device whose memory query says GPU_IS_LOST (default none)
 *   FAKE_NVML_NO_NUMA   1: nvmlDeviceGetNumaNodeId is NOT_SUPPORTED (the agent then reads sysfs)
 *   FAKE_NVML_USED_MIB  memory in use on device i: (i + 1) × this many MiB (default 0)
 *   FAKE_NVML_GPU_UTIL  utilisation of device i: this + i percent (default: nvmlDeviceGetUtilizationRates absent
 *                       in effect, it answers NOT_SUPPORTED)
 *   FAKE_NVML_PROC_PID, FAKE_NVML_PROC_MIB  one compute process on every device: that pid using that many MiB
 *                       (default: no processes)
 * Devices: 0,1 "NVIDIA A100-SXM4-80GB" (80 GiB), the rest "NVIDIA T4" (16 GiB); uuid GPU-fake-<i>; PCI bus id
 * 00000000:<i+1 in hex>:00.0; NUMA node i/2. NVLink: device pairs (0,1) with 2 lanes, (2,3) with 4 lanes, plus
 * one disabled link each. PCIe: same pair → SINGLE switch, same parity → HOSTBRIDGE, else SYSTEM.
 * MIG on devices 0 and 1 (the A100 80GB's profiles and placements, NVIDIA's MIG user guide), see "MIG" below:
 *   FAKE_NVML_MIG_STATE   file holding MIG modes and instances across nvmlInit/nvmlShutdown and processes (the
 *                         real driver keeps them); unset = in this process only
 *   FAKE_NVML_MIG_DENIED  1: nvmlDeviceSetMigMode answers NO_PERMISSION (an unprivileged caller)
 * Built without sanitizers; plain C; not thread-safe (tests call it from one thread). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/internal/nvml_api.h"

#define FAKE_MAX 16
struct xpool_nvmlDevice_st {
  int index;
  int mig_slot; /* a MIG device handle: the GPU instance's slot (see MIG); -1 for a whole GPU */
};
static struct xpool_nvmlDevice_st g_devices[FAKE_MAX];
static int g_count = 0;
static int g_lost = -1;
static int g_no_numa = 0;
static int g_initialised = 0;
static int g_used_mib = 0;
static int g_util = -1;
static int g_proc_pid = 0;
static int g_proc_mib = 0;

static int EnvInt(const char* name, int fallback) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

static int Valid(xpool_nvmlDevice_t d) { return g_initialised && d && d >= g_devices && d < g_devices + g_count; }

/* MIG device handles and their queries, defined with the rest of MIG below. */
static int ValidMig(xpool_nvmlDevice_t d);
static void MigUuid(xpool_nvmlDevice_t d, char* buf, unsigned int len);
static void MigName(xpool_nvmlDevice_t d, char* buf, unsigned int len);
static unsigned long long MigBytes(xpool_nvmlDevice_t d);
static void MigLoad(void);

xpool_nvmlReturn_t nvmlInit_v2(void) {
  int rc = EnvInt("FAKE_NVML_INIT_RC", 0);
  if (rc != 0) return rc;
  g_count = EnvInt("FAKE_NVML_COUNT", 4);
  if (g_count > FAKE_MAX) g_count = FAKE_MAX;
  g_lost = EnvInt("FAKE_NVML_LOST", -1);
  g_no_numa = EnvInt("FAKE_NVML_NO_NUMA", 0);
  g_used_mib = EnvInt("FAKE_NVML_USED_MIB", 0);
  g_util = EnvInt("FAKE_NVML_GPU_UTIL", -1);
  g_proc_pid = EnvInt("FAKE_NVML_PROC_PID", 0);
  g_proc_mib = EnvInt("FAKE_NVML_PROC_MIB", 0);
  for (int i = 0; i < g_count; ++i) {
    g_devices[i].index = i;
    g_devices[i].mig_slot = -1;
  }
  g_initialised = 1;
  MigLoad();
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlShutdown(void) {
  g_initialised = 0;
  return XPOOL_NVML_SUCCESS;
}

const char* nvmlErrorString(xpool_nvmlReturn_t rc) {
  switch (rc) {
    case XPOOL_NVML_SUCCESS:
      return "Success";
    case XPOOL_NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case XPOOL_NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case XPOOL_NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case XPOOL_NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case XPOOL_NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case XPOOL_NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case XPOOL_NVML_ERROR_IN_USE:
      return "In use by another client";
    case XPOOL_NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Insufficient resources";
    default:
      return "Unknown Error";
  }
}

xpool_nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!g_initialised) return 1; /* NVML_ERROR_UNINITIALIZED */
  *count = (unsigned int)g_count;
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, xpool_nvmlDevice_t* device) {
  if (!g_initialised || index >= (unsigned int)g_count) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  *device = &g_devices[index];
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetUUID(xpool_nvmlDevice_t d, char* buf, unsigned int len) {
  if (ValidMig(d)) {
    MigUuid(d, buf, len);
    return XPOOL_NVML_SUCCESS;
  }
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  snprintf(buf, len, "GPU-fake-%04d", d->index);
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetName(xpool_nvmlDevice_t d, char* buf, unsigned int len) {
  if (ValidMig(d)) {
    MigName(d, buf, len);
    return XPOOL_NVML_SUCCESS;
  }
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  snprintf(buf, len, "%s", d->index < 2 ? "NVIDIA A100-SXM4-80GB" : "NVIDIA T4");
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetMemoryInfo(xpool_nvmlDevice_t d, xpool_nvmlMemory_t* m) {
  if (ValidMig(d)) {
    m->total = MigBytes(d);
    m->used = 0;
    m->free = m->total;
    return XPOOL_NVML_SUCCESS;
  }
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if (d->index == g_lost) return XPOOL_NVML_ERROR_GPU_IS_LOST;
  m->total = (d->index < 2 ? 80ULL : 16ULL) << 30;
  m->used = (unsigned long long)(d->index + 1) * (unsigned long long)g_used_mib << 20;
  m->free = m->total - m->used;
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetNumaNodeId(xpool_nvmlDevice_t d, unsigned int* node) {
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if (g_no_numa) return XPOOL_NVML_ERROR_NOT_SUPPORTED;
  *node = (unsigned int)(d->index / 2);
  return XPOOL_NVML_SUCCESS;
}

static void FillPci(int index, xpool_nvmlPciInfo_t* pci) {
  memset(pci, 0, sizeof *pci);
  pci->bus = (unsigned int)(index + 1);
  snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", index + 1);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", index + 1);
}

xpool_nvmlReturn_t nvmlDeviceGetPciInfo_v3(xpool_nvmlDevice_t d, xpool_nvmlPciInfo_t* pci) {
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  FillPci(d->index, pci);
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(xpool_nvmlDevice_t a, xpool_nvmlDevice_t b, int* level) {
  if (!Valid(a) || !Valid(b)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if (a->index / 2 == b->index / 2) {
    *level = XPOOL_NVML_TOPOLOGY_SINGLE;
  } else if (a->index % 2 == b->index % 2) {
    *level = XPOOL_NVML_TOPOLOGY_HOSTBRIDGE;
  } else {
    *level = XPOOL_NVML_TOPOLOGY_SYSTEM;
  }
  return XPOOL_NVML_SUCCESS;
}

/* Lanes to the pair partner: 2 for devices 0,1; 4 for 2,3; none beyond. One more link exists, disabled. */
static int Lanes(int index) { return index < 2 ? 2 : (index < 4 ? 4 : 0); }

xpool_nvmlReturn_t nvmlDeviceGetNvLinkState(xpool_nvmlDevice_t d, unsigned int link, int* active) {
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  int lanes = Lanes(d->index);
  if ((int)link > lanes) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  *active = (int)link < lanes ? XPOOL_NVML_FEATURE_ENABLED : XPOOL_NVML_FEATURE_DISABLED;
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(xpool_nvmlDevice_t d, unsigned int link,
                                                       xpool_nvmlPciInfo_t* pci) {
  if (!Valid(d) || (int)link >= Lanes(d->index)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  int partner = d->index ^ 1;
  if (partner >= g_count) return XPOOL_NVML_ERROR_NOT_SUPPORTED;
  FillPci(partner, pci);
  return XPOOL_NVML_SUCCESS;
}

/* ---- MIG ----
 * Devices 0 and 1 are MIG-capable A100 80GB GPUs: 8 memory slices, 7 compute slices. A GPU instance is created at a
 * placement (start, size in memory slices) that its profile allows; the driver refuses a start the profile does
 * not allow or a size other than the profile's (INVALID_ARGUMENT), an overlap, a profile past its instance count or
 * compute slices past 7 (INSUFFICIENT_RESOURCES), anything while MIG mode is off (NOT_SUPPORTED), destroying a GPU
 * instance that still has a compute instance and turning MIG off while instances exist (IN_USE). A GPU instance
 * holds at most one compute instance here, the full-size one. MIG device handles enumerate the GPU instances that
 * have a compute instance, by start. */
#define FAKE_MIG_SLOTS 8
#define FAKE_MIG_MEMORY_SLICES 8
#define FAKE_MIG_COMPUTE_SLICES 7

struct FakeGiProfile {
  int supported;
  unsigned int id; /* the profile id create and list take */
  unsigned int slices;
  unsigned int size;
  unsigned int max;
  unsigned long long memory_mb;
  unsigned int starts; /* bit s: may start at memory slice s */
  const char* name;
};
/* By NVML_GPU_INSTANCE_PROFILE_* selector. */
static const struct FakeGiProfile kA100Profiles[XPOOL_NVML_GPU_INSTANCE_PROFILE_COUNT] = {
    [XPOOL_NVML_GPU_INSTANCE_PROFILE_1_SLICE] = {1, 19, 1, 1, 7, 9856, 0x7F, "1g.10gb"},
    [XPOOL_NVML_GPU_INSTANCE_PROFILE_2_SLICE] = {1, 14, 2, 2, 3, 19968, 0x15, "2g.20gb"},
    [XPOOL_NVML_GPU_INSTANCE_PROFILE_3_SLICE] = {1, 9, 3, 4, 2, 40192, 0x11, "3g.40gb"},
    [XPOOL_NVML_GPU_INSTANCE_PROFILE_4_SLICE] = {1, 5, 4, 4, 1, 40192, 0x01, "4g.40gb"},
    [XPOOL_NVML_GPU_INSTANCE_PROFILE_7_SLICE] = {1, 0, 7, 8, 1, 80384, 0x01, "7g.80gb"},
    [XPOOL_NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1] = {1, 20, 1, 1, 1, 9856, 0x7F, "1g.10gb+me"},
    [XPOOL_NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2] = {1, 15, 1, 2, 4, 19968, 0x55, "1g.20gb"},
};

struct FakeGi {
  int used;
  unsigned int id;
  int selector;
  unsigned int start;
  int has_ci;
};
struct xpool_nvmlGpuInstance_st {
  int gpu;
  int slot;
};
struct xpool_nvmlComputeInstance_st {
  int gpu;
  int slot;
};
static int g_mig_mode[FAKE_MAX];
static unsigned int g_next_gi_id[FAKE_MAX];
static struct FakeGi g_gis[FAKE_MAX][FAKE_MIG_SLOTS];
static struct xpool_nvmlGpuInstance_st g_gi_handles[FAKE_MAX][FAKE_MIG_SLOTS];
static struct xpool_nvmlComputeInstance_st g_ci_handles[FAKE_MAX][FAKE_MIG_SLOTS];
static struct xpool_nvmlDevice_st g_mig_devices[FAKE_MAX][FAKE_MIG_SLOTS];

static int MigCapable(xpool_nvmlDevice_t d) { return Valid(d) && d->index < 2; }

static const struct FakeGiProfile* ProfileById(unsigned int id) {
  for (int s = 0; s < XPOOL_NVML_GPU_INSTANCE_PROFILE_COUNT; ++s) {
    if (kA100Profiles[s].supported && kA100Profiles[s].id == id) return &kA100Profiles[s];
  }
  return NULL;
}

static void MigSave(void) {
  const char* path = getenv("FAKE_NVML_MIG_STATE");
  if (!path || !*path) return;
  FILE* f = fopen(path, "w");
  if (!f) return;
  for (int g = 0; g < FAKE_MAX; ++g) {
    fprintf(f, "gpu %d %d %u\n", g, g_mig_mode[g], g_next_gi_id[g]);
    for (int s = 0; s < FAKE_MIG_SLOTS; ++s) {
      const struct FakeGi* gi = &g_gis[g][s];
      if (gi->used) fprintf(f, "gi %d %d %u %d %u %d\n", g, s, gi->id, gi->selector, gi->start, gi->has_ci);
    }
  }
  fclose(f);
}

static void MigLoad(void) {
  static int handles_ready = 0;
  const char* path = getenv("FAKE_NVML_MIG_STATE");
  if (handles_ready && !(path && *path)) return; /* the state of this process stays */
  handles_ready = 1;
  memset(g_gis, 0, sizeof g_gis);
  memset(g_mig_mode, 0, sizeof g_mig_mode);
  for (int g = 0; g < FAKE_MAX; ++g) {
    g_next_gi_id[g] = 1;
    for (int s = 0; s < FAKE_MIG_SLOTS; ++s) {
      g_gi_handles[g][s].gpu = g_ci_handles[g][s].gpu = g;
      g_gi_handles[g][s].slot = g_ci_handles[g][s].slot = s;
      g_mig_devices[g][s].index = g;
      g_mig_devices[g][s].mig_slot = s;
    }
  }
  FILE* f = path && *path ? fopen(path, "r") : NULL;
  if (!f) return;
  char kind[8];
  while (fscanf(f, "%7s", kind) == 1) {
    int g = 0, s = 0, a = 0, sel = 0, ci = 0;
    unsigned int id = 0, start = 0;
    if (strcmp(kind, "gpu") == 0 && fscanf(f, "%d %d %u", &g, &a, &id) == 3 && g >= 0 && g < FAKE_MAX) {
      g_mig_mode[g] = a;
      g_next_gi_id[g] = id;
    } else if (strcmp(kind, "gi") == 0 && fscanf(f, "%d %d %u %d %u %d", &g, &s, &id, &sel, &start, &ci) == 6 &&
               g >= 0 && g < FAKE_MAX && s >= 0 && s < FAKE_MIG_SLOTS) {
      struct FakeGi gi = {1, id, sel, start, ci};
      g_gis[g][s] = gi;
    } else {
      break;
    }
  }
  fclose(f);
}

static int ValidMig(xpool_nvmlDevice_t d) {
  if (!g_initialised || !d) return 0;
  const struct xpool_nvmlDevice_st* first = &g_mig_devices[0][0];
  if (d < first || d >= first + FAKE_MAX * FAKE_MIG_SLOTS) return 0;
  return g_gis[d->index][d->mig_slot].used && g_gis[d->index][d->mig_slot].has_ci;
}

static void MigUuid(xpool_nvmlDevice_t d, char* buf, unsigned int len) {
  snprintf(buf, len, "MIG-fake-%04d-%04u", d->index, g_gis[d->index][d->mig_slot].id);
}

static void MigName(xpool_nvmlDevice_t d, char* buf, unsigned int len) {
  snprintf(buf, len, "NVIDIA A100-SXM4-80GB MIG %s", kA100Profiles[g_gis[d->index][d->mig_slot].selector].name);
}

static unsigned long long MigBytes(xpool_nvmlDevice_t d) {
  return kA100Profiles[g_gis[d->index][d->mig_slot].selector].memory_mb << 20;
}

static int GiValid(xpool_nvmlGpuInstance_t gi) {
  const struct xpool_nvmlGpuInstance_st* first = &g_gi_handles[0][0];
  return g_initialised && gi >= first && gi < first + FAKE_MAX * FAKE_MIG_SLOTS && g_gis[gi->gpu][gi->slot].used;
}

xpool_nvmlReturn_t nvmlDeviceGetMigMode(xpool_nvmlDevice_t d, unsigned int* current, unsigned int* pending) {
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if (!MigCapable(d)) return XPOOL_NVML_ERROR_NOT_SUPPORTED;
  *current = *pending = (unsigned int)g_mig_mode[d->index];
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceSetMigMode(xpool_nvmlDevice_t d, unsigned int mode, xpool_nvmlReturn_t* activation) {
  if (!Valid(d) || mode > 1) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if (!MigCapable(d)) return XPOOL_NVML_ERROR_NOT_SUPPORTED;
  if (EnvInt("FAKE_NVML_MIG_DENIED", 0)) return XPOOL_NVML_ERROR_NO_PERMISSION;
  if (mode == 0) {
    for (int s = 0; s < FAKE_MIG_SLOTS; ++s) {
      if (g_gis[d->index][s].used) return XPOOL_NVML_ERROR_IN_USE;
    }
  }
  g_mig_mode[d->index] = (int)mode;
  if (activation) *activation = XPOOL_NVML_SUCCESS;
  MigSave();
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(xpool_nvmlDevice_t d, unsigned int selector,
                                                       xpool_nvmlGpuInstanceProfileInfo_t* info) {
  if (!Valid(d) || selector >= XPOOL_NVML_GPU_INSTANCE_PROFILE_COUNT || !info) {
    return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  }
  if (!MigCapable(d) || !g_mig_mode[d->index] || !kA100Profiles[selector].supported) {
    return XPOOL_NVML_ERROR_NOT_SUPPORTED;
  }
  const struct FakeGiProfile* p = &kA100Profiles[selector];
  memset(info, 0, sizeof *info);
  info->id = p->id;
  info->sliceCount = p->slices;
  info->instanceCount = p->max;
  info->multiprocessorCount = p->slices * 14;
  info->memorySizeMB = p->memory_mb;
  return XPOOL_NVML_SUCCESS;
}

/* Why an instance of `p` at `start` cannot be created next to the GPU's instances; SUCCESS when it can. */
static xpool_nvmlReturn_t CheckPlacement(int gpu, const struct FakeGiProfile* p, unsigned int start) {
  unsigned int used_slices = 0, count = 0;
  for (int s = 0; s < FAKE_MIG_SLOTS; ++s) {
    const struct FakeGi* gi = &g_gis[gpu][s];
    if (!gi->used) continue;
    const struct FakeGiProfile* q = &kA100Profiles[gi->selector];
    used_slices += q->slices;
    if (q == p) ++count;
    if (start < gi->start + q->size && gi->start < start + p->size) return XPOOL_NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  if (count >= p->max || used_slices + p->slices > FAKE_MIG_COMPUTE_SLICES) {
    return XPOOL_NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(xpool_nvmlDevice_t d, unsigned int profile_id,
                                                            const xpool_nvmlGpuInstancePlacement_t* placement,
                                                            xpool_nvmlGpuInstance_t* out) {
  if (!Valid(d) || !placement || !out) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if (!MigCapable(d) || !g_mig_mode[d->index]) return XPOOL_NVML_ERROR_NOT_SUPPORTED;
  const struct FakeGiProfile* p = ProfileById(profile_id);
  if (!p || placement->start >= FAKE_MIG_MEMORY_SLICES || !(p->starts & (1u << placement->start)) ||
      placement->size != p->size) {
    return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  }
  xpool_nvmlReturn_t rc = CheckPlacement(d->index, p, placement->start);
  if (rc != XPOOL_NVML_SUCCESS) return rc;
  for (int s = 0; s < FAKE_MIG_SLOTS; ++s) {
    struct FakeGi* gi = &g_gis[d->index][s];
    if (gi->used) continue;
    gi->used = 1;
    gi->id = g_next_gi_id[d->index]++;
    gi->selector = (int)(p - kA100Profiles);
    gi->start = placement->start;
    gi->has_ci = 0;
    *out = &g_gi_handles[d->index][s];
    MigSave();
    return XPOOL_NVML_SUCCESS;
  }
  return XPOOL_NVML_ERROR_INSUFFICIENT_RESOURCES;
}

xpool_nvmlReturn_t nvmlDeviceGetGpuInstances(xpool_nvmlDevice_t d, unsigned int profile_id,
                                             xpool_nvmlGpuInstance_t* out, unsigned int* count) {
  if (!Valid(d) || !count || !out) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if (!MigCapable(d) || !g_mig_mode[d->index]) return XPOOL_NVML_ERROR_NOT_SUPPORTED;
  const struct FakeGiProfile* p = ProfileById(profile_id);
  if (!p) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  unsigned int n = 0;
  for (int s = 0; s < FAKE_MIG_SLOTS; ++s) {
    const struct FakeGi* gi = &g_gis[d->index][s];
    if (gi->used && &kA100Profiles[gi->selector] == p) out[n++] = &g_gi_handles[d->index][s];
  }
  *count = n;
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlGpuInstanceGetInfo(xpool_nvmlGpuInstance_t gi, xpool_nvmlGpuInstanceInfo_t* info) {
  if (!GiValid(gi) || !info) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  const struct FakeGi* g = &g_gis[gi->gpu][gi->slot];
  info->device = &g_devices[gi->gpu];
  info->id = g->id;
  info->profileId = kA100Profiles[g->selector].id;
  info->placement.start = g->start;
  info->placement.size = kA100Profiles[g->selector].size;
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlGpuInstanceDestroy(xpool_nvmlGpuInstance_t gi) {
  if (!GiValid(gi)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if (g_gis[gi->gpu][gi->slot].has_ci) return XPOOL_NVML_ERROR_IN_USE;
  g_gis[gi->gpu][gi->slot].used = 0;
  MigSave();
  return XPOOL_NVML_SUCCESS;
}

/* Only the full-size compute instance: the selector whose slice count is the GPU instance's. */
static int FullComputeSelector(xpool_nvmlGpuInstance_t gi) {
  switch (kA100Profiles[g_gis[gi->gpu][gi->slot].selector].slices) {
    case 1:
      return XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE;
    case 2:
      return XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE;
    case 3:
      return XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE;
    case 4:
      return XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE;
    default:
      return XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE;
  }
}

xpool_nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(xpool_nvmlGpuInstance_t gi, unsigned int selector,
                                                                unsigned int engine,
                                                                xpool_nvmlComputeInstanceProfileInfo_t* info) {
  if (!GiValid(gi) || !info) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if ((int)selector != FullComputeSelector(gi) || engine != XPOOL_NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED) {
    return XPOOL_NVML_ERROR_NOT_SUPPORTED;
  }
  memset(info, 0, sizeof *info);
  info->id = selector;
  info->sliceCount = kA100Profiles[g_gis[gi->gpu][gi->slot].selector].slices;
  info->instanceCount = 1;
  info->multiprocessorCount = info->sliceCount * 14;
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(xpool_nvmlGpuInstance_t gi, unsigned int profile_id,
                                                        xpool_nvmlComputeInstance_t* out) {
  if (!GiValid(gi) || !out || (int)profile_id != FullComputeSelector(gi)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  struct FakeGi* g = &g_gis[gi->gpu][gi->slot];
  if (g->has_ci) return XPOOL_NVML_ERROR_INSUFFICIENT_RESOURCES;
  g->has_ci = 1;
  *out = &g_ci_handles[gi->gpu][gi->slot];
  MigSave();
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlGpuInstanceGetComputeInstances(xpool_nvmlGpuInstance_t gi, unsigned int profile_id,
                                                      xpool_nvmlComputeInstance_t* out, unsigned int* count) {
  if (!GiValid(gi) || !out || !count) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  unsigned int n = 0;
  if ((int)profile_id == FullComputeSelector(gi) && g_gis[gi->gpu][gi->slot].has_ci) {
    out[n++] = &g_ci_handles[gi->gpu][gi->slot];
  }
  *count = n;
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlComputeInstanceDestroy(xpool_nvmlComputeInstance_t ci) {
  const struct xpool_nvmlComputeInstance_st* first = &g_ci_handles[0][0];
  if (!g_initialised || ci < first || ci >= first + FAKE_MAX * FAKE_MIG_SLOTS) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  struct FakeGi* g = &g_gis[ci->gpu][ci->slot];
  if (!g->used || !g->has_ci) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  g->has_ci = 0;
  MigSave();
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(xpool_nvmlDevice_t d, unsigned int* count) {
  if (!Valid(d) || !count) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if (!MigCapable(d)) return XPOOL_NVML_ERROR_NOT_SUPPORTED;
  *count = FAKE_MIG_COMPUTE_SLICES;
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(xpool_nvmlDevice_t d, unsigned int index,
                                                       xpool_nvmlDevice_t* out) {
  if (!Valid(d) || !out) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if (!MigCapable(d) || !g_mig_mode[d->index]) return XPOOL_NVML_ERROR_NOT_SUPPORTED;
  /* The index-th GPU instance with a compute instance, by start. */
  unsigned int seen = 0;
  for (unsigned int start = 0; start < FAKE_MIG_MEMORY_SLICES; ++start) {
    for (int s = 0; s < FAKE_MIG_SLOTS; ++s) {
      const struct FakeGi* gi = &g_gis[d->index][s];
      if (!gi->used || !gi->has_ci || gi->start != start) continue;
      if (seen++ == index) {
        *out = &g_mig_devices[d->index][s];
        return XPOOL_NVML_SUCCESS;
      }
    }
  }
  return XPOOL_NVML_ERROR_NOT_FOUND;
}

xpool_nvmlReturn_t nvmlDeviceGetGpuInstanceId(xpool_nvmlDevice_t d, unsigned int* id) {
  if (!ValidMig(d) || !id) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  *id = g_gis[d->index][d->mig_slot].id;
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetUtilizationRates(xpool_nvmlDevice_t d, xpool_nvmlUtilization_t* u) {
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  if (g_util < 0) return XPOOL_NVML_ERROR_NOT_SUPPORTED;
  u->gpu = (unsigned int)(g_util + d->index);
  u->memory = 0;
  return XPOOL_NVML_SUCCESS;
}

xpool_nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(xpool_nvmlDevice_t d, unsigned int* count,
                                                           xpool_nvmlProcessInfo_t* infos) {
  if (!Valid(d)) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  unsigned int room = *count;
  *count = g_proc_pid > 0 ? 1 : 0;
  if (*count == 0) return XPOOL_NVML_SUCCESS;
  if (room < 1) return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
  memset(&infos[0], 0, sizeof(infos[0]));
  infos[0].pid = (unsigned int)g_proc_pid;
  infos[0].usedGpuMemory = (unsigned long long)g_proc_mib << 20;
  return XPOOL_NVML_SUCCESS;
}

/* A whole GPU ("GPU-fake-<i>") or a MIG device ("MIG-fake-<gpu>-<gpu instance id>") by its uuid. */
xpool_nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, xpool_nvmlDevice_t* out) {
  if (!g_initialised || !uuid || !out) return XPOOL_NVML_ERROR_INVALID_ARGUMENT;
  int gpu = -1;
  unsigned int id = 0;
  if (sscanf(uuid, "GPU-fake-%d", &gpu) == 1 && gpu >= 0 && gpu < g_count) {
    *out = &g_devices[gpu];
    return XPOOL_NVML_SUCCESS;
  }
  if (sscanf(uuid, "MIG-fake-%d-%u", &gpu, &id) == 2 && gpu >= 0 && gpu < g_count) {
    for (int s = 0; s < FAKE_MIG_SLOTS; ++s) {
      if (g_gis[gpu][s].used && g_gis[gpu][s].has_ci && g_gis[gpu][s].id == id) {
        *out = &g_mig_devices[gpu][s];
        return XPOOL_NVML_SUCCESS;
      }
    }
  }
  return XPOOL_NVML_ERROR_NOT_FOUND;
}
