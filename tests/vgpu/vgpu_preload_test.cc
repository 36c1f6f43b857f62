// Runs the probe programs (vgpu_probe.cc) as separate processes with LD_PRELOAD=libxpool-vgpu.so and the fake
// driver on LD_LIBRARY_PATH, and checks what they report.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr const char* kModes[] = {"direct", "dlsym", "procaddr"};

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class Child {
 public:
  Child(const std::string& binary, const std::vector<std::string>& args,
        const std::map<std::string, std::string>& extra_env, bool preload = true) {
    std::map<std::string, std::string> env = {
        {"PATH", "/usr/bin:/bin"},        {"LD_LIBRARY_PATH", XPOOL_VGPU_FAKE_DIR}, {"XPOOL_FAKE_DEVICES", "2x16384"},
        {"XPOOL_VGPU_LOG_LEVEL", "info"}, {"XPOOL_VGPU_CONTEXT_RESERVE_MIB", "0"},
    };
    if (preload) env["LD_PRELOAD"] = XPOOL_VGPU_LIBRARY;
    for (const auto& [k, v] : extra_env) {
      if (v.empty()) {
        env.erase(k);
      } else {
        env[k] = v;
      }
    }
    std::vector<std::string> argv_s = {binary};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s;
    for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
    int out[2], err[2];
    if (pipe(out) != 0 || pipe(err) != 0) abort();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      dup2(err[1], 2);
      close(out[0]);
      close(err[0]);
      std::vector<char*> argv, envp;
      for (auto& s : argv_s) argv.push_back(s.data());
      argv.push_back(nullptr);
      for (auto& s : env_s) envp.push_back(s.data());
      envp.push_back(nullptr);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(out_);
    close(err_);
  }

  // Reads stdout until `text` appears (or timeout); returns what was read.
  bool WaitForOutput(const std::string& text, int timeout_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (outcome_.out.find(text) == std::string::npos) {
      int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
      if (left <= 0) return false;
      struct pollfd p {
        out_, POLLIN, 0
      };
      if (poll(&p, 1, left) <= 0) return false;
      char buf[512];
      ssize_t n = read(out_, buf, sizeof(buf));
      if (n <= 0) return false;
      outcome_.out.append(buf, static_cast<size_t>(n));
    }
    return true;
  }

  void Kill() { kill(pid_, SIGKILL); }
  // What was read so far (WaitForOutput), without waiting for the process.
  Outcome Peek() const { return outcome_; }

  Outcome Wait() {
    char buf[4096];
    ssize_t n;
    while ((n = read(out_, buf, sizeof(buf))) > 0) outcome_.out.append(buf, static_cast<size_t>(n));
    while ((n = read(err_, buf, sizeof(buf))) > 0) outcome_.err.append(buf, static_cast<size_t>(n));
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    outcome_.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return outcome_;
  }

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int err_ = -1;
  bool reaped_ = false;
  Outcome outcome_;
};

Outcome RunProbe(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
                 bool preload = true, const std::string& binary = XPOOL_VGPU_PROBE) {
  Child child(binary, args, env, preload);
  return child.Wait();
}

std::string Describe(const Outcome& o) {
  return "exit " + std::to_string(o.exit_code) + "\nstdout:\n" + o.out + "\nstderr:\n" + o.err;
}

