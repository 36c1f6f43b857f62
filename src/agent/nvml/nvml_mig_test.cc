#include "agent/nvml/nvml_mig.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <random>

#include "agent/discovery.h"
#include "agent/internal/nvml_api.h"
#include "agent/nvml/nvml_discovery.h"
#include "agent/task_env.h"

namespace xpool::agent {
namespace {

// Each test gets a fresh MIG state file for the fake NVML (testdata/fake_nvml.c: devices 0 and 1 are A100 80GB
// with MIG, 2 and 3 are T4 without).
class NvmlMigTest : public testing::Test {
 protected:
  void SetUp() override {
    state_ = testing::TempDir() + "/xpool_fake_mig_" + testing::UnitTest::GetInstance()->current_test_info()->name();
    std::remove(state_.c_str());
    setenv("FAKE_NVML_MIG_STATE", state_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("FAKE_NVML_MIG_STATE");
    unsetenv("FAKE_NVML_MIG_DENIED");
    std::remove(state_.c_str());
  }
  std::unique_ptr<NvmlMig> Open() {
    auto nvml = NvmlMig::Open(XPOOL_FAKE_NVML_PATH);
    EXPECT_TRUE(nvml.ok()) << nvml.status().ToString();
    return nvml.ok() ? std::move(*nvml) : nullptr;
  }
  MigGpuInfo Gpu(int index) {
    auto nvml = Open();
    auto gpus = nvml->ReadGpus();
    EXPECT_TRUE(gpus.ok()) << gpus.status().ToString();
    return gpus.ok() ? (*gpus)[index] : MigGpuInfo{};
  }
  std::string state_;
};

const MigModel& A100() { return *MigModelNamed("A100-80GB"); }
MigPlacement At(std::string_view profile, int start) { return {MigProfileIndex(A100(), profile), start}; }

// --mig-dynamic's discovery: a GPU in MIG mode is one device per start slot, so that the devices in use keep their
// positions when instances are made beside them; the label names the GPUs with their first slot device.
TEST_F(NvmlMigTest, DynamicDiscoveryOffersEachStartSlotAndKeepsPositionsAcrossChanges) {
  NvmlDiscovery discovery(XPOOL_FAKE_NVML_PATH, "/nonexistent", "gpu-box");
  discovery.set_mig_slots(true);
  auto before = discovery.Discover();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_FALSE(before->node.labels.contains(std::string(kMigDynamicLabel)));  // no GPU in MIG mode yet
  auto geometry = ParseMigGeometry("1=3g.40gb,1g.10gb");
  ASSERT_TRUE(geometry.ok());
  ASSERT_TRUE(ApplyMigGeometry(*Open(), *geometry).ok());  // opened apart from discovery, as the agent does
  auto report = discovery.Discover();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const Node& node = report->node;
  const std::string label = node.labels.at(std::string(kMigDynamicLabel));
  EXPECT_EQ(label, "1@1=A100-80GB:3g.40gb@0,1g.10gb@4");
  ASSERT_EQ(node.devices.size(), 10u);  // GPU 0, GPU 1's seven start slots, the two T4s
  EXPECT_EQ(node.devices[1].model, "A100-SXM4-80GB MIG 3g.40gb");
  EXPECT_EQ(node.devices[1].mode, DeviceMode::kMig);
  EXPECT_EQ(node.devices[2].mode, DeviceMode::kMigSlot);
  EXPECT_EQ(node.devices[2].model, "A100-SXM4-80GB MIG slot 1");
  EXPECT_EQ(node.devices[2].memory_mib, 0);
  EXPECT_FALSE(DeviceOffered(node.devices[2]));
  EXPECT_EQ(node.devices[5].model, "A100-SXM4-80GB MIG 1g.10gb");
  EXPECT_EQ(node.devices[8].model, "T4");
  auto parsed = ParseMigDynamicLabel(label);
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(ValidateMigSlots(node, *parsed).ok()) << ValidateMigSlots(node, *parsed).ToString();
  EXPECT_EQ(VisibleDeviceNames(node)[5], node.devices[5].uuid);

  // The server's plan places every instance: the two in place stay, one is made at slot 5.
  geometry = ParseMigGeometry("1=3g.40gb@0,1g.10gb@4,1g.10gb@5");
  ASSERT_TRUE(geometry.ok()) << geometry.status().ToString();
  const Status applied = ApplyMigGeometry(*Open(), *geometry);
  ASSERT_TRUE(applied.ok()) << applied.ToString();
  auto after = discovery.Discover();
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->node.devices.size(), node.devices.size());
  EXPECT_EQ(after->node.devices[1].uuid, node.devices[1].uuid);
  EXPECT_EQ(after->node.devices[5].uuid, node.devices[5].uuid);
  EXPECT_EQ(after->node.devices[6].mode, DeviceMode::kMig);
  EXPECT_EQ(after->node.devices[6].model, "A100-SXM4-80GB MIG 1g.10gb");
  EXPECT_EQ(after->node.labels.at(std::string(kMigDynamicLabel)), "1@1=A100-80GB:3g.40gb@0,1g.10gb@4,1g.10gb@5");
  // A placement the model does not allow is refused before anything changes.
  geometry = ParseMigGeometry("1=3g.40gb@2");
  ASSERT_TRUE(geometry.ok());
  EXPECT_EQ(ApplyMigGeometry(*Open(), *geometry).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseMigGeometry("0=2x1g.10gb@4").status().code(), StatusCode::kInvalidArgument);
  // "1=": MIG mode stays on, every instance goes; the GPU offers only free slots.
  geometry = ParseMigGeometry("1=");
  ASSERT_TRUE(geometry.ok()) << geometry.status().ToString();
  ASSERT_TRUE(ApplyMigGeometry(*Open(), *geometry).ok());
  auto emptied = discovery.Discover();
  ASSERT_TRUE(emptied.ok());
  EXPECT_EQ(emptied->node.labels.at(std::string(kMigDynamicLabel)), "1@1=A100-80GB:");
  ASSERT_EQ(emptied->node.devices.size(), 10u);
  for (int d = 1; d <= 7; ++d) EXPECT_EQ(emptied->node.devices[d].mode, DeviceMode::kMigSlot) << d;
  EXPECT_EQ(ParseMigGeometry("0=1g.10gb@4,3g.40gb").ok(), true);
  geometry = ParseMigGeometry("1=1g.10gb@4,3g.40gb");
  EXPECT_NE(ApplyMigGeometry(*Open(), *geometry).message().find("every instance"), std::string::npos);
}

TEST_F(NvmlMigTest, ReadsMigModesAndModels) {
  auto nvml = Open();
  auto gpus = nvml->ReadGpus();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 4u);
  EXPECT_TRUE((*gpus)[0].mig_capable);
  EXPECT_FALSE((*gpus)[0].mig_enabled);
  EXPECT_EQ((*gpus)[0].model, &A100());
  EXPECT_EQ((*gpus)[0].model_name, "A100-SXM4-80GB");
  EXPECT_FALSE((*gpus)[3].mig_capable);
  EXPECT_EQ((*gpus)[3].model, nullptr);
}

TEST_F(NvmlMigTest, AppliesAGeometryAndDiscoveryOffersTheInstances) {
  auto geometry = ParseMigGeometry("0=2x1g.10gb,3g.40gb");
  ASSERT_TRUE(geometry.ok()) << geometry.status().ToString();
  {
    auto nvml = Open();
    ASSERT_TRUE(ApplyMigGeometry(*nvml, *geometry).ok());
  }
  MigGpuInfo gpu = Gpu(0);
  EXPECT_TRUE(gpu.mig_enabled);
  ASSERT_EQ(gpu.instances.size(), 3u);
  EXPECT_EQ(gpu.instances[0].placement, At("3g.40gb", 0));
  EXPECT_EQ(gpu.instances[1].placement, At("1g.10gb", 4));
  EXPECT_EQ(gpu.instances[2].placement, At("1g.10gb", 5));
  for (const MigInstanceInfo& i : gpu.instances) EXPECT_EQ(i.uuid.rfind("MIG-", 0), 0u) << i.uuid;

  NvmlDiscovery discovery(XPOOL_FAKE_NVML_PATH, "/nonexistent", "gpu-box");
  auto report = discovery.Discover();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const Node& node = report->node;
  ASSERT_EQ(node.devices.size(), 6u);  // GPU 0's three instances, GPU 1, the two T4s
  EXPECT_EQ(node.devices[0].model, "A100-SXM4-80GB MIG 3g.40gb");
  EXPECT_EQ(node.devices[0].mode, DeviceMode::kMig);
  EXPECT_EQ(node.devices[0].memory_mib, 40192);
  EXPECT_EQ(node.devices[0].compute_milli, 428);
  EXPECT_EQ(node.devices[0].max_sharers, 1);
  EXPECT_EQ(node.devices[1].uuid, gpu.instances[1].uuid);
  EXPECT_EQ(node.devices[1].index, 1);  // renumbered by position
  EXPECT_EQ(node.devices[3].index, 3);
  EXPECT_EQ(node.devices[3].model, "A100-SXM4-80GB");
  EXPECT_EQ(node.devices[3].mode, DeviceMode::kShared);
  EXPECT_EQ(node.links.Score(0, 1), kLinkSameBoard);
  EXPECT_EQ(node.links.Score(0, 3), 2 * kLinkNvlinkPerLane);  // GPU 0 ↔ GPU 1 as before
  EXPECT_NE(report->note.find("MIG"), std::string::npos) << report->note;

  // Tasks see their devices by uuid: a MIG instance's, a whole GPU's.
  std::map<int, std::string> names = VisibleDeviceNames(node);
  EXPECT_EQ(names[2], gpu.instances[2].uuid);
  EXPECT_EQ(names[3], "GPU-fake-0001");
  LaunchSpec spec;
  spec.devices = {TaskDevice{2, 0, 0}, TaskDevice{3, 0, 0}};
  TaskPaths paths;
  paths.visible_names = names;
  EXPECT_EQ(BuildTaskEnv(spec, paths, "")["CUDA_VISIBLE_DEVICES"], gpu.instances[2].uuid + ",GPU-fake-0001");
}

TEST_F(NvmlMigTest, KeepsWhatMatchesAndRepartitionsWhatDiffers) {
  {
    auto nvml = Open();
    ASSERT_TRUE(ApplyMigGeometry(*nvml, *ParseMigGeometry("1=1g.10gb,2g.20gb")).ok());
  }
  const MigGpuInfo before = Gpu(1);
  ASSERT_EQ(before.instances.size(), 2u);
  {
    auto nvml = Open();
    ASSERT_TRUE(ApplyMigGeometry(*nvml, *ParseMigGeometry("1=2g.20gb,1g.10gb")).ok());
  }
  MigGpuInfo same = Gpu(1);
  ASSERT_EQ(same.instances.size(), 2u);
  EXPECT_EQ(same.instances[0].gpu_instance_id, before.instances[0].gpu_instance_id);  // not recreated
  EXPECT_EQ(same.instances[1].uuid, before.instances[1].uuid);
  {
    auto nvml = Open();
    ASSERT_TRUE(ApplyMigGeometry(*nvml, *ParseMigGeometry("1=7g.80gb")).ok());
  }
  MigGpuInfo whole = Gpu(1);
  ASSERT_EQ(whole.instances.size(), 1u);
  EXPECT_EQ(whole.instances[0].placement, At("7g.80gb", 0));
  EXPECT_EQ(whole.instances[0].memory_mib, 80384);
}

TEST_F(NvmlMigTest, NeverDestroysABusyInstance) {
  auto nvml = Open();
  ASSERT_TRUE(nvml->EnableMig(0).ok());
  const std::vector<MigPlacement> first = {At("3g.40gb", 0), At("3g.40gb", 4)};
  ASSERT_TRUE(nvml->ApplyGeometry(0, first).ok());
  auto gpus = nvml->ReadGpus();
  ASSERT_TRUE(gpus.ok());
  const std::string busy = (*gpus)[0].instances[1].uuid;
  const std::vector<MigPlacement> second = {At("3g.40gb", 0), At("2g.20gb", 4)};
  Status s = nvml->ApplyGeometry(0, second, std::vector<std::string>{busy});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("runs a task"), std::string::npos) << s.message();
  gpus = nvml->ReadGpus();
  ASSERT_EQ((*gpus)[0].instances.size(), 2u);  // nothing changed
  EXPECT_EQ((*gpus)[0].instances[1].uuid, busy);
  // The instance that is not busy may go.
  EXPECT_TRUE(nvml->ApplyGeometry(0, std::vector<MigPlacement>{At("3g.40gb", 4)}, std::vector<std::string>{busy}).ok());
}

