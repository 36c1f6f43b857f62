#pragma once
// The few NVML declarations the agent uses, written from NVIDIA's public NVML API reference so the
// build needs no nvml.h. Only types and function-pointer signatures: the functions are looked up
// with dlsym at run time (nvml/nvml_discovery.cc), and the test double (testdata/fake_nvml.c)
// exports the same names. C-compatible; constants only.
#ifndef XPOOL_AGENT_INTERNAL_NVML_API_H_
#define XPOOL_AGENT_INTERNAL_NVML_API_H_

#ifdef __cplusplus
extern "C" {
#endif

typedef int xpool_nvmlReturn_t; /* nvmlReturn_t */
typedef struct xpool_nvmlDevice_st* xpool_nvmlDevice_t;

#define XPOOL_NVML_SUCCESS 0
#define XPOOL_NVML_ERROR_INVALID_ARGUMENT 2
#define XPOOL_NVML_ERROR_NOT_SUPPORTED 3
#define XPOOL_NVML_ERROR_DRIVER_NOT_LOADED 9
#define XPOOL_NVML_ERROR_GPU_IS_LOST 15
#define XPOOL_NVML_ERROR_FUNCTION_NOT_FOUND 13
#define XPOOL_NVML_ERROR_NO_PERMISSION 4
#define XPOOL_NVML_ERROR_NOT_FOUND 6
#define XPOOL_NVML_ERROR_INSUFFICIENT_SIZE 7
#define XPOOL_NVML_ERROR_IN_USE 19
#define XPOOL_NVML_ERROR_INSUFFICIENT_RESOURCES 23

#define XPOOL_NVML_DEVICE_UUID_BUFFER_SIZE 96
#define XPOOL_NVML_DEVICE_NAME_BUFFER_SIZE 96
#define XPOOL_NVML_NVLINK_MAX_LINKS 18

typedef struct {
  unsigned long long total; /* bytes */
  unsigned long long free;
  unsigned long long used;
} xpool_nvmlMemory_t;

/* nvmlPciInfo_t (v3 layout) */
typedef struct {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32]; /* "00000000:3B:00.0" */
} xpool_nvmlPciInfo_t;

/* nvmlUtilization_t: percent of the last sample period */
typedef struct {
  unsigned int gpu;
  unsigned int memory;
} xpool_nvmlUtilization_t;

/* nvmlProcessInfo_t (the layout of nvmlDeviceGetComputeRunningProcesses_v2 and _v3) */
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory; /* bytes; NVML_VALUE_NOT_AVAILABLE (all ones) when unknown */
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} xpool_nvmlProcessInfo_t;

/* nvmlGpuTopologyLevel_t */
#define XPOOL_NVML_TOPOLOGY_INTERNAL 0
#define XPOOL_NVML_TOPOLOGY_SINGLE 10
#define XPOOL_NVML_TOPOLOGY_MULTIPLE 20
#define XPOOL_NVML_TOPOLOGY_HOSTBRIDGE 30
#define XPOOL_NVML_TOPOLOGY_NODE 40
#define XPOOL_NVML_TOPOLOGY_SYSTEM 50

/* nvmlEnableState_t */
#define XPOOL_NVML_FEATURE_DISABLED 0
#define XPOOL_NVML_FEATURE_ENABLED 1

/* MIG (Multi-Instance GPU). nvmlDeviceGetMigMode / SetMigMode modes. */
#define XPOOL_NVML_DEVICE_MIG_DISABLE 0
#define XPOOL_NVML_DEVICE_MIG_ENABLE 1

/* GPU-instance profile selectors for nvmlDeviceGetGpuInstanceProfileInfo (NVML_GPU_INSTANCE_PROFILE_*); the info's
 * `id` is what the create and list calls take. */
#define XPOOL_NVML_GPU_INSTANCE_PROFILE_1_SLICE 0x0
#define XPOOL_NVML_GPU_INSTANCE_PROFILE_2_SLICE 0x1
#define XPOOL_NVML_GPU_INSTANCE_PROFILE_3_SLICE 0x2
#define XPOOL_NVML_GPU_INSTANCE_PROFILE_4_SLICE 0x3
#define XPOOL_NVML_GPU_INSTANCE_PROFILE_7_SLICE 0x4
#define XPOOL_NVML_GPU_INSTANCE_PROFILE_8_SLICE 0x5
#define XPOOL_NVML_GPU_INSTANCE_PROFILE_6_SLICE 0x6
#define XPOOL_NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 0x7 /* with media extensions ("+me") */
#define XPOOL_NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 0x8 /* with media extensions ("+me") */
#define XPOOL_NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 0x9 /* one compute slice, two memory slices */
#define XPOOL_NVML_GPU_INSTANCE_PROFILE_COUNT 0xA

/* Compute-instance profile selectors (NVML_COMPUTE_INSTANCE_PROFILE_*) and the shared engine profile. */
#define XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE 0x0
#define XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE 0x1
#define XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE 0x2
#define XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE 0x3
#define XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE 0x4
#define XPOOL_NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0

