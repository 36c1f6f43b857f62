#include "model/job_spec.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "model/device.h"
#include "model/internal/job_spec_parse.h"

namespace xpool {
namespace {

constexpr const char* kFullYaml = R"(
name: train-resnet
tenant: vision
priority: high
replicas: 2
resources:
  cpu: 1500m
  memory: 16Gi
  gpu: 2
  gpumem: 20Gi
  gpucores: 50
  gpu-type: [A100, H100]
  gpu-type-exclude: T4
  gpu-uuid: GPU-1234
  numa-bind: true
  vendor: nvidia
command: ["python", "train.py", "--epochs=10"]
workdir: /data/run1
env:
  EPOCHS: 10
  NAME: "resnet"
preemptible: true
checkpoint:
  grace: 5m
)";

TEST(JobSpecTest, ParsesEveryField) {
  Result<JobSpec> spec = ParseJobSpec(kFullYaml);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name, "train-resnet");
  EXPECT_EQ(spec->tenant, "vision");
  EXPECT_EQ(spec->priority, kPriorityHigh);
  EXPECT_EQ(spec->replicas, 2);
  EXPECT_EQ(spec->resources.cpu_milli, 1500);
  EXPECT_EQ(spec->resources.memory_mib, 16384);
  EXPECT_EQ(spec->resources.gpu, 2);
  EXPECT_EQ(spec->resources.gpumem_mib, 20480);
  EXPECT_EQ(spec->resources.gpucores, 50);
  EXPECT_EQ(spec->resources.gpu_type, (std::vector<std::string>{"A100", "H100"}));
  EXPECT_EQ(spec->resources.gpu_type_exclude, (std::vector<std::string>{"T4"}));
  EXPECT_EQ(spec->resources.gpu_uuid, (std::vector<std::string>{"GPU-1234"}));
  EXPECT_TRUE(spec->resources.numa_bind);
  EXPECT_EQ(spec->resources.vendor, Vendor::kNvidia);
  EXPECT_EQ(spec->Argv(), (std::vector<std::string>{"python", "train.py", "--epochs=10"}));
  EXPECT_EQ(spec->workdir, "/data/run1");
  EXPECT_EQ(spec->env.at("EPOCHS"), "10");
  EXPECT_TRUE(spec->preemptible);
  EXPECT_EQ(spec->checkpoint_grace_seconds, 300);

  TaskRequest t = spec->ToTaskRequest();
  EXPECT_EQ(t.device_count, 2);
  EXPECT_EQ(t.device_compute_milli, 500);
  EXPECT_EQ(t.device_memory_mib, 20480);
  EXPECT_EQ(t.uuid_include, (std::vector<std::string>{"GPU-1234"}));
  EXPECT_TRUE(ValidateTaskRequest(t).ok());
}

