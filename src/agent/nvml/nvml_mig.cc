#include "agent/nvml/nvml_mig.h"

#include <dlfcn.h>

#include <algorithm>
#include <charconv>

#include "agent/discovery.h"
#include "agent/internal/nvml_api.h"
#include "agent/nvml/internal/nvml_symbols.h"

namespace xpool::agent {

struct NvmlMig::Api : nvml_internal::Basics {
  xpool_nvmlDeviceGetMigMode_fn get_mig_mode = nullptr;
  xpool_nvmlDeviceSetMigMode_fn set_mig_mode = nullptr;
  xpool_nvmlDeviceGetGpuInstanceProfileInfo_fn gi_profile_info = nullptr;
  xpool_nvmlDeviceGetGpuInstances_fn get_gpu_instances = nullptr;
  xpool_nvmlDeviceCreateGpuInstanceWithPlacement_fn create_gpu_instance = nullptr;
  xpool_nvmlGpuInstanceGetInfo_fn gi_info = nullptr;
  xpool_nvmlGpuInstanceDestroy_fn destroy_gpu_instance = nullptr;
  xpool_nvmlGpuInstanceGetComputeInstanceProfileInfo_fn ci_profile_info = nullptr;
  xpool_nvmlGpuInstanceCreateComputeInstance_fn create_compute_instance = nullptr;
  xpool_nvmlGpuInstanceGetComputeInstances_fn get_compute_instances = nullptr;
  xpool_nvmlComputeInstanceDestroy_fn destroy_compute_instance = nullptr;
  xpool_nvmlDeviceGetMaxMigDeviceCount_fn max_mig_devices = nullptr;
  xpool_nvmlDeviceGetMigDeviceHandleByIndex_fn mig_device = nullptr;
  xpool_nvmlDeviceGetGpuInstanceId_fn mig_gpu_instance_id = nullptr;
};

namespace {

using Api = NvmlMig::Api;

using nvml_internal::Require;

Status LoadApi(void* lib, Api* api) {
  std::string missing;
  nvml_internal::RequireBasics(lib, api, &missing);
  Require(lib, "nvmlDeviceGetMigMode", &api->get_mig_mode, &missing);
  Require(lib, "nvmlDeviceSetMigMode", &api->set_mig_mode, &missing);
  Require(lib, "nvmlDeviceGetGpuInstanceProfileInfo", &api->gi_profile_info, &missing);
  Require(lib, "nvmlDeviceGetGpuInstances", &api->get_gpu_instances, &missing);
  Require(lib, "nvmlDeviceCreateGpuInstanceWithPlacement", &api->create_gpu_instance, &missing);
  Require(lib, "nvmlGpuInstanceGetInfo", &api->gi_info, &missing);
  Require(lib, "nvmlGpuInstanceDestroy", &api->destroy_gpu_instance, &missing);
  Require(lib, "nvmlGpuInstanceGetComputeInstanceProfileInfo", &api->ci_profile_info, &missing);
  Require(lib, "nvmlGpuInstanceCreateComputeInstance", &api->create_compute_instance, &missing);
  Require(lib, "nvmlGpuInstanceGetComputeInstances", &api->get_compute_instances, &missing);
  Require(lib, "nvmlComputeInstanceDestroy", &api->destroy_compute_instance, &missing);
  Require(lib, "nvmlDeviceGetMaxMigDeviceCount", &api->max_mig_devices, &missing);
  Require(lib, "nvmlDeviceGetMigDeviceHandleByIndex", &api->mig_device, &missing);
  Require(lib, "nvmlDeviceGetGpuInstanceId", &api->mig_gpu_instance_id, &missing);
  if (!missing.empty()) return FailedPreconditionError("NVML library lacks " + missing);
  return Status::Ok();
}

// NVML's GPU-instance profile selector for a table profile; -1 when NVML names none.
int GpuInstanceSelector(const MigProfile& p) {
  if (p.media_extensions) {
    if (p.compute_slices == 1) return XPOOL_NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1;
    if (p.compute_slices == 2) return XPOOL_NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1;
    return -1;
  }
  switch (p.compute_slices) {
    case 1:
      return p.memory_slices == 1 ? XPOOL_NVML_GPU_INSTANCE_PROFILE_1_SLICE
                                  : XPOOL_NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2;
    case 2:
      return XPOOL_NVML_GPU_INSTANCE_PROFILE_2_SLICE;
    case 3:
      return XPOOL_NVML_GPU_INSTANCE_PROFILE_3_SLICE;
    case 4:
      return XPOOL_NVML_GPU_INSTANCE_PROFILE_4_SLICE;
    case 7:
      return XPOOL_NVML_GPU_INSTANCE_PROFILE_7_SLICE;
    default:
      return -1;
  }
}

// The compute-instance selector that spans a whole GPU instance of `compute_slices`; -1 when NVML names none.
int FullComputeSelector(int compute_slices) {
  switch (compute_slices) {
    case 1:
      return XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE;
    case 2:
      return XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE;
    case 3:
      return XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE;
    case 4:
      return XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE;
    case 7:
      return XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE;
    default:
      return -1;
  }
}

constexpr unsigned int kMaxInstances = 8;  // GPU instances one GPU holds at most (8 memory slices)

struct GpuHandle {
  xpool_nvmlDevice_t device = nullptr;
  const MigModel* model = nullptr;
  std::map<unsigned int, int> profile_by_id;  // NVML profile id → index into model->profiles
};

// The NVML profile id of each of the model's profiles the driver offers on this GPU (MIG must be on).
std::map<unsigned int, int> ProfileIds(const Api& api, xpool_nvmlDevice_t device, const MigModel& model) {
  std::map<unsigned int, int> ids;
  for (size_t i = 0; i < model.profiles.size(); ++i) {
    const int selector = GpuInstanceSelector(model.profiles[i]);
    xpool_nvmlGpuInstanceProfileInfo_t info = {};
    if (selector < 0 || api.gi_profile_info(device, static_cast<unsigned int>(selector), &info) != XPOOL_NVML_SUCCESS) {
      continue;
    }
    ids[info.id] = static_cast<int>(i);
  }
  return ids;
}

struct FoundInstance {
  xpool_nvmlGpuInstance_t handle = nullptr;
  MigInstanceInfo info;
};

// Every GPU instance with its placement; uuids and memory come from the MIG device handles.
std::vector<FoundInstance> ListInstances(const Api& api, const GpuHandle& gpu) {
  std::vector<FoundInstance> found;
  for (const auto& [id, profile] : gpu.profile_by_id) {
    xpool_nvmlGpuInstance_t handles[kMaxInstances] = {};
    unsigned int count = kMaxInstances;
    if (api.get_gpu_instances(gpu.device, id, handles, &count) != XPOOL_NVML_SUCCESS) continue;
    for (unsigned int k = 0; k < count && k < kMaxInstances; ++k) {
      xpool_nvmlGpuInstanceInfo_t info = {};
      if (api.gi_info(handles[k], &info) != XPOOL_NVML_SUCCESS) continue;
      FoundInstance f;
      f.handle = handles[k];
      f.info.placement = MigPlacement{profile, static_cast<int>(info.placement.start)};
      f.info.gpu_instance_id = info.id;
      found.push_back(std::move(f));
    }
  }
  unsigned int max_devices = 0;
  if (api.max_mig_devices(gpu.device, &max_devices) != XPOOL_NVML_SUCCESS) max_devices = 0;
  for (unsigned int k = 0; k < max_devices; ++k) {
    xpool_nvmlDevice_t mig = nullptr;
    unsigned int gi_id = 0;
    if (api.mig_device(gpu.device, k, &mig) != XPOOL_NVML_SUCCESS) continue;
    if (api.mig_gpu_instance_id(mig, &gi_id) != XPOOL_NVML_SUCCESS) continue;
    for (FoundInstance& f : found) {
      if (f.info.gpu_instance_id != gi_id) continue;
      char uuid[XPOOL_NVML_DEVICE_UUID_BUFFER_SIZE] = {};
      if (api.get_uuid(mig, uuid, sizeof uuid) == XPOOL_NVML_SUCCESS) f.info.uuid = uuid;
      xpool_nvmlMemory_t memory = {};
      if (api.get_memory(mig, &memory) == XPOOL_NVML_SUCCESS)
        f.info.memory_mib = static_cast<int64_t>(memory.total >> 20);
    }
  }
  std::sort(found.begin(), found.end(), [](const FoundInstance& a, const FoundInstance& b) {
    return a.info.placement.start < b.info.placement.start;
  });
  return found;
}

std::string PlacementName(const MigModel& model, const MigPlacement& p) {
  return std::string(model.profiles[p.profile].name) + " at slot " + std::to_string(p.start);
}

// Destroys an instance's compute instances, then the instance.
Status DestroyInstance(const Api& api, const MigModel& model, const FoundInstance& instance) {
  const std::string what = "destroying " + PlacementName(model, instance.info.placement);
  for (unsigned int selector = 0; selector <= XPOOL_NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE; ++selector) {
    xpool_nvmlComputeInstanceProfileInfo_t info = {};
    if (api.ci_profile_info(instance.handle, selector, XPOOL_NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info) !=
        XPOOL_NVML_SUCCESS) {
      continue;
    }
    xpool_nvmlComputeInstance_t handles[kMaxInstances] = {};
    unsigned int count = kMaxInstances;
    if (api.get_compute_instances(instance.handle, info.id, handles, &count) != XPOOL_NVML_SUCCESS) continue;
    for (unsigned int k = 0; k < count && k < kMaxInstances; ++k) {
      if (xpool_nvmlReturn_t rc = api.destroy_compute_instance(handles[k]); rc != XPOOL_NVML_SUCCESS) {
        return FailedPreconditionError(what + ": " + api.Error(rc));
      }
    }
  }
  if (xpool_nvmlReturn_t rc = api.destroy_gpu_instance(instance.handle); rc != XPOOL_NVML_SUCCESS) {
    return FailedPreconditionError(what + ": " + api.Error(rc));
  }
  return Status::Ok();
}

// Creates a GPU instance at the placement and its full-size compute instance.
Status CreateInstance(const Api& api, const GpuHandle& gpu, const MigPlacement& placement) {
  const MigProfile& profile = gpu.model->profiles[placement.profile];
  const std::string what = "creating " + PlacementName(*gpu.model, placement);
  const int selector = GpuInstanceSelector(profile);
  xpool_nvmlGpuInstanceProfileInfo_t info = {};
  xpool_nvmlReturn_t rc = selector < 0 ? XPOOL_NVML_ERROR_NOT_SUPPORTED
                                       : api.gi_profile_info(gpu.device, static_cast<unsigned int>(selector), &info);
  if (rc != XPOOL_NVML_SUCCESS)
    return FailedPreconditionError(what + ": the driver has no such profile: " + api.Error(rc));
  xpool_nvmlGpuInstancePlacement_t where = {static_cast<unsigned int>(placement.start),
                                            static_cast<unsigned int>(profile.memory_slices)};
  xpool_nvmlGpuInstance_t instance = nullptr;
  if (rc = api.create_gpu_instance(gpu.device, info.id, &where, &instance); rc != XPOOL_NVML_SUCCESS) {
    return FailedPreconditionError(what + ": " + api.Error(rc));
  }
  const int compute_selector = FullComputeSelector(profile.compute_slices);
  xpool_nvmlComputeInstanceProfileInfo_t compute = {};
  rc = compute_selector < 0 ? XPOOL_NVML_ERROR_NOT_SUPPORTED
                            : api.ci_profile_info(instance, static_cast<unsigned int>(compute_selector),
                                                  XPOOL_NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &compute);
  xpool_nvmlComputeInstance_t ci = nullptr;
  if (rc == XPOOL_NVML_SUCCESS) rc = api.create_compute_instance(instance, compute.id, &ci);
  if (rc != XPOOL_NVML_SUCCESS) {
    (void)api.destroy_gpu_instance(instance);  // leave no instance without compute behind
    return FailedPreconditionError(what + ": its compute instance: " + api.Error(rc));
  }
  return Status::Ok();
}

Result<GpuHandle> OpenGpu(const Api& api, int index, bool need_mig) {
  GpuHandle gpu;
  if (xpool_nvmlReturn_t rc = api.get_handle(static_cast<unsigned int>(index), &gpu.device); rc != XPOOL_NVML_SUCCESS) {
    return NotFoundError("GPU " + std::to_string(index) + ": " + api.Error(rc));
  }
  char name[XPOOL_NVML_DEVICE_NAME_BUFFER_SIZE] = {};
  xpool_nvmlMemory_t memory = {};
  (void)api.get_name(gpu.device, name, sizeof name);
  (void)api.get_memory(gpu.device, &memory);
  gpu.model = FindMigModel(name, static_cast<int64_t>(memory.total >> 20));
  if (!need_mig) return gpu;
  unsigned int current = 0, pending = 0;
  if (api.get_mig_mode(gpu.device, &current, &pending) != XPOOL_NVML_SUCCESS || gpu.model == nullptr) {
    return FailedPreconditionError("GPU " + std::to_string(index) + " (" + name + ") has no MIG");
  }
  if (current != XPOOL_NVML_DEVICE_MIG_ENABLE) {
    return FailedPreconditionError("GPU " + std::to_string(index) + " is not in MIG mode");
  }
  gpu.profile_by_id = ProfileIds(api, gpu.device, *gpu.model);
  return gpu;
}

}  // namespace

NvmlMig::NvmlMig(void* library, std::unique_ptr<Api> api) : library_(library), api_(std::move(api)) {}

NvmlMig::~NvmlMig() {
  (void)api_->shutdown();
  dlclose(library_);
}

Result<std::unique_ptr<NvmlMig>> NvmlMig::Open(const std::string& library) {
  dlerror();
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return FailedPreconditionError("cannot open NVML (" + (why ? std::string(why) : library) + ")");
  }
  auto api = std::make_unique<Api>();
  if (Status s = LoadApi(lib, api.get()); !s.ok()) {
    dlclose(lib);
    return s.WithContext(library);
  }
  if (xpool_nvmlReturn_t rc = api->init(); rc != XPOOL_NVML_SUCCESS) {
    Status s = UnavailableError("nvmlInit failed: " + api->Error(rc));
    dlclose(lib);
    return s;
  }
  return std::unique_ptr<NvmlMig>(new NvmlMig(lib, std::move(api)));
}

