// The `xpool` CLI end to end, as a kubectl user drives it: one `xpool up` (simulated 4xA100-80GB, real task
// processes) for the whole suite, and the real binary run for every command (RunCli). Covers the output formats
// (-o wide|json|yaml in every spelling), `get job 21` / `get jobs 21` / `describe 21` / `describe job 21`,
// `--version`, global --server/--token before the command, bare `xpool nodes`, one unit style (GiB with one
// decimal, CPU in cores, GPU in percent) in get nodes, top and tenants, the REASON column and describe's
// per-replica exit and node after a job ended, enforced quotas in devices, and bad input (unknown -o value,
// command or resource: exit code 2 with a clear error; no token; another tenant's job).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "support/rest_client.h"
#include "support/xpool_process.h"

namespace {

namespace fs = std::filesystem;
using xpool::testing::Json;
using xpool::testing::RunCli;

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(xpool::testing::TempDir("cli"));
    up_ = new xpool::testing::UpProcess(*dir_);
    if (!up_->Start({"--simulate", "4xA100-80GB", "--node-name", "cli-node"})) {
      ADD_FAILURE() << "xpool up did not come up; log:\n" << up_->Log();
    }
  }
  static void TearDownTestSuite() {
    delete up_;  // SIGTERM, then SIGKILL after 10 s
    std::error_code ec;
    fs::remove_all(*dir_, ec);
    delete dir_;
  }
  void SetUp() override {
    ASSERT_GT(up_->port(), 0) << up_->Log();
    rest_ = std::make_unique<xpool::testing::RestClient>(up_->port(), up_->token());
    rest_->set_diagnostics([] { return "log:\n" + up_->Log(); });
  }

  // `xpool ARGS` with the server and token in the environment (HOME without a config file).
  std::string Cli(const std::vector<std::string>& args, int* code, const std::string& token = "") {
    return RunCli(args, code, /*with_stderr=*/true,
                  "HOME=" + dir_->string() + " XPOOL_SERVER=" + up_->url() +
                      " XPOOL_TOKEN=" + (token.empty() ? up_->token() : token));
  }
  // The same, expecting exit code 0.
  std::string Ok(const std::vector<std::string>& args) {
    int code = -1;
    std::string out = Cli(args, &code);
    EXPECT_EQ(code, 0) << "xpool " << Joined(args) << ":\n" << out;
    return out;
  }
  static std::string Joined(const std::vector<std::string>& args) {
    std::string s;
    for (const std::string& a : args) s += a + " ";
    return s;
  }
  int64_t Submit(const std::string& name, const std::string& command) {
    return rest_->Submit(xpool::testing::HalfGpuJob(name, command));
  }

  static fs::path* dir_;
  static xpool::testing::UpProcess* up_;
  std::unique_ptr<xpool::testing::RestClient> rest_;
};

fs::path* CliTest::dir_ = nullptr;
xpool::testing::UpProcess* CliTest::up_ = nullptr;

TEST_F(CliTest, OutputFormatsInEverySpelling) {
  const int64_t id = Submit("formats", "sleep 60");
  rest_->WaitState(id, "running");
  const std::string sid = std::to_string(id);
  for (const std::vector<std::string>& args : {std::vector<std::string>{"get", "job", sid, "-o", "json"},
                                               {"get", "jobs", sid, "-ojson"},
                                               {"get", "job", sid, "-o=json"},
                                               {"get", "job", sid, "--output", "json"},
                                               {"get", "job", sid, "--output=json"}}) {
    SCOPED_TRACE(Joined(args));
    const Json j = Json::parse(Ok(args), nullptr, false);
    ASSERT_TRUE(j.is_object()) << Ok(args);
    EXPECT_EQ(j["id"], id);
    EXPECT_EQ(j["state"], "running");
  }
  const std::string yaml = Ok({"get", "job", sid, "-o", "yaml"});
  EXPECT_NE(yaml.find("\nstate: running"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("name: formats"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find('{'), std::string::npos) << "block style, not JSON: " << yaml;

  const std::string wide = Ok({"get", "jobs", "-owide"});
  EXPECT_NE(wide.find("RESOURCES"), std::string::npos) << wide;
  EXPECT_NE(wide.find("cli-node"), std::string::npos) << wide;
  const std::string one = Ok({"get", "job", sid});
  EXPECT_NE(one.find("formats"), std::string::npos) << one;
  EXPECT_EQ(std::count(one.begin(), one.end(), '\n'), 2) << "a header and one row: " << one;

  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"describe", sid}, {"describe", "job", sid}, {"describe", "jobs", sid}}) {
    SCOPED_TRACE(Joined(args));
    const std::string d = Ok(args);
    EXPECT_NE(d.find("Name:        formats"), std::string::npos) << d;
    EXPECT_NE(d.find("Events:"), std::string::npos) << d;
  }
  EXPECT_TRUE(Json::parse(Ok({"describe", sid, "-o", "json"}), nullptr, false).contains("events"));
  EXPECT_NE(Ok({"top", "-o", "yaml"}).find("nodes:"), std::string::npos);
  EXPECT_TRUE(Json::parse(Ok({"top", "-ojson"}), nullptr, false).contains("nodes"));
  EXPECT_NE(Ok({"get", "nodes", "cli-node", "-o", "yaml"}).find("name: cli-node"), std::string::npos);
  Ok({"cancel", sid});
}