typedef struct xpool_nvmlGpuInstance_st* xpool_nvmlGpuInstance_t;
typedef struct xpool_nvmlComputeInstance_st* xpool_nvmlComputeInstance_t;

/* nvmlGpuInstancePlacement_t: `start` and `size` in memory slices. */
typedef struct {
  unsigned int start;
  unsigned int size;
} xpool_nvmlGpuInstancePlacement_t;

/* nvmlGpuInstanceProfileInfo_t */
typedef struct {
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount; /* compute slices */
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
} xpool_nvmlGpuInstanceProfileInfo_t;

/* nvmlGpuInstanceInfo_t */
typedef struct {
  xpool_nvmlDevice_t device;
  unsigned int id;
  unsigned int profileId;
  xpool_nvmlGpuInstancePlacement_t placement;
} xpool_nvmlGpuInstanceInfo_t;

/* nvmlComputeInstanceProfileInfo_t */
typedef struct {
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
} xpool_nvmlComputeInstanceProfileInfo_t;

/* Signatures, named after the NVML symbols. */
typedef xpool_nvmlReturn_t (*xpool_nvmlInit_v2_fn)(void);
typedef xpool_nvmlReturn_t (*xpool_nvmlShutdown_fn)(void);
typedef const char* (*xpool_nvmlErrorString_fn)(xpool_nvmlReturn_t);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetCount_v2_fn)(unsigned int*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int, xpool_nvmlDevice_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetHandleByUUID_fn)(const char*, xpool_nvmlDevice_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetUUID_fn)(xpool_nvmlDevice_t, char*, unsigned int);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetName_fn)(xpool_nvmlDevice_t, char*, unsigned int);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetMemoryInfo_fn)(xpool_nvmlDevice_t, xpool_nvmlMemory_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetNumaNodeId_fn)(xpool_nvmlDevice_t, unsigned int*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetPciInfo_v3_fn)(xpool_nvmlDevice_t, xpool_nvmlPciInfo_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetTopologyCommonAncestor_fn)(xpool_nvmlDevice_t, xpool_nvmlDevice_t,
                                                                           int*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetNvLinkState_fn)(xpool_nvmlDevice_t, unsigned int, int*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetNvLinkRemotePciInfo_v2_fn)(xpool_nvmlDevice_t, unsigned int,
                                                                           xpool_nvmlPciInfo_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetUtilizationRates_fn)(xpool_nvmlDevice_t, xpool_nvmlUtilization_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetComputeRunningProcesses_v3_fn)(xpool_nvmlDevice_t, unsigned int*,
                                                                               xpool_nvmlProcessInfo_t*);

typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetMigMode_fn)(xpool_nvmlDevice_t, unsigned int*, unsigned int*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceSetMigMode_fn)(xpool_nvmlDevice_t, unsigned int, xpool_nvmlReturn_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetGpuInstanceProfileInfo_fn)(xpool_nvmlDevice_t, unsigned int,
                                                                           xpool_nvmlGpuInstanceProfileInfo_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetGpuInstances_fn)(xpool_nvmlDevice_t, unsigned int,
                                                                 xpool_nvmlGpuInstance_t*, unsigned int*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceCreateGpuInstanceWithPlacement_fn)(xpool_nvmlDevice_t, unsigned int,
                                                                                const xpool_nvmlGpuInstancePlacement_t*,
                                                                                xpool_nvmlGpuInstance_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlGpuInstanceGetInfo_fn)(xpool_nvmlGpuInstance_t, xpool_nvmlGpuInstanceInfo_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlGpuInstanceDestroy_fn)(xpool_nvmlGpuInstance_t);
typedef xpool_nvmlReturn_t (*xpool_nvmlGpuInstanceGetComputeInstanceProfileInfo_fn)(
    xpool_nvmlGpuInstance_t, unsigned int, unsigned int, xpool_nvmlComputeInstanceProfileInfo_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlGpuInstanceCreateComputeInstance_fn)(xpool_nvmlGpuInstance_t, unsigned int,
                                                                            xpool_nvmlComputeInstance_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlGpuInstanceGetComputeInstances_fn)(xpool_nvmlGpuInstance_t, unsigned int,
                                                                          xpool_nvmlComputeInstance_t*, unsigned int*);
typedef xpool_nvmlReturn_t (*xpool_nvmlComputeInstanceDestroy_fn)(xpool_nvmlComputeInstance_t);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetMaxMigDeviceCount_fn)(xpool_nvmlDevice_t, unsigned int*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetMigDeviceHandleByIndex_fn)(xpool_nvmlDevice_t, unsigned int,
                                                                           xpool_nvmlDevice_t*);
typedef xpool_nvmlReturn_t (*xpool_nvmlDeviceGetGpuInstanceId_fn)(xpool_nvmlDevice_t, unsigned int*);

#ifdef __cplusplus
}
#endif

#endif /* XPOOL_AGENT_INTERNAL_NVML_API_H_ */