Result<std::vector<MigGpuInfo>> NvmlMig::ReadGpus() {
  unsigned int count = 0;
  if (xpool_nvmlReturn_t rc = api_->get_count(&count); rc != XPOOL_NVML_SUCCESS) {
    return UnavailableError("nvmlDeviceGetCount failed: " + api_->Error(rc));
  }
  std::vector<MigGpuInfo> gpus;
  for (unsigned int i = 0; i < count && i < 256; ++i) {
    ASSIGN_OR_RETURN(GpuHandle gpu, OpenGpu(*api_, static_cast<int>(i), /*need_mig=*/false));
    MigGpuInfo info;
    info.index = static_cast<int>(i);
    info.model = gpu.model;
    char buf[XPOOL_NVML_DEVICE_UUID_BUFFER_SIZE] = {};
    if (api_->get_uuid(gpu.device, buf, sizeof buf) == XPOOL_NVML_SUCCESS) info.uuid = buf;
    char name[XPOOL_NVML_DEVICE_NAME_BUFFER_SIZE] = {};
    if (api_->get_name(gpu.device, name, sizeof name) == XPOOL_NVML_SUCCESS) info.model_name = name;
    if (info.model_name.rfind("NVIDIA ", 0) == 0) info.model_name = info.model_name.substr(7);
    unsigned int current = 0, pending = 0;
    info.mig_capable = api_->get_mig_mode(gpu.device, &current, &pending) == XPOOL_NVML_SUCCESS;
    info.mig_enabled = info.mig_capable && current == XPOOL_NVML_DEVICE_MIG_ENABLE;
    if (info.mig_enabled && info.model != nullptr) {
      gpu.profile_by_id = ProfileIds(*api_, gpu.device, *gpu.model);
      for (FoundInstance& f : ListInstances(*api_, gpu)) info.instances.push_back(std::move(f.info));
    }
    gpus.push_back(std::move(info));
  }
  return gpus;
}

