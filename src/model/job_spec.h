#pragma once
// JobSpec: what a user submits — parsed and validated from YAML or JSON (yaml-cpp reads both).
//
//   name: train-resnet            # required; 1..63 chars of [a-z0-9-], starts with a letter or digit
//   tenant: vision                # optional; the server checks it against the caller's token
//   priority: high                # 0..100 or low (10) / normal (50, default) / high (90)
//   replicas: 2                   # 1..1024, default 1
//   resources:                    # per replica (see ResourceSpec)
//     cpu: 4                      # "500m", 2, 1.5
//     memory: 16Gi                # "8Gi", "512Mi", bare integer = MiB
//     gpu: 1                      # devices per replica, 0..64
//     gpumem: 20Gi                # per device ("20Gi" or integer MiB); or
//     gpumem-percentage: 50       # per device, 1..100 (not both); neither = the device's whole memory
//     gpucores: 50                # per device, percent 1..100 (100 = exclusive); unset = 100 when the job
//                                 # has the whole memory, else 0 (shares compute freely) — HAMi's defaults
//     gpu-type: A100              # string or list (substring match on the device model)
//     gpu-type-exclude: [T4]
//     gpu-uuid: GPU-1234          # string or list
//     numa-bind: true
//     vendor: nvidia
//     mig: 1g.10gb                # a MIG instance of this profile (model/mig_profile.h) instead of a device
//                                 # or a share; gpu 1 (or unset), no gpumem, gpumem-percentage or gpucores
//   command: ["python", "train.py"]   # argv list, or a string run by /bin/sh -c; required
//   workdir: /data/run1           # absolute path
//   env: {EPOCHS: "10"}           # mapping NAME -> scalar
//   preemptible: true             # default false
//   checkpoint: {grace: 30}       # seconds 0..3600 (or "30s", "5m"), default 30; 0 = stop at once
//   checkpoint: {signal: SIGUSR2} # the suspend signal: SIGUSR1 (default), SIGUSR2, SIGINT, SIGTERM, SIGHUP
//   retries: 3                    # 0..10, default 0: a replica exiting non-zero (or killed) runs the job again
//   retry-backoff: 10             # seconds 1..3600 (or "10s", "1m"), default 10: retry k waits backoff × 2^(k-1)
//   image: docker.io/library/python:3.12   # run the command in this OCI image (podman); default: on the host
//   kind: interactive             # batch (default) or interactive: a dev server (Jupyter) reached through the
//                                 # server's authenticated proxy (docs/jobs.md, "Interactive jobs"); 1 replica
//   interactive:                  # only with kind: interactive (all optional)
//     port: 8888                  # the port the task listens on, 1..65535 (default 8888)
//     ttl: 8h                     # ended this long after it starts: 10..604800 s, "90m", "8h" (default 8h)
//     idle-timeout: 30m           # ended after this long without proxied traffic: 0 (never) or 10..604800 s
//                                 # (default 30m)
//
// Every error names the field path and the reason, e.g. "resources.gpucores must be 1..100" or
// "unknown field 'resources.gpus'". Unknown fields and wrong types are rejected.
// Plain value types and stateless functions; thread-safe. No YAML/JSON types leak out of this header.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/task_request.h"
#include "model/vendor.h"