TEST_F(CliTest, GlobalFlagsVersionAndBareNodes) {
  int code = -1;
  // No server or token in the environment: the global flags before the command supply them.
  std::string out = RunCli({"--server", up_->url(), "--token", up_->token(), "get", "nodes"}, &code, true,
                           "HOME=" + dir_->string() + " XPOOL_SERVER= XPOOL_TOKEN=");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("cli-node"), std::string::npos) << out;
  out = RunCli({"--server=" + up_->url(), "--token=" + up_->token(), "nodes"}, &code, true,
               "HOME=" + dir_->string() + " XPOOL_SERVER= XPOOL_TOKEN=");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("cli-node"), std::string::npos) << out;
  EXPECT_NE(out.find("Ready"), std::string::npos) << out;

  out = RunCli({"--version"}, &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.rfind("xpool ", 0), 0u) << out;
  EXPECT_EQ(RunCli({"version"}, &code), out);

  const std::string help = RunCli({"--help"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(help.find("sim replay"), std::string::npos) << help;
  EXPECT_NE(help.find("--server URL"), std::string::npos) << help;
  const std::string up_help = RunCli({"up", "--help"}, &code);
  EXPECT_NE(up_help.find("placement policy (default: default"), std::string::npos) << up_help;
  EXPECT_EQ(up_help.find("best-fit"), std::string::npos) << up_help;
  EXPECT_NE(up_help.find("else any free port"), std::string::npos) << up_help;
  EXPECT_NE(RunCli({"get", "--help"}, &code).find("  -o VALUE"), std::string::npos);
}

TEST_F(CliTest, OneUnitStyleInNodesTopAndTenants) {
  const int64_t id = Submit("units", "sleep 60");
  rest_->WaitState(id, "running");
  const std::string nodes = Ok({"get", "nodes"});
  EXPECT_NE(nodes.find("CPU(cores)"), std::string::npos) << nodes;
  EXPECT_NE(nodes.find("MEMORY(GiB)"), std::string::npos) << nodes;
  // "0.1/8" cores and "0.1/31.2" GiB: no "m" or "Mi" suffixes.
  EXPECT_TRUE(
      std::regex_search(nodes, std::regex(R"(cli-node +Ready +4 +[0-9.]+/[0-9.]+ +[0-9]+\.[0-9]/[0-9]+\.[0-9]\n)")))
      << nodes;
  EXPECT_EQ(nodes.find("Mi"), std::string::npos) << nodes;

  const std::string top = Ok({"top"});
  EXPECT_NE(top.find("GPU%"), std::string::npos) << top;
  EXPECT_NE(top.find("40.0/80.0"), std::string::npos) << "half of an 80 GiB device: " << top;
  EXPECT_NE(top.find("0.0/80.0"), std::string::npos) << top;
  EXPECT_EQ(top.find("Gi/"), std::string::npos) << top;

  Ok({"tenants", "create", "units-team", "--quota", R"({"devices": 2, "device_memory": "80Gi", "cpu": 4})",
      "--guaranteed", R"({"devices": 1})"});
  const std::string tenants = Ok({"get", "tenants"});
  EXPECT_NE(tenants.find("devices=2 gpumem=80.0GiB cpu=4"), std::string::npos) << tenants;
  EXPECT_NE(tenants.find("devices=1"), std::string::npos) << tenants;
  EXPECT_EQ(tenants.find('{'), std::string::npos) << "no raw JSON: " << tenants;
  EXPECT_EQ(Ok({"tenants"}), tenants);
  Ok({"cancel", std::to_string(id)});
}

TEST_F(CliTest, ReasonsExitsAndWhereAFinishedJobRan) {
  const int64_t failed = Submit("exit3", "echo failing; exit 3");
  const int64_t killed = Submit("killed", "kill -9 $$");
  const int64_t running = Submit("to-cancel", "sleep 60");
  rest_->WaitState(failed, "failed");
  rest_->WaitState(killed, "failed");
  rest_->WaitState(running, "running");
  Ok({"cancel", std::to_string(running)});

  const std::string table = Ok({"get", "jobs"});
  EXPECT_TRUE(std::regex_search(table, std::regex(R"(exit3 .* failed .* replica 0 exited with code 3\n)"))) << table;
  EXPECT_TRUE(
      std::regex_search(table, std::regex(R"(killed .* failed .* replica 0 was killed by signal 9 \(SIGKILL\))")))
      << table;
  EXPECT_TRUE(std::regex_search(table, std::regex(R"(to-cancel .* cancelled .* cancelled by admin)"))) << table;

  const std::string d = Ok({"describe", std::to_string(failed)});
  EXPECT_NE(d.find("Reason:      replica 0 exited with code 3"), std::string::npos) << d;
  EXPECT_TRUE(std::regex_search(d, std::regex(R"(\n0 +failed +cli-node +code 3\n)"))) << d;
  const std::string k = Ok({"describe", "job", std::to_string(killed)});
  EXPECT_TRUE(std::regex_search(k, std::regex(R"(\n0 +failed +cli-node +signal 9 \(SIGKILL\)\n)"))) << k;
}

TEST_F(CliTest, QuotasAreEnforcedAndShownInDevices) {
  const std::string token = rest_->TenantWithToken({{"name", "quota-team"}, {"quota", {{"devices", 1}}}});
  ASSERT_FALSE(token.empty());
  Json whole = xpool::testing::HalfGpuJob("whole", "sleep 60");
  whole["resources"]["gpucores"] = 100;
  const int64_t first = rest_->Submit(whole, token);
  const int64_t second = rest_->Submit(whole, token);
  rest_->WaitState(first, "running");
  Json waiting = rest_->WaitFor(second, "waiting on its tenant's quota", [](const Json& j) {
    return j.value("reason", "").find("at its gpu limit") != std::string::npos;
  });
  EXPECT_EQ(waiting["state"], "queued");
  int code = -1;
  const std::string table = Cli({"get", "jobs"}, &code, token);
  EXPECT_EQ(code, 0) << table;
  EXPECT_NE(table.find("tenant quota-team at its gpu limit (1/1 devices)"), std::string::npos) << table;
  Cli({"cancel", std::to_string(second)}, &code, token);
  Cli({"cancel", std::to_string(first)}, &code, token);
}

TEST_F(CliTest, BadInputIsAClearErrorWithExitCode2) {
  const struct {
    std::vector<std::string> args;
    const char* error;
  } rows[] = {
      {{"get", "jobs", "-o", "xml"}, "unknown output format \"xml\" (wide, json or yaml)"},
      {{"top", "-o", "xml"}, "unknown output format \"xml\""},
      {{"describe", "1", "-otable"}, "unknown output format \"table\""},
      {{"nodes", "-o", "csv"}, "unknown output format \"csv\""},
      {{"frobnicate"}, "unknown command \"frobnicate\""},
      {{"get", "widgets"}, "unknown resource \"widgets\""},
      {{"get"}, "usage: xpool get"},
      {{"describe"}, "usage: xpool describe"},
      {{"get", "jobs", "--colour"}, "unknown flag --colour"},
      {{"--server"}, "flag --server needs a value"},
      {{"--bogus", "get", "jobs"}, "unknown flag --bogus before the command"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(Joined(r.args));
    int code = -1;
    const std::string out = Cli(r.args, &code);
    EXPECT_EQ(code, 2) << out;
    EXPECT_NE(out.find(r.error), std::string::npos) << out;
  }
}

// The server's own flags refuse what they cannot use before anything starts (the agents' priority here).
TEST_F(CliTest, ServerRefusesAnAgentNiceOutsideItsRange) {
  for (const char* nice : {"20", "-1"}) {
    SCOPED_TRACE(nice);
    int code = -1;
    const std::string out = Cli(
        {"server", "--listen", "127.0.0.1:0", "--state-dir", (*dir_ / "nice").string(), "--agent-nice", nice}, &code);
    EXPECT_NE(code, 0) << out;
    EXPECT_NE(out.find("--agent-nice must be 0..19, got " + std::string(nice)), std::string::npos) << out;
  }
}

// GET /jobs/{id} (which now carries the replicas' exits and nodes) as the CLI reads it: no token is refused,
// another tenant's job is not found, exactly like a missing one.
TEST_F(CliTest, NoTokenAndAnotherTenantsJob) {
  const int64_t id = Submit("private", "sleep 60");
  rest_->WaitState(id, "running");
  int code = -1;
  std::string out = RunCli({"get", "job", std::to_string(id)}, &code, true,
                           "HOME=" + dir_->string() + " XPOOL_SERVER=" + up_->url() + " XPOOL_TOKEN=");
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("HTTP 401"), std::string::npos) << out;
  const std::string other = rest_->TenantWithToken({{"name", "other-team"}});
  ASSERT_FALSE(other.empty());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"describe", std::to_string(id)}, {"get", "job", std::to_string(id)}}) {
    out = Cli(args, &code, other);
    EXPECT_EQ(code, 1) << out;
    EXPECT_NE(out.find("HTTP 404: job " + std::to_string(id) + " not found"), std::string::npos) << out;
    EXPECT_EQ(out.find("private"), std::string::npos) << out;
  }
  Ok({"cancel", std::to_string(id)});
}