Status NvmlMig::EnableMig(int index) {
  ASSIGN_OR_RETURN(GpuHandle gpu, OpenGpu(*api_, index, /*need_mig=*/false));
  const std::string where = "GPU " + std::to_string(index);
  unsigned int current = 0, pending = 0;
  if (api_->get_mig_mode(gpu.device, &current, &pending) != XPOOL_NVML_SUCCESS) {
    return FailedPreconditionError(where + " has no MIG mode");
  }
  if (current == XPOOL_NVML_DEVICE_MIG_ENABLE) return Status::Ok();
  xpool_nvmlReturn_t activation = XPOOL_NVML_SUCCESS;
  xpool_nvmlReturn_t rc = api_->set_mig_mode(gpu.device, XPOOL_NVML_DEVICE_MIG_ENABLE, &activation);
  if (rc == XPOOL_NVML_ERROR_NO_PERMISSION) {
    return PermissionDeniedError(where + ": turning MIG mode on needs root: " + api_->Error(rc));
  }
  if (rc != XPOOL_NVML_SUCCESS) return FailedPreconditionError(where + ": turning MIG mode on: " + api_->Error(rc));
  if (api_->get_mig_mode(gpu.device, &current, &pending) == XPOOL_NVML_SUCCESS &&
      current != XPOOL_NVML_DEVICE_MIG_ENABLE) {
    return PermissionDeniedError(
        where + ": MIG mode is pending until the GPU is reset (nvidia-smi -r): " + api_->Error(activation));
  }
  return Status::Ok();
}

