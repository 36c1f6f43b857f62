// Runs `xpool sim validate` for the default openb workload with BestFit and FGD over seeds 42-44 and checks
// both means within ±1 point of the FGD paper's published ones. Reads XPOOL_TRACE_DIR (default
// ../shared/data/traces); skips with a message when the trace is absent.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>

namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string RunCommand(const std::string& command, int* status) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *status = -1;
    return out;
  }
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  *status = ::pclose(pipe);
  return out;
}

TEST(SimValidateTest, BestFitAndFgdReproduceThePaperOnDefault) {
  const char* env = std::getenv("XPOOL_TRACE_DIR");
  const std::string trace_dir = env ? env : "../shared/data/traces";
  if (!Exists(trace_dir + "/alibaba-gpu-v2023/openb_pod_list_default.csv") ||
      !Exists(trace_dir + "/fgd-expected-results/analysis_allo_discrete.csv")) {
    GTEST_SKIP() << "trace data not found under " << trace_dir << " (set XPOOL_TRACE_DIR)";
  }
  const char* bin = std::getenv("XPOOL_BINARY_DIR");
  const std::string xpool = std::string(bin ? bin : ".") + "/bin/xpool";
  ASSERT_TRUE(Exists(xpool)) << xpool;
  int status = 0;
  const std::string out = RunCommand(xpool + " sim validate --trace-dir '" + trace_dir +
                                         "' --workloads openb_pod_list_default --policy best-fit,fgd "
                                         "--seeds 42-44 --jobs 2 --tolerance-centi 100 2>&1",
                                     &status);
  SCOPED_TRACE(out);
  // Every row of the table: workload policy ours% paper% diff.
  int rows = 0;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string workload, policy, ours, paper;
    double diff = 0;
    if (!(f >> workload >> policy >> ours >> paper >> diff) || workload != "openb_pod_list_default") continue;
    ++rows;
    EXPECT_LE(std::abs(diff), 1.0) << policy;
  }
  EXPECT_EQ(rows, 2);
  EXPECT_EQ(status, 0);
}

}  // namespace