TEST(JobSpecTest, JsonAndDefaults) {
  Result<JobSpec> spec = ParseJobSpec(R"({"name": "j1", "resources": {"cpu": 2}, "command": "echo hi && sleep 1"})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->priority, kPriorityNormal);
  EXPECT_EQ(spec->replicas, 1);
  EXPECT_FALSE(spec->preemptible);
  EXPECT_EQ(spec->checkpoint_grace_seconds, kDefaultCheckpointGraceSeconds);
  EXPECT_TRUE(spec->command_is_shell);
  EXPECT_EQ(spec->Argv(), (std::vector<std::string>{"/bin/sh", "-c", "echo hi && sleep 1"}));
}

// HAMi's defaults (nvidia.defaultMem 0 = the whole memory; gpucores 100 when the memory is whole and no gpucores
// is given): `gpu: 1` alone books a whole device; giving memory or cores opts into sharing.
TEST(JobSpecTest, AWholeGpuUnlessTheJobAsksToShare) {
  struct Row {
    const char* resources;
    int64_t memory_mib;
    int memory_percent;
    int64_t compute_milli;
  };
  const Row rows[] = {
      {"{gpu: 1}", 0, 100, 1000},
      {"{gpu: 2, cpu: 1}", 0, 100, 1000},
      {"{gpu: 1, gpumem-percentage: 100}", 0, 100, 1000},
      {"{gpu: 1, gpumem: 8Gi}", 8192, 0, 0},
      {"{gpu: 1, gpumem-percentage: 50}", 0, 50, 0},
      {"{gpu: 1, gpucores: 30}", 0, 100, 300},
      {"{gpu: 1, gpumem: 4Gi, gpucores: 25}", 4096, 0, 250},
      {"{cpu: 1}", 0, 0, 0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.resources);
    Result<JobSpec> spec = ParseJobSpec(std::string("name: a\ncommand: [a]\nresources: ") + row.resources);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    TaskRequest t = spec->ToTaskRequest();
    EXPECT_EQ(t.device_memory_mib, row.memory_mib);
    EXPECT_EQ(t.device_memory_percent, row.memory_percent);
    EXPECT_EQ(t.device_compute_milli, row.compute_milli);
    EXPECT_TRUE(ValidateTaskRequest(t).ok());
    // The spec is kept as written: the defaults live in the request only.
    EXPECT_EQ(JobSpecToJson(*spec).find("gpucores") != std::string::npos, spec->resources.gpucores > 0);
  }
}

// `mig: <profile>` asks for one MIG instance of that profile, held whole; `gpu` may be left out.
TEST(JobSpecTest, MigProfile) {
  for (const char* resources : {"{mig: 1g.10gb}", "{gpu: 1, mig: 1g.10gb, gpu-type: A100}", "{mig: 1g.10gb+me}"}) {
    SCOPED_TRACE(resources);
    Result<JobSpec> spec = ParseJobSpec(std::string("name: a\ncommand: [a]\nresources: ") + resources);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_TRUE(spec->resources.mig.starts_with("1g.10gb"));
    const TaskRequest t = spec->ToTaskRequest();
    EXPECT_EQ(t.mig_profile, spec->resources.mig);
    EXPECT_EQ(t.device_count, 1);
    EXPECT_EQ(t.device_memory_mib, 0);
    EXPECT_EQ(t.device_memory_percent, 100);
    EXPECT_EQ(t.device_compute_milli, kWholeDeviceMilli);
    EXPECT_TRUE(ValidateTaskRequest(t).ok()) << ValidateTaskRequest(t).ToString();
    Result<JobSpec> again = ParseJobSpec(JobSpecToJson(*spec));
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(*again, *spec);
  }
  Result<JobSpec> plain = ParseJobSpec("name: a\ncommand: [a]\nresources: {gpu: 1}\n");
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->ToTaskRequest().mig_profile.empty());
  EXPECT_EQ(JobSpecToJson(*plain).find("mig"), std::string::npos);
}

TEST(JobSpecTest, RetriesBackoffAndImage) {
  Result<JobSpec> spec = ParseJobSpec(
      "name: a\ncommand: [a]\nresources: {cpu: 1}\nretries: 3\nretry-backoff: 1m\nimage: "
      "registry.example:5000/team/train@sha256:abc\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->retries, 3);
  EXPECT_EQ(spec->retry_backoff_seconds, 60);
  EXPECT_EQ(spec->image, "registry.example:5000/team/train@sha256:abc");
  EXPECT_EQ(RetryDelaySeconds(*spec, 1), 60);
  EXPECT_EQ(RetryDelaySeconds(*spec, 2), 120);
  EXPECT_EQ(RetryDelaySeconds(*spec, 3), 240);
  spec->retry_backoff_seconds = 3000;
  EXPECT_EQ(RetryDelaySeconds(*spec, 2), kMaxRetryBackoffSeconds);  // capped
  Result<JobSpec> plain = ParseJobSpec("name: a\ncommand: [a]\nresources: {cpu: 1}\n");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->retries, 0);
  EXPECT_EQ(plain->retry_backoff_seconds, kDefaultRetryBackoffSeconds);
  EXPECT_EQ(RetryDelaySeconds(*plain, 2), 2 * kDefaultRetryBackoffSeconds);
  EXPECT_TRUE(plain->image.empty());
  JobSpec bad = *plain;
  bad.retries = -1;
  EXPECT_NE(ValidateJobSpec(bad).message().find("retries must be 0..10"), std::string::npos);
  bad = *plain;
  bad.image = "a b";
  EXPECT_NE(ValidateJobSpec(bad).message().find("image must be"), std::string::npos);
}