class TempDir {
 public:
  TempDir() {
    char dir[] = "/tmp/xpool-vgpu-test-XXXXXX";
    if (mkdtemp(dir) == nullptr) abort();
    path_ = dir;
  }
  ~TempDir() {
    std::string cmd = "rm -rf '" + path_ + "'";
    if (system(cmd.c_str()) != 0) {
    }
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

TEST(VgpuPreloadTest, GovernedEntryPointsResolveToTheHooksInEveryMode) {
  for (const char* mode : kModes) {
    SCOPED_TRACE(mode);
    Outcome o = RunProbe({mode, "alloc", "1"});
    ASSERT_EQ(o.exit_code, 0) << Describe(o);
    // Every governed symbol the fake driver has resolves into libxpool-vgpu.so (X/X, X > 0).
    size_t at = o.out.find("hooks ");
    ASSERT_NE(at, std::string::npos) << Describe(o);
    int ours = 0, total = 0;
    ASSERT_EQ(sscanf(o.out.c_str() + at, "hooks %d/%d", &ours, &total), 2);
    EXPECT_GT(total, 20);
    EXPECT_EQ(ours, total) << Describe(o);
  }
}

TEST(VgpuPreloadTest, WithoutThePreloadNothingIsHooked) {
  Outcome o = RunProbe({"dlsym", "alloc", "1"}, {}, /*preload=*/false);
  ASSERT_EQ(o.exit_code, 0) << Describe(o);
  EXPECT_NE(o.out.find("hooks 0/"), std::string::npos) << Describe(o);
}

TEST(VgpuPreloadTest, LimitHoldsOnEveryAllocationPath) {
  for (const char* mode : kModes) {
    SCOPED_TRACE(mode);
    Outcome o = RunProbe({mode, "paths", "256"}, {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "256"}});
    EXPECT_EQ(o.exit_code, 0) << Describe(o);
    // direct and dlsym reach all 14 paths; cuGetProcAddress answers the newest variants only.
    int expected = std::string(mode) == "procaddr" ? 10 : 14;
    EXPECT_NE(o.out.find("paths tested " + std::to_string(expected)), std::string::npos) << Describe(o);
  }
}

// Memory that outlives one allocate/free pair: each scenario tries to exceed the limit through one path.
TEST(VgpuPreloadTest, MemoryStreamOrderedPoolsKeepStaysCharged) {
  for (const char* mode : kModes) {
    SCOPED_TRACE(mode);
    Outcome o = RunProbe({mode, "pools", "256"}, {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "256"}});
    EXPECT_EQ(o.exit_code, 0) << Describe(o);
  }
}

TEST(VgpuPreloadTest, GraphMemoryNodesAreChargedWhenInstantiated) {
  for (const char* mode : kModes) {
    SCOPED_TRACE(mode);
    Outcome o = RunProbe({mode, "graphs", "256"}, {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "256"}});
    EXPECT_EQ(o.exit_code, 0) << Describe(o);
  }
}

TEST(VgpuPreloadTest, VmmMemoryStaysChargedWhileMappedRetainedOrExported) {
  for (const char* mode : kModes) {
    SCOPED_TRACE(mode);
    Outcome o = RunProbe({mode, "vmm", "256"}, {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "256"}});
    EXPECT_EQ(o.exit_code, 0) << Describe(o);
  }
}

TEST(VgpuPreloadTest, IpcImportedMemoryIsChargedToTheImporter) {
  // The exporter is another task's process (no limit); the importer's limit must count what it maps.
  Child exporter(XPOOL_VGPU_PROBE, {"direct", "ipcexport", "600"}, {}, /*preload=*/false);
  ASSERT_TRUE(exporter.WaitForOutput(" end", 10000));
  Outcome shown = exporter.Peek();
  size_t at = shown.out.find("handle ");
  ASSERT_NE(at, std::string::npos);
  std::string hex = shown.out.substr(at + 7, 128);
  for (const char* mode : {"direct", "dlsym"}) {
    SCOPED_TRACE(mode);
    Outcome fits = RunProbe({mode, "ipcimport", "1024", hex, "600"}, {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "1024"}});
    EXPECT_EQ(fits.exit_code, 0) << Describe(fits);
    Outcome over = RunProbe({mode, "ipcimport", "512", hex, "600"}, {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "512"}});
    EXPECT_EQ(over.exit_code, 0) << Describe(over);
  }
  exporter.Kill();
  exporter.Wait();
}

TEST(VgpuPreloadTest, ThreadsOfOneProcessShareTheLimitExactly) {
  Outcome o = RunProbe({"direct", "threads", "512"}, {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "512"}});
  EXPECT_EQ(o.exit_code, 0) << Describe(o);
}

TEST(VgpuPreloadTest, ForkedChildChargesTheTaskFromItsOwnSlot) {
  TempDir dir;
  Outcome o = RunProbe(
      {"direct", "fork", "512"},
      {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "512"}, {"XPOOL_SHARED_REGION", dir.File("region")}, {"XPOOL_JOB_ID", "fork"}});
  EXPECT_EQ(o.exit_code, 0) << Describe(o);
}

TEST(VgpuPreloadTest, ContextFootprintIsCharged) {
  Outcome o = RunProbe({"direct", "contexts", "256"},
                       {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "256"}, {"XPOOL_VGPU_CONTEXT_RESERVE_MIB", "64"}});
  EXPECT_EQ(o.exit_code, 0) << Describe(o);
}

TEST(VgpuPreloadTest, QueriesAreVirtualised) {
  for (const char* mode : kModes) {
    SCOPED_TRACE(mode);
    Outcome o = RunProbe({mode, "queries", "1024"}, {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "1024"}});
    EXPECT_EQ(o.exit_code, 0) << Describe(o);
  }
}