TEST_F(NvmlMigTest, RefusalsSayWhy) {
  auto nvml = Open();
  EXPECT_EQ(nvml->EnableMig(2).code(), StatusCode::kFailedPrecondition);  // a T4
  EXPECT_EQ(ApplyMigGeometry(*nvml, *ParseMigGeometry("3=1g.10gb")).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ApplyMigGeometry(*nvml, *ParseMigGeometry("9=1g.10gb")).code(), StatusCode::kNotFound);
  // A profile of another model, an invalid geometry: refused before the driver is asked.
  EXPECT_EQ(ApplyMigGeometry(*nvml, *ParseMigGeometry("0=1g.5gb")).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(nvml->EnableMig(0).ok());
  EXPECT_EQ(nvml->ApplyGeometry(0, std::vector<MigPlacement>{At("4g.40gb", 0), At("3g.40gb", 0)}).code(),
            StatusCode::kInvalidArgument);
  setenv("FAKE_NVML_MIG_DENIED", "1", 1);
  Status denied = nvml->EnableMig(1);
  EXPECT_EQ(denied.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(denied.message().find("root"), std::string::npos) << denied.message();
}

// The fake driver's placement rules are written apart from model/mig_profile.h's table (from the same NVIDIA
// guide): for seeded random geometries both must agree on what is valid.
TEST_F(NvmlMigTest, FakeDriverAndProfileTableAgreeOnPlacements) {
  void* lib = dlopen(XPOOL_FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr);
  auto init = reinterpret_cast<xpool_nvmlInit_v2_fn>(dlsym(lib, "nvmlInit_v2"));
  auto handle = reinterpret_cast<xpool_nvmlDeviceGetHandleByIndex_v2_fn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto set_mode = reinterpret_cast<xpool_nvmlDeviceSetMigMode_fn>(dlsym(lib, "nvmlDeviceSetMigMode"));
  auto info =
      reinterpret_cast<xpool_nvmlDeviceGetGpuInstanceProfileInfo_fn>(dlsym(lib, "nvmlDeviceGetGpuInstanceProfileInfo"));
  auto create = reinterpret_cast<xpool_nvmlDeviceCreateGpuInstanceWithPlacement_fn>(
      dlsym(lib, "nvmlDeviceCreateGpuInstanceWithPlacement"));
  auto destroy = reinterpret_cast<xpool_nvmlGpuInstanceDestroy_fn>(dlsym(lib, "nvmlGpuInstanceDestroy"));
  ASSERT_TRUE(init && handle && set_mode && info && create && destroy);
  ASSERT_EQ(init(), XPOOL_NVML_SUCCESS);
  xpool_nvmlDevice_t gpu = nullptr;
  ASSERT_EQ(handle(0, &gpu), XPOOL_NVML_SUCCESS);
  // MIG off: the driver creates nothing.
  xpool_nvmlGpuInstancePlacement_t zero = {0, 1};
  xpool_nvmlGpuInstance_t gi = nullptr;
  EXPECT_EQ(create(gpu, 19, &zero, &gi), XPOOL_NVML_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(set_mode(gpu, XPOOL_NVML_DEVICE_MIG_ENABLE, nullptr), XPOOL_NVML_SUCCESS);
  const MigModel& model = A100();
  std::vector<unsigned int> ids;
  for (const MigProfile& p : model.profiles) {
    const int selector = p.media_extensions                              ? XPOOL_NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1
                         : p.compute_slices == 1 && p.memory_slices == 2 ? XPOOL_NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2
                         : p.compute_slices == 1                         ? XPOOL_NVML_GPU_INSTANCE_PROFILE_1_SLICE
                         : p.compute_slices == 2                         ? XPOOL_NVML_GPU_INSTANCE_PROFILE_2_SLICE
                         : p.compute_slices == 3                         ? XPOOL_NVML_GPU_INSTANCE_PROFILE_3_SLICE
                         : p.compute_slices == 4                         ? XPOOL_NVML_GPU_INSTANCE_PROFILE_4_SLICE
                                                                         : XPOOL_NVML_GPU_INSTANCE_PROFILE_7_SLICE;
    xpool_nvmlGpuInstanceProfileInfo_t i = {};
    ASSERT_EQ(info(gpu, static_cast<unsigned int>(selector), &i), XPOOL_NVML_SUCCESS) << p.name;
    EXPECT_EQ(i.sliceCount, static_cast<unsigned int>(p.compute_slices)) << p.name;
    EXPECT_EQ(static_cast<int>(i.instanceCount), p.max_count) << p.name;
    ids.push_back(i.id);
  }
  std::mt19937 random(42);
  int accepted = 0, refused = 0;
  for (int round = 0; round < 150; ++round) {
    std::vector<MigPlacement> geometry;
    std::vector<xpool_nvmlGpuInstance_t> created;
    for (int step = 0; step < 6; ++step) {
      const int profile = static_cast<int>(random() % model.profiles.size());
      const int start = static_cast<int>(random() % 8);
      const bool table_says = MigPlacementFits(model, geometry, profile, start);
      xpool_nvmlGpuInstancePlacement_t where = {static_cast<unsigned int>(start),
                                                static_cast<unsigned int>(model.profiles[profile].memory_slices)};
      const xpool_nvmlReturn_t rc = create(gpu, ids[profile], &where, &gi);
      ASSERT_EQ(rc == XPOOL_NVML_SUCCESS, table_says)
          << "round " << round << ": " << model.profiles[profile].name << " at " << start << " rc " << rc;
      if (rc == XPOOL_NVML_SUCCESS) {
        geometry.push_back({profile, start});
        created.push_back(gi);
        ++accepted;
      } else {
        EXPECT_TRUE(rc == XPOOL_NVML_ERROR_INVALID_ARGUMENT || rc == XPOOL_NVML_ERROR_INSUFFICIENT_RESOURCES) << rc;
        ++refused;
      }
    }
    for (xpool_nvmlGpuInstance_t c : created) ASSERT_EQ(destroy(c), XPOOL_NVML_SUCCESS);
  }
  EXPECT_GT(accepted, 50);
  EXPECT_GT(refused, 50);
  dlclose(lib);
}

TEST(MigLayoutTest, ParsesTheGeometryFlag) {
  auto g = ParseMigGeometry("0=2x1g.10gb,3g.40gb;3=7g.80gb");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0], (std::vector<MigWanted>{{"1g.10gb", 2}, {"3g.40gb", 1}}));
  EXPECT_EQ((*g)[3], (std::vector<MigWanted>{{"7g.80gb", 1}}));
  auto empty = ParseMigGeometry("0=;1=1g.10gb@3");  // GPU 0: MIG on, no instance
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE((*empty)[0].empty());
  EXPECT_EQ((*empty)[1], (std::vector<MigWanted>{{"1g.10gb", 1, 3}}));
  for (const char* bad : {"", "0", "x=1g.10gb", "0=,", "0=2g", "0=0x1g.10gb", "0=9x1g.10gb", "0=1g.10gb;0=7g.80gb",
                          "-1=1g.10gb", "0=1g.10gb;", "0=1g.10gb@", "0=1g.10gb@x", "0=1g.10gb@99"}) {
    SCOPED_TRACE(bad);
    auto r = ParseMigGeometry(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(MigLayoutTest, PlacesDemandWhereFirstFitWouldFail) {
  const MigModel& model = A100();
  // Largest first at the lowest start puts 3g.40gb at 0 and 2g.20gb at 4, leaving 1g.10gb nowhere for the second
  // (slot 7 is no 1g start): the search moves them.
  auto placed = PlaceMigWanted(model, std::vector<MigWanted>{{"1g.10gb", 2}, {"2g.20gb", 1}, {"3g.40gb", 1}});
  ASSERT_TRUE(placed.ok()) << placed.status().ToString();
  EXPECT_TRUE(ValidateMigGeometry(model, *placed).ok());
  EXPECT_EQ(placed->size(), 4u);
  auto full = PlaceMigWanted(model, std::vector<MigWanted>{{"4g.40gb", 2}});
  EXPECT_EQ(full.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(full.status().message().find("do not fit"), std::string::npos);
  EXPECT_EQ(PlaceMigWanted(model, std::vector<MigWanted>{{"1g.5gb", 1}}).status().code(), StatusCode::kInvalidArgument);
}

TEST(MigLayoutTest, VisibleNamesOnlyWhereMigInstancesAre) {
  Node node;
  node.devices.resize(2);
  node.devices[1].index = 1;
  EXPECT_TRUE(VisibleDeviceNames(node).empty());
}

}  // namespace
}  // namespace xpool::agent