// Several jobs in one submit (POST /api/v1/jobs:batch, one transaction): a multi-document YAML file, and an array
// with --count (copy i named NAME-i, JOB_ARRAY_INDEX=i); a bad document refuses the whole file, naming it.
TEST_F(CliTest, MultiDocumentFilesAndArraysSubmitInOneBatch) {
  auto jobs_named = [&](const std::string& prefix) {
    std::vector<Json> out;
    const Json all = rest_->Get("/api/v1/jobs?limit=1000");
    for (const Json& j : all["jobs"]) {
      if (j.value("name", "").rfind(prefix, 0) == 0) out.push_back(j);
    }
    return out;
  };
  const fs::path two = *dir_ / "two.yaml";
  std::ofstream(two) << "name: batch-a\nresources: {cpu: 100m}\ncommand: sleep 1\n---\n"
                        "name: batch-b  # a second document\nresources: {cpu: 100m}\ncommand: |\n  echo two\n";
  std::string out = Ok({"submit", "-f", two.string()});
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;
  EXPECT_EQ(jobs_named("batch-").size(), 2u);

  const fs::path one = *dir_ / "array.yaml";
  std::ofstream(one) << "name: arr\nresources: {cpu: 100m}\ncommand: echo $JOB_ARRAY_INDEX\n";
  out = Ok({"submit", "-f", one.string(), "--count", "3"});
  std::vector<Json> array = jobs_named("arr-");
  ASSERT_EQ(array.size(), 3u) << out;
  for (const Json& j : array) {
    const std::string index = j["name"].get<std::string>().substr(4);
    EXPECT_EQ(j["spec"]["env"]["JOB_ARRAY_INDEX"], index) << j.dump();
  }

  const fs::path bad = *dir_ / "bad.yaml";
  std::ofstream(bad)
      << "name: bad-a\nresources: {cpu: 100m}\ncommand: x\n---\nname: bad-b\nresources: {gpucores: 101}\n"
         "command: x\n";
  int code = -1;
  out = Cli({"submit", "-f", bad.string()}, &code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("document 2"), std::string::npos) << out;
  EXPECT_TRUE(jobs_named("bad-").empty()) << "a refused file stores nothing";
  out = Cli({"submit", "-f", one.string(), "--count", "0"}, &code);
  EXPECT_EQ(code, 2) << out;
}

}  // namespace