TEST(VgpuPreloadTest, NvmlDevicesMapToCudaOrdinalsThroughCudaVisibleDevices) {
  struct Row {
    const char* visible;
    const char* expected;
  };
  // The limit is on CUDA ordinal 0; NVML numbers the physical devices.
  const Row rows[] = {
      {"", "nvml 0 total 1024\nnvml 1 total 16384\n"},
      {"1,0", "nvml 0 total 16384\nnvml 1 total 1024\n"},
      {"GPU-00000000-0000-0000-0000-000000000001,GPU-00000000-0000-0000-0000-000000000000",
       "nvml 0 total 16384\nnvml 1 total 1024\n"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.visible);
    Outcome o = RunProbe({"dlsym", "nvmltotals"},
                         {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "1024"}, {"CUDA_VISIBLE_DEVICES", row.visible}});
    EXPECT_EQ(o.exit_code, 0) << Describe(o);
    EXPECT_NE(o.out.find(row.expected), std::string::npos) << Describe(o);
  }
}

TEST(VgpuPreloadTest, NvmlOnlyProcessNeverLoadsTheCudaDriver) {
  Outcome o = RunProbe({"nvmlonly", "2048"}, {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "2048"}}, true, XPOOL_VGPU_PROBE_NOLINK);
  EXPECT_EQ(o.exit_code, 0) << Describe(o);
}

TEST(VgpuPreloadTest, NoLimitsMeansPassThrough) {
  for (const char* mode : kModes) {
    SCOPED_TRACE(mode);
    Outcome o = RunProbe({mode, "passthrough", "16384"});
    EXPECT_EQ(o.exit_code, 0) << Describe(o);
  }
}

TEST(VgpuPreloadTest, RacingProcessesNeverSumAboveTheLimit) {
  TempDir dir;
  constexpr int kProcesses = 6;
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  uint64_t start_ms = static_cast<uint64_t>(tv.tv_sec) * 1000 + static_cast<uint64_t>(tv.tv_usec) / 1000 + 400;
  std::map<std::string, std::string> env = {
      {"XPOOL_DEVICE_MEMORY_LIMIT_0", "1000"}, {"XPOOL_SHARED_REGION", dir.File("region")}, {"XPOOL_JOB_ID", "race"}};
  std::vector<std::unique_ptr<Child>> children;
  for (int i = 0; i < kProcesses; ++i) {
    children.push_back(std::make_unique<Child>(
        XPOOL_VGPU_PROBE, std::vector<std::string>{"direct", "race", "8", std::to_string(start_ms), "1500"}, env));
  }
  uint64_t total = 0;
  for (auto& child : children) {
    ASSERT_TRUE(child->WaitForOutput("allocated", 10000));
  }
  for (auto& child : children) {
    Outcome o = child->Wait();
    ASSERT_EQ(o.exit_code, 0) << Describe(o);
    unsigned long long bytes = 0;
    size_t at = o.out.find("allocated ");
    ASSERT_NE(at, std::string::npos);
    ASSERT_EQ(sscanf(o.out.c_str() + at, "allocated %llu", &bytes), 1);
    total += bytes;
  }
  EXPECT_LE(total, 1000ull << 20);
  EXPECT_GT(total, (1000ull - 8) << 20);  // together they filled it
}

TEST(VgpuPreloadTest, KilledProcessMemoryComesBack) {
  TempDir dir;
  std::map<std::string, std::string> env = {
      {"XPOOL_DEVICE_MEMORY_LIMIT_0", "1024"}, {"XPOOL_SHARED_REGION", dir.File("region")}, {"XPOOL_JOB_ID", "kill"}};
  Child holder(XPOOL_VGPU_PROBE, {"direct", "hold", "768"}, env);
  ASSERT_TRUE(holder.WaitForOutput("held 0", 10000));
  Outcome refused = RunProbe({"direct", "alloc", "512"}, env);
  EXPECT_EQ(refused.exit_code, 2) << Describe(refused);  // the holder is alive: 768 + 512 > 1024
  holder.Kill();
  holder.Wait();
  Outcome granted = RunProbe({"direct", "alloc", "512"}, env);
  EXPECT_EQ(granted.exit_code, 0) << Describe(granted);
}

