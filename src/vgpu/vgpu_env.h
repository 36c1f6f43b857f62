/* The environment variables that carry a task's device limits from the launcher (agent, Kubernetes device
 * plugin) to the runtime library preloaded into the task. Defined once here; C-compatible because the runtime
 * library is a C ABI. Thread-safe (constants only). */
#ifndef XPOOL_VGPU_VGPU_ENV_H_
#define XPOOL_VGPU_VGPU_ENV_H_

/* Per visible device i (0-based, in CUDA_VISIBLE_DEVICES order): memory limit in MiB. */
#define XPOOL_ENV_DEVICE_MEMORY_LIMIT_PREFIX "XPOOL_DEVICE_MEMORY_LIMIT_"
/* Per visible device i: compute limit in percent (1..100). */
#define XPOOL_ENV_DEVICE_CORE_LIMIT_PREFIX "XPOOL_DEVICE_CORE_LIMIT_"
/* Path of the task's shared accounting file (one per task, shared by all its processes). */
#define XPOOL_ENV_SHARED_REGION "XPOOL_SHARED_REGION"
/* A directory for the accounting file when XPOOL_SHARED_REGION is not set (a host path the device plugin mounts):
 * the file is <dir>/<XPOOL_JOB_ID>.<XPOOL_REPLICA>.region, or <dir>/vgpu.region without a job id. */
#define XPOOL_ENV_SHARED_REGION_DIR "XPOOL_SHARED_REGION_DIR"
#define XPOOL_SHARED_REGION_DEFAULT_NAME "vgpu.region"

/* HAMi-core's names, honoured when xpool's own are absent (images built for HAMi run unchanged):
 * CUDA_DEVICE_MEMORY_LIMIT (every device) / CUDA_DEVICE_MEMORY_LIMIT_<i>: bytes, or with a K/M/G suffix (binary);
 * CUDA_DEVICE_SM_LIMIT / CUDA_DEVICE_SM_LIMIT_<i>: percent; 0 in either means "not set";
 * CUDA_DEVICE_MEMORY_SHARED_CACHE: the accounting file. */
#define XPOOL_HAMI_ENV_MEMORY_LIMIT "CUDA_DEVICE_MEMORY_LIMIT"
#define XPOOL_HAMI_ENV_SM_LIMIT "CUDA_DEVICE_SM_LIMIT"
#define XPOOL_HAMI_ENV_SHARED_CACHE "CUDA_DEVICE_MEMORY_SHARED_CACHE"
/* Log level of the runtime library: error, warn, info, debug. */
#define XPOOL_ENV_VGPU_LOG_LEVEL "XPOOL_VGPU_LOG_LEVEL"
/* The preloaded library's file name, as the launcher puts it in LD_PRELOAD. */
#define XPOOL_VGPU_LIBRARY_NAME "libxpool-vgpu.so"

/* Task identity and restarts, set by the launcher for every task. */
#define XPOOL_ENV_JOB_ID "XPOOL_JOB_ID"
#define XPOOL_ENV_REPLICA "XPOOL_REPLICA"
#define XPOOL_ENV_RESTART_COUNT "XPOOL_RESTART_COUNT"
#define XPOOL_ENV_SUSPEND_FILE "XPOOL_SUSPEND_FILE"

/* Added for the runtime library (libxpool-vgpu.so): */
/* Memory charged per CUDA context a process creates on a limited device, in MiB (default 256). */
#define XPOOL_ENV_VGPU_CONTEXT_RESERVE_MIB "XPOOL_VGPU_CONTEXT_RESERVE_MIB"
/* Path or name of the real CUDA driver and NVML libraries to load (defaults libcuda.so.1, libnvidia-ml.so.1). */
#define XPOOL_ENV_VGPU_CUDA_LIBRARY "XPOOL_VGPU_CUDA_LIBRARY"
#define XPOOL_ENV_VGPU_NVML_LIBRARY "XPOOL_VGPU_NVML_LIBRARY"
/* Devices of the fake driver used by tests: "<count>x<MiB>", e.g. "2x16384". */
#define XPOOL_ENV_FAKE_DEVICES "XPOOL_FAKE_DEVICES"
/* Fake NVML: SM utilisation in percent that every process of the fake reports (absent: not supported). */
#define XPOOL_ENV_FAKE_SM_UTIL "XPOOL_FAKE_SM_UTIL"
/* Fake NVML: thread blocks per second the fake device runs; utilisation is then modelled from the launches. */
#define XPOOL_ENV_FAKE_SM_CAPACITY "XPOOL_FAKE_SM_CAPACITY"

#endif /* XPOOL_VGPU_VGPU_ENV_H_ */