namespace xpool {

inline constexpr int kPriorityLow = 10;
inline constexpr int kPriorityNormal = 50;
inline constexpr int kPriorityHigh = 90;
inline constexpr int kMaxPriority = 100;
inline constexpr int kMaxReplicas = 1024;
inline constexpr int kMaxDevicesPerReplica = 64;
inline constexpr int kMaxCheckpointGraceSeconds = 3600;
inline constexpr int kDefaultCheckpointGraceSeconds = 30;
inline constexpr std::string_view kDefaultCheckpointSignal = "SIGUSR1";
inline constexpr int kMaxRetries = 10;
inline constexpr int kDefaultRetryBackoffSeconds = 10;
inline constexpr int kMaxRetryBackoffSeconds = 3600;
inline constexpr size_t kMaxImageLength = 255;
inline constexpr int kDefaultInteractivePort = 8888;
inline constexpr int64_t kDefaultInteractiveTtlSeconds = 8 * 3600;
inline constexpr int64_t kDefaultInteractiveIdleSeconds = 30 * 60;
inline constexpr int64_t kMinInteractiveSeconds = 10;
inline constexpr int64_t kMaxInteractiveSeconds = 7 * 24 * 3600;
// Input larger than this is refused before parsing (the HTTP layer should have its own, smaller, body limit).
inline constexpr size_t kMaxJobSpecBytes = 1 << 20;

// The per-replica resources, in the user's vocabulary (kept so a spec can be shown back as it was written).
struct ResourceSpec {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int gpu = 0;                // devices per replica
  int64_t gpumem_mib = 0;     // per device; 0 = unset
  int gpumem_percentage = 0;  // per device 1..100; 0 = unset
  int gpucores = 0;           // per device, percent 1..100; 0 = unset
  std::vector<std::string> gpu_type;
  std::vector<std::string> gpu_type_exclude;
  std::vector<std::string> gpu_uuid;
  bool numa_bind = false;
  std::optional<Vendor> vendor;  // unset = any
  std::string mig;               // MIG profile ("1g.10gb"); "" = none

  // The scheduler's form: gpucores × 10 → compute milli, gpu-uuid → uuid_include, and so on.
  TaskRequest ToTaskRequest() const;

  friend bool operator==(const ResourceSpec&, const ResourceSpec&) = default;
};

// kind: interactive — a task that serves HTTP (and WebSockets) on `port`, opened through the server's proxy.
struct InteractiveSpec {
  int port = kDefaultInteractivePort;
  int64_t ttl_seconds = kDefaultInteractiveTtlSeconds;            // from the start of its run
  int64_t idle_timeout_seconds = kDefaultInteractiveIdleSeconds;  // 0 = never ended for idleness

  friend bool operator==(const InteractiveSpec&, const InteractiveSpec&) = default;
};

struct JobSpec {
  std::string name;
  std::string tenant;  // "" = the caller's tenant
  int priority = kPriorityNormal;
  int replicas = 1;
  ResourceSpec resources;
  // The command as written: an argv list, or (command_is_shell) a single string in command[0].
  std::vector<std::string> command;
  bool command_is_shell = false;
  std::string workdir;  // "" = the agent's default
  std::map<std::string, std::string> env;
  bool preemptible = false;
  int checkpoint_grace_seconds = kDefaultCheckpointGraceSeconds;
  std::string checkpoint_signal = std::string(kDefaultCheckpointSignal);  // sent to ask for a checkpoint
  // Times a failed job is run again, and the wait before the first retry (doubling each time).
  int retries = 0;
  int retry_backoff_seconds = kDefaultRetryBackoffSeconds;
  // "" = the host's environment; else an OCI image reference the command runs in, through podman.
  std::string image;
  // Set for kind: interactive (docs/jobs.md); unset = a batch job.
  std::optional<InteractiveSpec> interactive;

  // What to exec: the argv list, or {"/bin/sh", "-c", script}.
  std::vector<std::string> Argv() const;
  TaskRequest ToTaskRequest() const { return resources.ToTaskRequest(); }

  friend bool operator==(const JobSpec&, const JobSpec&) = default;
};

// Parses and validates a spec written in YAML or JSON. InvalidArgument with "<field path> <reason>" on any
// problem; never throws.
Result<JobSpec> ParseJobSpec(std::string_view text);

// Checks the limits of an already-built spec (what ParseJobSpec applies after reading the fields). Useful for
// specs built in code.
Status ValidateJobSpec(const JobSpec& spec);

// The wait before retry `attempt` (1-based): backoff × 2^(attempt-1), at most kMaxRetryBackoffSeconds.
int RetryDelaySeconds(const JobSpec& spec, int attempt);

// Canonical JSON form (what the store keeps and the API returns). ParseJobSpec(JobSpecToJson(s)) == s.
std::string JobSpecToJson(const JobSpec& spec);

// "low" / "normal" / "high" or an integer 0..100.
Result<int> ParsePriority(std::string_view text);

// The signal number of a checkpoint.signal name (SIGUSR1, SIGUSR2, SIGINT, SIGTERM, SIGHUP); InvalidArgument
// naming `checkpoint.signal` and the choices for anything else.
Result<int> CheckpointSignalNumber(std::string_view name);

}  // namespace xpool