TEST(JobSpecTest, CanonicalJsonRoundTrips) {
  for (const char* text : {kFullYaml,
                           "name: r\nresources: {cpu: 1}\ncommand: [a]\nretries: 2\nretry-backoff: 5\n"
                           "image: localhost/x:1\n",
                           R"({"name": "j1", "resources": {"memory": 1}, "command": "x"})",
                           "name: a\nresources: {gpu: 1, gpumem-percentage: 25}\ncommand: [a, '']\npriority: 0\n"}) {
    SCOPED_TRACE(text);
    Result<JobSpec> spec = ParseJobSpec(text);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    std::string json = JobSpecToJson(*spec);
    Result<JobSpec> again = ParseJobSpec(json);
    ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << json;
    EXPECT_EQ(*again, *spec) << json;
    EXPECT_EQ(JobSpecToJson(*again), json);
  }
}

struct BadCase {
  const char* text;
  const char* error;  // expected substring of the message
};

TEST(JobSpecTest, RejectsBadInputWithFieldAndReason) {
  const std::string ok_tail = "\nresources: {cpu: 1}\ncommand: [a]\n";
  const BadCase cases[] = {
      {"", "empty"},
      {"[1, 2]", "the spec must be a mapping"},
      {"name: x\nresources: {cpu: 1}\n", "command is required"},
      {"resources: {cpu: 1}\ncommand: [a]\n", "name is required"},
      {"name: x\ncommand: [a]\n", "resources is required"},
      {"name: x\nnmae: y\nresources: {cpu: 1}\ncommand: [a]\n", "unknown field 'nmae'"},
      {"name: x\nresources: {cpu: 1, gpus: 2}\ncommand: [a]\n", "unknown field 'resources.gpus'"},
      {"name: x\nresources: {gpu: 1, gpucores: 101}\ncommand: [a]\n", "resources.gpucores must be 1..100"},
      {"name: x\nresources: {gpu: 1, gpucores: 0}\ncommand: [a]\n", "resources.gpucores must be 1..100"},
      {"name: x\nresources: {gpu: 1, gpucores: fifty}\ncommand: [a]\n", "resources.gpucores must be an integer"},
      {"name: x\nresources: {gpu: [1]}\ncommand: [a]\n", "resources.gpu must be an integer, not a list"},
      {"name: x\nresources: {gpu: 65}\ncommand: [a]\n", "resources.gpu must be 0..64"},
      {"name: x\nresources: {gpu: -1}\ncommand: [a]\n", "resources.gpu must be 0..64"},
      {"name: x\nresources: {gpu: 1, gpumem-percentage: 101}\ncommand: [a]\n",
       "resources.gpumem-percentage must be 1..100"},
      {"name: x\nresources: {gpu: 1, gpumem: 1Gi, gpumem-percentage: 10}\ncommand: [a]\n", "exclusive"},
      {"name: x\nresources: {cpu: 1, gpucores: 10}\ncommand: [a]\n", "resources.gpucores needs resources.gpu"},
      {"name: x\nresources: {cpu: lots}\ncommand: [a]\n", "resources.cpu:"},
      {"name: x\nresources: {memory: 8Gx}\ncommand: [a]\n", "resources.memory:"},
      {"name: x\nresources: {cpu: 2000}\ncommand: [a]\n", "resources.cpu must be 0..1024 cores"},
      {"name: x\nresources: {gpu: 1, vendor: acme}\ncommand: [a]\n", "resources.vendor: unknown vendor"},
      {"name: x\nresources: {gpu: 1, numa-bind: maybe}\ncommand: [a]\n", "resources.numa-bind must be true or false"},
      {"name: x\nresources: {}\ncommand: [a]\n", "resources must ask for something"},
      {"name: Bad_Name\nresources: {cpu: 1}\ncommand: [a]\n", "name must be 1..63 characters"},
      {"name: x\npriority: urgent\nresources: {cpu: 1}\ncommand: [a]\n", "priority must be 0..100"},
      {"name: x\npriority: 101\nresources: {cpu: 1}\ncommand: [a]\n", "priority must be 0..100"},
      {"name: x\nreplicas: 0\nresources: {cpu: 1}\ncommand: [a]\n", "replicas must be 1..1024"},
      {"name: x\nreplicas: 1.5\nresources: {cpu: 1}\ncommand: [a]\n", "replicas must be an integer"},
      {"name: x\nresources: {cpu: 1}\ncommand: []\n", "command must not be empty"},
      {"name: x\nresources: {cpu: 1}\ncommand: {a: b}\n", "command must be a list of arguments or a string"},
      {"name: x\nresources: {cpu: 1}\ncommand: [[a]]\n", "command[0] must be a string"},
      {"name: x\nresources: {cpu: 1}\ncommand: ['']\n", "command[0] must not be empty"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\nworkdir: rel/path\n", "workdir must be an absolute path"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\nenv: {1BAD: x}\n", "must match"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\nenv: {XPOOL_RANK: x}\n", "reserved"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\nenv: {A: [1]}\n", "env.A must be a string"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\nenv: [A=1]\n", "env must be a mapping"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\ncheckpoint: {grace: 2h}\n", "checkpoint.grace must be 0..3600"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\ncheckpoint: {grace: 3601}\n", "checkpoint.grace must be 0..3600"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\ncheckpoint: {grace: 1, other: 2}\n",
       "unknown field 'checkpoint.other'"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\npreemptible: 1\n", "preemptible must be true or false"},
      {"name: x\nname: y\nresources: {cpu: 1}\ncommand: [a]\n", "duplicate field 'name'"},
      {"{\"name\": \"x\", ", "malformed YAML/JSON"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\n---\nname: y\n", "single YAML document"},
      {"name: \"x\\u0000y\"\nresources: {cpu: 1}\ncommand: [a]\n", "name must be 1..63"},
      {"name: x\nresources: {cpu: 1}\ncommand: [\"a\\u0000b\"]\n", "command[0] must not contain NUL"},
      {"name: x\xff\nresources: {cpu: 1}\ncommand: [a]\n", "not valid UTF-8"},
      {"name: x\nresources: {gpu: 1, gpumem: 0}\ncommand: [a]\n", "resources.gpumem must be 1Mi..1Ti"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\nretries: -1\n", "retries must be 0..10"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\nretries: 11\n", "retries must be 0..10"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\nretries: many\n", "retries must be an integer"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\nretry-backoff: 0\n", "retry-backoff must be 1..3600 seconds"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\nretry-backoff: 2h\n", "retry-backoff must be 1..3600 seconds"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\nimage: \"python 3.12\"\n", "image must be an OCI image reference"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\nimage: \"python 3.12\"\n", "not one with a space"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\nimage: \"-v/:/host\"\n", "starting with a letter or digit"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\nimage: \"\"\n", "image must be an OCI image reference"},
      {"name: x\nresources: {cpu: 1}\ncommand: [a]\nimage: [a]\n", "image must be"},
      {"name: x\nresources: {mig: 1g.11gb}\ncommand: [a]\n",
       "resources.mig: unknown MIG profile '1g.11gb' (known: 1g.5gb, 1g.5gb+me, 1g.6gb"},
      {"name: x\nresources: {mig: [1g.10gb]}\ncommand: [a]\n", "resources.mig must be a string"},
      {"name: x\nresources: {mig: ''}\ncommand: [a]\n", "resources.mig must not be empty"},
      {"name: x\nresources: {mig: 1g.10gb, gpumem: 1Gi}\ncommand: [a]\n",
       "resources.mig and resources.gpumem are exclusive"},
      {"name: x\nresources: {mig: 1g.10gb, gpucores: 50}\ncommand: [a]\n",
       "resources.mig and resources.gpucores are exclusive"},
      {"name: x\nresources: {mig: 1g.10gb, gpu: 2}\ncommand: [a]\n", "resources.gpu must be 1 with resources.mig"},
      {"name: x\nresources: {mig: 1g.10gb, vendor: ascend}\ncommand: [a]\n", "resources.mig needs vendor nvidia"},
      // yaml-cpp 0.7's LoadAll never returns on a lone ',' (found by tests/fuzz/job_spec_fuzz).
      {",", "single YAML document"},
  };
  (void)ok_tail;
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.text);
    Result<JobSpec> spec = ParseJobSpec(c.text);
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(spec.status().message().find(c.error), std::string::npos) << spec.status().message();
  }
}