TEST(VgpuPreloadTest, TasksDoNotShareAndCorruptRegionsFallBackPerProcess) {
  TempDir dir;
  std::map<std::string, std::string> task_a = {
      {"XPOOL_DEVICE_MEMORY_LIMIT_0", "1024"}, {"XPOOL_SHARED_REGION", dir.File("region")}, {"XPOOL_JOB_ID", "a"}};
  Child holder(XPOOL_VGPU_PROBE, {"direct", "hold", "768"}, task_a);
  ASSERT_TRUE(holder.WaitForOutput("held 0", 10000));
  // Another task pointed at the same file: refused with a log line, enforced per process, never charged to task a.
  std::map<std::string, std::string> task_b = task_a;
  task_b["XPOOL_JOB_ID"] = "b";
  Outcome foreign = RunProbe({"direct", "alloc", "512"}, task_b);
  EXPECT_EQ(foreign.exit_code, 0) << Describe(foreign);
  EXPECT_NE(foreign.err.find("refusing shared region"), std::string::npos) << Describe(foreign);
  Outcome over = RunProbe({"direct", "alloc", "1025"}, task_b);
  EXPECT_EQ(over.exit_code, 2) << Describe(over);  // the per-process limit still holds
  holder.Kill();
  holder.Wait();

  std::string corrupt = dir.File("corrupt");
  FILE* f = fopen(corrupt.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("this is not an accounting region", f);
  fclose(f);
  std::map<std::string, std::string> env = {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "1024"}, {"XPOOL_SHARED_REGION", corrupt}};
  Outcome ok = RunProbe({"direct", "alloc", "1000"}, env);
  EXPECT_EQ(ok.exit_code, 0) << Describe(ok);
  EXPECT_NE(ok.err.find("refusing shared region"), std::string::npos) << Describe(ok);
  Outcome refused = RunProbe({"direct", "alloc", "1025"}, env);
  EXPECT_EQ(refused.exit_code, 2) << Describe(refused);
}

// Images built for HAMi run unchanged: HAMi-core's variables set the limits and the shared file.
TEST(VgpuPreloadTest, HamiCoreVariablesLimitAnUnchangedImage) {
  for (const char* mode : kModes) {
    SCOPED_TRACE(mode);
    Outcome o = RunProbe({mode, "paths", "256"}, {{"CUDA_DEVICE_MEMORY_LIMIT_0", "256m"}});
    EXPECT_EQ(o.exit_code, 0) << Describe(o);
  }
  Outcome all = RunProbe({"direct", "paths", "256"}, {{"CUDA_DEVICE_MEMORY_LIMIT", "256m"}});  // every device
  EXPECT_EQ(all.exit_code, 0) << Describe(all);
  Outcome queries = RunProbe({"direct", "queries", "1024"}, {{"CUDA_DEVICE_MEMORY_LIMIT_0", "1g"}});
  EXPECT_EQ(queries.exit_code, 0) << Describe(queries);
  // xpool's variable wins over HAMi-core's for the same device.
  Outcome both = RunProbe({"direct", "alloc", "300"},
                          {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "256"}, {"CUDA_DEVICE_MEMORY_LIMIT_0", "8g"}});
  EXPECT_EQ(both.exit_code, 2) << Describe(both);
}

// The accounting file on a host path (HAMi-core's CUDA_DEVICE_MEMORY_SHARED_CACHE, or a directory the device plugin
// mounts): processes of the container share one limit, and a killed process's memory comes back.
TEST(VgpuPreloadTest, HostPathRegionIsSharedAndReclaimsKilledProcesses) {
  TempDir dir;
  const std::map<std::string, std::string> envs[] = {
      {{"CUDA_DEVICE_MEMORY_LIMIT", "1024m"}, {"CUDA_DEVICE_MEMORY_SHARED_CACHE", dir.File("hami.cache")}},
      {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "1024"}, {"XPOOL_SHARED_REGION_DIR", dir.File("")}, {"XPOOL_JOB_ID", "ns/pod"}},
  };
  for (const auto& env : envs) {
    Child holder(XPOOL_VGPU_PROBE, {"direct", "hold", "768"}, env);
    ASSERT_TRUE(holder.WaitForOutput("held 0", 10000));
    Outcome refused = RunProbe({"direct", "alloc", "512"}, env);
    EXPECT_EQ(refused.exit_code, 2) << Describe(refused);  // one limit for both processes
    holder.Kill();
    holder.Wait();
    Outcome granted = RunProbe({"direct", "alloc", "512"}, env);
    EXPECT_EQ(granted.exit_code, 0) << Describe(granted);
  }
  EXPECT_EQ(access(dir.File("hami.cache").c_str(), F_OK), 0);
  EXPECT_EQ(access(dir.File("ns_pod.0.region").c_str(), F_OK), 0);
}