Status NvmlMig::ApplyGeometry(int index, std::span<const MigPlacement> wanted,
                              std::span<const std::string> busy_uuids) {
  ASSIGN_OR_RETURN(GpuHandle gpu, OpenGpu(*api_, index, /*need_mig=*/true));
  const std::string where = "GPU " + std::to_string(index);
  RETURN_IF_ERROR(ValidateMigGeometry(*gpu.model, wanted).WithContext(where));
  std::vector<FoundInstance> current = ListInstances(*api_, gpu);
  std::vector<const FoundInstance*> to_destroy;
  std::vector<MigPlacement> to_create(wanted.begin(), wanted.end());
  for (const FoundInstance& f : current) {
    auto kept = std::find(to_create.begin(), to_create.end(), f.info.placement);
    if (kept != to_create.end()) {
      to_create.erase(kept);
      continue;
    }
    if (!f.info.uuid.empty() && std::find(busy_uuids.begin(), busy_uuids.end(), f.info.uuid) != busy_uuids.end()) {
      return FailedPreconditionError(where + ": " + PlacementName(*gpu.model, f.info.placement) + " (" + f.info.uuid +
                                     ") runs a task and would be destroyed");
    }
    to_destroy.push_back(&f);
  }
  for (const FoundInstance* f : to_destroy) RETURN_IF_ERROR(DestroyInstance(*api_, *gpu.model, *f).WithContext(where));
  for (const MigPlacement& p : to_create) RETURN_IF_ERROR(CreateInstance(*api_, gpu, p).WithContext(where));
  return Status::Ok();
}