TEST(JobSpecTest, RejectsOversizedAndDeeplyNestedInput) {
  std::string big = "name: x\nresources: {cpu: 1}\ncommand: [a]\nworkdir: /" + std::string(kMaxJobSpecBytes, 'a');
  EXPECT_FALSE(ParseJobSpec(big).ok());
  std::string deep(100000, '[');
  Result<JobSpec> spec = ParseJobSpec(deep);
  EXPECT_FALSE(spec.ok());
  // Refused on the bytes, before a parser builds 100,000 nested nodes; JSON the same.
  EXPECT_EQ(spec.status().message(), "the spec nests deeper than 64 levels of [ and {");
  const std::string deep_json = "{\"name\": \"a\", \"env\": " + std::string(65, '{') + std::string(65, '}') + "}";
  EXPECT_EQ(ParseJobSpec(deep_json).status().message(), "the spec nests deeper than 64 levels of [ and {");
  std::string deep_block;
  for (int i = 0; i < 20000; ++i) deep_block += "- ";
  EXPECT_FALSE(ParseJobSpec(deep_block).ok());
}

TEST(JobSpecTest, EveryExampleParses) {
  const char* source = std::getenv("XPOOL_SOURCE_DIR");
  ASSERT_NE(source, nullptr) << "XPOOL_SOURCE_DIR is set by ctest";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(source) / "examples")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    Result<JobSpec> spec = ParseJobSpec(text.str());
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    ++count;
  }
  EXPECT_GE(count, 4);
}