TEST(VgpuPreloadTest, MissingDriverDoesNotCrashTheProgram) {
  Outcome o = RunProbe({"missing"},
                       {{"LD_LIBRARY_PATH", "/nonexistent"},
                        {"XPOOL_VGPU_CUDA_LIBRARY", "/nonexistent/libcuda.so.1"},
                        {"XPOOL_VGPU_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"},
                        {"XPOOL_DEVICE_MEMORY_LIMIT_0", "1024"},
                        {"XPOOL_DEVICE_CORE_LIMIT_0", "50"}},
                       true, XPOOL_VGPU_PROBE_NOLINK);
  EXPECT_EQ(o.exit_code, 0) << Describe(o);
  EXPECT_NE(o.out.find("survived"), std::string::npos) << Describe(o);
}

TEST(VgpuPreloadTest, AdoptsTheDriverTheProgramOpenedWhenItsOwnLoadFails) {
  // The program dlopens libcuda.so.1 / libnvidia-ml.so.1 from a place the library does not look: the hooks take
  // the real functions from the program's handles, and the limits still hold.
  std::map<std::string, std::string> env = {{"XPOOL_VGPU_CUDA_LIBRARY", "/nonexistent/libcuda.so.1"},
                                            {"XPOOL_VGPU_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"},
                                            {"XPOOL_DEVICE_MEMORY_LIMIT_0", "256"}};
  Outcome paths = RunProbe({"dlsym", "paths", "256"}, env);
  EXPECT_EQ(paths.exit_code, 0) << Describe(paths);
  env["XPOOL_DEVICE_MEMORY_LIMIT_0"] = "1024";
  Outcome queries = RunProbe({"dlsym", "queries", "1024"}, env);
  EXPECT_EQ(queries.exit_code, 0) << Describe(queries);
}

TEST(VgpuPreloadTest, BadLimitValueFailsClosedWithAClearError) {
  Outcome o = RunProbe({"direct", "alloc", "1"}, {{"XPOOL_DEVICE_MEMORY_LIMIT_0", "lots"}});
  EXPECT_EQ(o.exit_code, 2) << Describe(o);
  EXPECT_NE(o.err.find("XPOOL_DEVICE_MEMORY_LIMIT_0='lots' is not a number of MiB"), std::string::npos) << Describe(o);
}

TEST(VgpuPreloadTest, ComputeLimitThrottlesLaunches) {
  // The fake NVML reports 90 % SM utilisation for the process: a 20 % limit must cut launches to a trickle.
  Outcome limited =
      RunProbe({"direct", "throttle", "1500"}, {{"XPOOL_DEVICE_CORE_LIMIT_0", "20"}, {"XPOOL_FAKE_SM_UTIL", "90"}});
  ASSERT_EQ(limited.exit_code, 0) << Describe(limited);
  Outcome free = RunProbe({"direct", "throttle", "300"}, {{"XPOOL_FAKE_SM_UTIL", "90"}});
  ASSERT_EQ(free.exit_code, 0) << Describe(free);
  unsigned long long n_limited = 0, n_free = 0;
  ASSERT_EQ(sscanf(limited.out.c_str() + limited.out.find("launches "), "launches %llu", &n_limited), 1);
  ASSERT_EQ(sscanf(free.out.c_str() + free.out.find("launches "), "launches %llu", &n_free), 1);
  EXPECT_LT(n_limited, 1000u) << "throttled launches in 1.5 s";
  EXPECT_GT(n_free, 10000u) << "unthrottled launches in 0.3 s";
}

TEST(VgpuPreloadTest, ComputeLimitConvergesToItsShareInAClosedLoop) {
  // The fake NVML models a device running 10^6 blocks/s: the utilisation it reports is what the launched blocks
  // would take. Unthrottled the probe would saturate it; with a 30 % limit the rate settles near 3*10^5 blocks/s.
  Outcome o = RunProbe({"direct", "throttle", "4500"},
                       {{"XPOOL_DEVICE_CORE_LIMIT_0", "30"}, {"XPOOL_FAKE_SM_CAPACITY", "1000000"}});
  ASSERT_EQ(o.exit_code, 0) << Describe(o);
  double late_rate = 0;
  ASSERT_EQ(sscanf(o.out.c_str() + o.out.find("late_rate "), "late_rate %lf", &late_rate), 1) << Describe(o);
  EXPECT_NEAR(late_rate / 1e6 * 100, 30.0, 5.0) << Describe(o);
}

}  // namespace