Status ApplyMigGeometry(NvmlMig& nvml, const std::map<int, std::vector<MigWanted>>& geometry) {
  ASSIGN_OR_RETURN(std::vector<MigGpuInfo> gpus, nvml.ReadGpus());
  for (const auto& [index, wanted] : geometry) {
    const std::string where = "GPU " + std::to_string(index);
    auto gpu = std::find_if(gpus.begin(), gpus.end(), [&](const MigGpuInfo& g) { return g.index == index; });
    if (gpu == gpus.end()) return NotFoundError(where + ": no such GPU (" + std::to_string(gpus.size()) + " found)");
    if (!gpu->mig_capable || gpu->model == nullptr) {
      return FailedPreconditionError(where + " (" + gpu->model_name + ") has no MIG");
    }
    ASSIGN_OR_RETURN(std::vector<MigPlacement> placements, PlaceMigWanted(*gpu->model, wanted));
    // Placements given (the server's plan): exactly those; else the same profiles anywhere will do.
    const bool placed = !wanted.empty() && wanted.front().start >= 0;
    std::vector<std::pair<int, int>> have, want;
    for (const MigInstanceInfo& i : gpu->instances)
      have.emplace_back(i.placement.profile, placed ? i.placement.start : 0);
    for (const MigPlacement& p : placements) want.emplace_back(p.profile, placed ? p.start : 0);
    std::sort(have.begin(), have.end());
    std::sort(want.begin(), want.end());
    if (gpu->mig_enabled && have == want) continue;  // already holds these instances
    RETURN_IF_ERROR(nvml.EnableMig(index));
    RETURN_IF_ERROR(nvml.ApplyGeometry(index, placements));
  }
  return Status::Ok();
}

}  // namespace xpool::agent