TEST(JobSpecTest, PriorityWords) {
  EXPECT_EQ(*ParsePriority("low"), kPriorityLow);
  EXPECT_EQ(*ParsePriority("normal"), kPriorityNormal);
  EXPECT_EQ(*ParsePriority("high"), kPriorityHigh);
  EXPECT_EQ(*ParsePriority("0"), 0);
  EXPECT_EQ(*ParsePriority("100"), 100);
  EXPECT_FALSE(ParsePriority("-1").ok());
  EXPECT_FALSE(ParsePriority("HIGH ").ok());
}

TEST(JobSpecTest, CheckpointSignalByName) {
  const std::string base = "name: x\nresources: {cpu: 1}\ncommand: [a]\n";
  Result<JobSpec> plain = ParseJobSpec(base);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->checkpoint_signal, "SIGUSR1");
  EXPECT_EQ(JobSpecToJson(*plain).find("signal"), std::string::npos);  // the default is not written out
  const std::pair<const char*, int> named[] = {
      {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGINT", SIGINT}, {"SIGTERM", SIGTERM}, {"SIGHUP", SIGHUP}};
  for (const auto& [name, number] : named) {
    SCOPED_TRACE(name);
    Result<JobSpec> spec = ParseJobSpec(base + "checkpoint: {grace: 0, signal: " + name + "}\n");
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->checkpoint_signal, name);
    EXPECT_EQ(spec->checkpoint_grace_seconds, 0);  // 0 = stop at once
    EXPECT_EQ(*CheckpointSignalNumber(spec->checkpoint_signal), number);
    Result<JobSpec> again = ParseJobSpec(JobSpecToJson(*spec));  // round trip through the stored JSON
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(*again, *spec);
  }
  for (const char* bad : {"SIGKILL", "USR1", "sigusr1", "10", "SIGSTOP", "''"}) {
    SCOPED_TRACE(bad);
    Result<JobSpec> spec = ParseJobSpec(base + "checkpoint: {signal: " + bad + "}\n");
    ASSERT_FALSE(spec.ok());
    EXPECT_NE(spec.status().message().find("checkpoint.signal"), std::string::npos) << spec.status().message();
  }
  JobSpec built = *plain;
  built.checkpoint_signal = "SIGKILL";
  EXPECT_NE(ValidateJobSpec(built).message().find("checkpoint.signal must be SIGUSR1, SIGUSR2"), std::string::npos);
}

// The JSON fast path (nlohmann) and yaml-cpp read the same text into the same spec or the same error. Returns
// whether the fast path took the text.
bool ExpectSameAsYaml(const std::string& text) {
  SCOPED_TRACE(text);
  std::optional<Result<JobSpec>> fast = job_spec_parse::ParseAsJson(text);
  if (!fast) return false;
  Result<JobSpec> yaml = job_spec_parse::ParseWithYaml(text);
  EXPECT_EQ(fast->ok(), yaml.ok()) << "json: " << (fast->ok() ? std::string("ok") : fast->status().ToString())
                                   << "\nyaml: " << (yaml.ok() ? std::string("ok") : yaml.status().ToString());
  if (fast->ok() && yaml.ok()) {
    EXPECT_EQ(**fast, *yaml);
  } else if (!fast->ok() && !yaml.ok()) {
    EXPECT_EQ(fast->status().ToString(), yaml.status().ToString());
  }
  return true;
}

