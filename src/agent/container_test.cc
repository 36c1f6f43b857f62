#include "agent/container.h"

#include <gtest/gtest.h>

namespace xpool::agent {
namespace {

LaunchSpec ImageSpec() {
  LaunchSpec s;
  s.task_id = "job7-r1";
  s.argv = {"python3", "train.py", "--epochs", "2"};
  s.workdir = "/data/run";
  s.image = "docker.io/library/python:3.12";
  s.vendor = Vendor::kNvidia;
  s.devices = {{2, 0, 0}, {5, 0, 0}};
  return s;
}

TEST(ContainerTest, ThePodmanCommandLine) {
  const LaunchSpec spec = ImageSpec();
  const std::map<std::string, std::string> env = {{"CUDA_VISIBLE_DEVICES", "2,5"},
                                                  {"NVIDIA_VISIBLE_DEVICES", "2,5"},
                                                  {"MASTER_ADDR", "10.0.0.2"},
                                                  {"SECRET", "s3cr3t"},
                                                  {"PATH", "/usr/bin"},
                                                  {"LD_PRELOAD", "/opt/xpool/libxpool-vgpu.so"}};
  ContainerCommand c = PodmanArgv("/usr/bin/podman", spec, env, "/var/agent/job7-r1", "/opt/xpool/libxpool-vgpu.so");
  const std::vector<std::string> want = {"/usr/bin/podman",
                                         "run",
                                         "--rm",
                                         "--name",
                                         "xpool-job7-r1",
                                         "--network",
                                         "host",
                                         "--ipc",
                                         "host",
                                         "--volume",
                                         "/data/run:/data/run",
                                         "--workdir",
                                         "/data/run",
                                         "--volume",
                                         "/var/agent/job7-r1:/var/agent/job7-r1",
                                         "--volume",
                                         "/opt/xpool/libxpool-vgpu.so:/opt/xpool/libxpool-vgpu.so:ro",
                                         "--device",
                                         "nvidia.com/gpu=2",
                                         "--device",
                                         "nvidia.com/gpu=5",
                                         "--env",
                                         "CUDA_VISIBLE_DEVICES=0,1",
                                         "--env",
                                         "LD_PRELOAD",
                                         "--env",
                                         "MASTER_ADDR",
                                         "--env",
                                         "NVIDIA_VISIBLE_DEVICES=0,1",
                                         "--env",
                                         "SECRET",
                                         "docker.io/library/python:3.12",
                                         "python3",
                                         "train.py",
                                         "--epochs",
                                         "2"};
  EXPECT_EQ(c.argv, want);
  EXPECT_TRUE(c.notes.empty());
  for (const std::string& arg : c.argv) EXPECT_EQ(arg.find("s3cr3t"), std::string::npos) << "values stay off argv";
}

// On a node with MIG instances device positions are not NVML's indices: every device is named by its uuid.
TEST(ContainerTest, OnAMigNodeDevicesArePassedByUuid) {
  LaunchSpec spec = ImageSpec();
  spec.devices = {{1, 0, 0}, {3, 0, 0}};
  const std::map<int, std::string> names = {{0, "MIG-aaaa"}, {1, "MIG-bbbb"}, {2, "MIG-cccc"}, {3, "GPU-dddd"}};
  ContainerCommand c = PodmanArgv("podman", spec, {{"CUDA_VISIBLE_DEVICES", "MIG-bbbb,GPU-dddd"}}, "/t", "", names);
  std::vector<std::string> devices, envs;
  for (size_t i = 0; i + 1 < c.argv.size(); ++i) {
    if (c.argv[i] == "--device") devices.push_back(c.argv[i + 1]);
    if (c.argv[i] == "--env") envs.push_back(c.argv[i + 1]);
  }
  EXPECT_EQ(devices, (std::vector<std::string>{"nvidia.com/gpu=MIG-bbbb", "nvidia.com/gpu=GPU-dddd"}));
  EXPECT_EQ(envs, (std::vector<std::string>{"CUDA_VISIBLE_DEVICES=0,1"}));  // inside, its devices are 0..n-1
}

TEST(ContainerTest, NoDevicesNoLibraryAndOtherVendors) {
  LaunchSpec spec = ImageSpec();
  spec.devices.clear();
  ContainerCommand c = PodmanArgv("podman", spec, {}, "/t", "");
  for (const std::string& arg : c.argv) EXPECT_EQ(arg.find("--device"), std::string::npos);
  EXPECT_EQ(c.argv[c.argv.size() - 5], "docker.io/library/python:3.12");

  spec = ImageSpec();
  spec.vendor = Vendor::kAscend;
  c = PodmanArgv("podman", spec, {}, "/t", "");
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("not passed"), std::string::npos) << c.notes[0];
}

TEST(ContainerTest, NoPodmanSaysTheJobCanNeverRunHere) {
  const std::string why = NoPodmanReason(ImageSpec(), "/usr/bin:/bin");
  EXPECT_NE(why.find("podman is not installed"), std::string::npos) << why;
  EXPECT_NE(why.find("can never run here"), std::string::npos) << why;
  EXPECT_NE(why.find("docker.io/library/python:3.12"), std::string::npos) << why;
}

}  // namespace
}  // namespace xpool::agent