TEST(JobSpecTest, JsonFastPathAgreesWithYamlOnEveryFieldAndValue) {
  const std::vector<std::string> fields = {"name",
                                           "tenant",
                                           "priority",
                                           "replicas",
                                           "command",
                                           "workdir",
                                           "env",
                                           "preemptible",
                                           "checkpoint",
                                           "checkpoint.grace",
                                           "checkpoint.signal",
                                           "resources",
                                           "resources.cpu",
                                           "resources.memory",
                                           "resources.gpu",
                                           "resources.gpumem",
                                           "resources.gpumem-percentage",
                                           "resources.gpucores",
                                           "resources.gpu-type",
                                           "resources.gpu-type-exclude",
                                           "resources.gpu-uuid",
                                           "resources.numa-bind",
                                           "resources.vendor",
                                           "resources.mig",
                                           "resources.modle",
                                           "kind",
                                           "interactive",
                                           "interactive.port",
                                           "interactive.ttl",
                                           "interactive.idle-timeout",
                                           "nmae",
                                           "env.A",
                                           "env.1A"};
  const std::vector<std::string> values = {"null",
                                           "true",
                                           "false",
                                           "0",
                                           "1",
                                           "2",
                                           "-1",
                                           "64",
                                           "65",
                                           "100",
                                           "101",
                                           "1024",
                                           "1025",
                                           "1.5",
                                           "1.50",
                                           "1e3",
                                           "-0.0",
                                           "18446744073709551616",
                                           "1e400",
                                           "\"\"",
                                           "\"x\"",
                                           "\"500m\"",
                                           "\"1.5\"",
                                           "\"8Gi\"",
                                           "\"0\"",
                                           "\"high\"",
                                           "\"nvidia\"",
                                           "\"SIGUSR2\"",
                                           "\"1g.10gb\"",
                                           "\"5m\"",
                                           "\"45s\"",
                                           "\"8h\"",
                                           "\"interactive\"",
                                           "\"/data\"",
                                           "\"\\u00e9\\n\\t\\\"\\\\\\/\"",
                                           "\"a\\u0000b\"",
                                           "[]",
                                           "[\"a\"]",
                                           "[\"a\", 1]",
                                           "[\"a\", null]",
                                           "[[\"a\"]]",
                                           "{}",
                                           "{\"A\": \"b\"}",
                                           "{\"grace\": 5}",
                                           "{\"port\": 80, \"ttl\": \"2h\"}",
                                           "{\"a\": {\"b\": [1, {\"c\": 2}]}}",
                                           "\"" + std::string(300, 'n') + "\""};
  for (const std::string& field : fields) {
    for (const std::string& value : values) {
      // name, resources and command first; the field under test replaces its own default or is added.
      std::string name = "\"job\"", resources = "{\"cpu\": 1}", command = "[\"true\"]", extra;
      const size_t dot = field.find('.');
      const std::string top = field.substr(0, dot);
      const std::string sub = dot == std::string::npos ? "" : field.substr(dot + 1);
      if (field == "name")
        name = value;
      else if (field == "resources")
        resources = value;
      else if (field == "command")
        command = value;
      else if (top == "resources")
        resources = "{\"cpu\": 1, \"" + sub + "\": " + value + "}";
      else if (!sub.empty())
        extra = ", \"" + top + "\": {\"" + sub + "\": " + value + "}";
      else
        extra = ", \"" + field + "\": " + value;
      const std::string text =
          "{\"name\": " + name + ", \"resources\": " + resources + ", \"command\": " + command + extra + "}";
      // Every one is a JSON object the fast path reads, but nlohmann refuses numbers beyond a double.
      EXPECT_EQ(ExpectSameAsYaml(text), value != "1e400") << text;
    }
  }
}

TEST(JobSpecTest, JsonFastPathAgreesWithYamlOnStructure) {
  const std::vector<std::string> taken = {
      R"({"name": "a", "resources": {"cpu": 1}, "command": "x"})",
      "{\"name\":\"a\",\"resources\":{\"gpu\":1,\"gpumem\":\"4Gi\"},\"command\":[\"x\"]}",
      "  \n{\n\t\"name\": \"a\",\r\n  \"resources\": {\"cpu\": 1}, \"command\": [\"x\"]\n}\n\n",
      R"({"name": "a", "name": "b", "resources": {"cpu": 1}, "command": "x"})",  // duplicate field
      R"({"name": "a", "resources": {"cpu": 1, "cpu": 2}, "command": "x"})",
      R"({"name": "a", "resources": {"cpu": 1}, "command": "x", "env": {"A": "1", "A": "2"}})",
      R"({})",
      R"({"resources": {"cpu": 1}, "command": "x"})",
      R"({"name": "a", "command": "x"})",
      R"({"name": "a", "resources": {"cpu": 1}})",
      R"({"name": "a", "resources": {"cpu": 1}, "command": "x", "": 1})",
      R"({"name": "a\u00e9", "resources": {"cpu": 1}, "command": ["\u00e9", "\u0041"]})",
      R"({"name": "a", "resources": {"cpu": 1}, "command": "x", "env": {")" + std::string(160, 'K') + R"(": "v"}})",
      R"({"name": "é", "resources": {"cpu": 1}, "command": "x"})",
      R"({"name": "a", "resources": {"cpu": 1}, "command": ["x"], "priority": 0, "replicas": 1e0})",
  };
  for (const std::string& text : taken) EXPECT_TRUE(ExpectSameAsYaml(text)) << text;
  // Not JSON the fast path reads exactly: yaml-cpp decides (ParseJobSpec gives its answer).
  const std::vector<std::string> yaml_only = {
      "{name: a, resources: {cpu: 1}, command: x}",                          // a YAML flow mapping
      R"({"name": "a", "resources": {"cpu": 1}, "command": "x"} trailing)",  // not one JSON value
      R"({"name": "a", "resources": {"cpu": 1}, "command": "x"}
---
{})",
      R"({"name": "a", "resources": {"gpu": -0}, "command": "x"})",              // "-0": YAML reads the text
      R"({"name": "a", "resources": {"cpu": 1}, "command": ["\ud83d\ude00"]})",  // a surrogate pair
      R"({"name": "a", "resources": {"cpu": 1}, "command": ["\ud83d"]})",        // a lone one
      R"({"name": "a", "resources": {"cpu": 1}, "command": "x", "env": {")" + std::string(2000, 'K') + R"(": "v"}})",
      R"({"name": "a", "resources": {"cpu": 1e400}, "command": "x"})",
      "{\"name\": \"a\", \"env\": " + std::string(40, '[') + std::string(40, ']') + "}",  // deeper than a spec
      // nlohmann stops at a NUL byte (found by tests/fuzz/job_spec_fuzz): the rest must not be ignored.
      std::string("{\"name\": \"t\"}\0\0 \"prtenant:[\n :res", 33),
      "{\"name\": \"Ti,=`=====8Gnant\"\r\r\r\r}\n",  // yaml-cpp refuses this one
      "{\"name\": \"a\", \"resources\": {\"cpu\": 1}, \"command\": \"x\", \"preemptible\"\n : true}",  // key, break,
                                                                                                       // ':'
      "name: a\nresources: {cpu: 1}\ncommand: x\n",
      "[1, 2]",
      "\"x\"",
      "",
      "   ",
      "{",
  };
  for (const std::string& text : yaml_only) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(job_spec_parse::ParseAsJson(text).has_value());
    Result<JobSpec> spec = ParseJobSpec(text);
    Result<JobSpec> yaml = job_spec_parse::ParseWithYaml(text);
    EXPECT_EQ(spec.ok() ? std::string("ok") : spec.status().ToString(),
              yaml.ok() ? std::string("ok") : yaml.status().ToString());
  }
}

TEST(JobSpecTest, JsonFastPathReadsCanonicalJson) {
  // The store keeps specs as JobSpecToJson and reads them back through ParseJobSpec: the fast path.
  Result<JobSpec> full = ParseJobSpec(kFullYaml);
  ASSERT_TRUE(full.ok());
  std::optional<Result<JobSpec>> again = job_spec_parse::ParseAsJson(JobSpecToJson(*full));
  ASSERT_TRUE(again.has_value());
  ASSERT_TRUE(again->ok()) << again->status().ToString();
  EXPECT_EQ(**again, *full);
}

TEST(JobSpecTest, ValidateCatchesSpecsBuiltInCode) {
  JobSpec spec;
  spec.name = "ok";
  spec.resources.cpu_milli = 1000;
  spec.command = {"true"};
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
  spec.replicas = 5000;
  EXPECT_NE(ValidateJobSpec(spec).message().find("replicas must be 1..1024"), std::string::npos);
}

}  // namespace
}  // namespace xpool
