#include "server/internal/json_codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/job_state.h"

namespace xpool::server::internal {
namespace {

// AppendJobJson writes a job list without a JSON tree per job; its text must be JobToJson's dump, byte for byte
// (clients and the e2e tests read these fields).
TEST(JsonCodecTest, AppendJobJsonWritesJobToJsonsText) {
  const std::vector<std::string> texts = {"",
                                          "train",
                                          "with \"quotes\" and \\ backslash",
                                          "tab\tnew\nline\r\x01\x1f",
                                          "caf\xc3\xa9 \xe6\x97\xa5",
                                          "bad \xff utf-8 \xc3",
                                          "del \x7f",
                                          std::string("nul\0in", 6),
                                          std::string(300, 'x')};
  std::vector<AllocationRecord> placement(2);
  placement[0].replica = 0;
  placement[0].node = "node-a";
  placement[0].cpu_milli = 1500;
  placement[0].memory_mib = 4096;
  placement[0].devices = {{"GPU-1", 20480, 500}, {"GPU-\"2\"", 0, 1000}};
  placement[1].replica = 1;
  placement[1].node = "n\xc3\xa9";
  int variant = 0;
  for (const std::string& text : texts) {
    for (JobState state : kAllJobStates) {
      ++variant;
      JobRecord job;
      job.id = JobId(variant * 7919);
      job.tenant = TenantId(variant % 3);
      job.state = state;
      job.priority = variant % 101;
      job.submitted_us = variant % 2 ? 1'700'000'000'123'456 + variant : 0;
      job.updated_us = variant % 3 ? 1'700'000'100'000'000 : 0;
      job.restart_count = variant % 4;
      job.state_reason = text;
      job.spec.name = text;
      job.spec.replicas = 1 + variant % 3;
      job.spec.command = {"python", text};
      job.spec.env["K"] = text;
      job.spec.resources.cpu_milli = variant * 250;
      job.spec.resources.memory_mib = int64_t{1} << (variant % 40);
      job.spec.resources.gpu = variant % 9;
      job.spec.resources.gpumem_mib = variant % 2 ? 81920 : 0;
      job.spec.resources.gpumem_percentage = variant % 101;
      job.spec.resources.gpucores = variant % 100;
      for (int p = 0; p < 3; ++p) {
        std::vector<AllocationRecord> empty;
        const std::vector<AllocationRecord>* where = p == 0 ? nullptr : p == 1 ? &empty : &placement;
        SCOPED_TRACE("variant " + std::to_string(variant) + " placement " + std::to_string(p));
        const std::string want =
            JobToJson(job, text + "-tenant", text, where).dump(-1, ' ', false, Json::error_handler_t::replace);
        std::string got = "[";
        AppendJobJson(&got, job, text + "-tenant", text, where, SpecText(job.spec));
        ASSERT_EQ(got, "[" + want);
      }
    }
  }
}

// The node list writes each node as AppendNodeJsonHead + last_seen_us + AppendNodeJsonTail; the text must be
// NodeViewToJson's dump, byte for byte, whatever the names, labels, devices and conditions.
TEST(JsonCodecTest, AppendNodeJsonWritesNodeViewToJsonsText) {
  const std::vector<std::string> texts = {
      "n1", "with \"quotes\" \\", "tab\tnew\nline\x01", "caf\xc3\xa9", "bad \xff utf-8", std::string("nul\0in", 6), ""};
  int variant = 0;
  for (const std::string& text : texts) {
    for (int devices = 0; devices <= 3; ++devices) {
      ++variant;
      NodeView v;
      v.node.name = text;
      v.node.cpu_milli = 1000 * variant;
      v.node.memory_mib = int64_t{1} << (10 + variant % 30);
      v.node.ready = variant % 2 == 0;
      v.node.cordoned = variant % 3 == 0;
      v.node.simulated = variant % 5 == 0;
      if (variant % 2) v.node.labels = {{"zone", text}, {text, "v"}, {"a/b", "c"}};
      v.usage.cpu_milli = 250 * variant;
      v.usage.memory_mib = 512 * variant;
      v.last_seen_us = variant % 4 ? 1'700'000'000'123'456 + variant : 0;
      for (int d = 0; d < devices; ++d) {
        Device device;
        device.index = d;
        device.uuid = "GPU-" + std::to_string(variant) + "-" + std::to_string(d) + text;
        device.model = d % 2 ? text : "NVIDIA H200";
        device.vendor = d == 2 ? Vendor::kAscend : Vendor::kNvidia;
        device.mode = d == 1 ? DeviceMode::kMig : DeviceMode::kShared;
        device.memory_mib = 81920 + d;
        device.compute_milli = 1000 - d;
        device.max_sharers = 4 + d;
        device.numa_node = d - 1;
        device.healthy = (variant + d) % 3 != 0;
        v.node.devices.push_back(device);
        v.usage.devices.push_back(DeviceUsage{1024L * d, 250L * d, d, d == 0});
      }
      SCOPED_TRACE("variant " + std::to_string(variant));
      const std::string want = NodeViewToJson(v).dump(-1, ' ', false, Json::error_handler_t::replace);
      std::string got;
      AppendNodeJsonHead(&got, v.node, v.usage);
      got += std::to_string(v.last_seen_us);
      AppendNodeJsonTail(&got, v.node, v.usage);
      ASSERT_EQ(got, want);
    }
  }
}

// A device's vendor and mode are parsed from their names; a bad one is an error naming the field, the value and
// the known names, a wrong type names the field too.
TEST(JsonCodecTest, NodeDeviceVendorAndModeByName) {
  auto node = NodeFromJson(Json::parse(R"({"name": "n", "devices": [{"model": "A100", "memory": "80Gi",
      "vendor": "nvidia", "mode": "mig"}]})"));
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->devices[0].vendor, Vendor::kNvidia);
  EXPECT_EQ(node->devices[0].mode, DeviceMode::kMig);
  const struct {
    const char* device;
    const char* error;
  } bad[] = {
      {R"({"model": "A100", "memory": "80Gi", "vendor": "acme"})", "devices[0].vendor: unknown vendor \"acme\""},
      {R"({"model": "A100", "memory": "80Gi", "mode": "half"})", "devices[0].mode: unknown device mode \"half\""},
      {R"({"model": "A100", "memory": "80Gi", "vendor": 3})", "devices[0].vendor must be a string"},
  };
  for (const auto& row : bad) {
    SCOPED_TRACE(row.device);
    auto r = NodeFromJson(Json::parse(std::string(R"({"name": "n", "devices": [)") + row.device + "]}"));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(row.error), std::string::npos) << r.status().message();
  }
}

// Bodies (PATCH /jobs, tenants, nodes) are checked for depth before nlohmann builds a tree of them.
TEST(JsonCodecTest, DeepBodiesAreRefusedBeforeParsing) {
  EXPECT_TRUE(ParseJsonObject(R"({"a": [[{"b": 1}]]})").ok());
  Result<Json> deep = ParseJsonObject("{\"a\": " + std::string(400000, '[') + "}");
  EXPECT_EQ(deep.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(deep.status().message(), "body nests deeper than 64 levels of [ and {");
  // Brackets inside strings are text, not nesting.
  EXPECT_TRUE(ParseJsonObject("{\"a\": \"" + std::string(1000, '[') + "\"}").ok());
}

}  // namespace
// JsonListItems finds each item of the list as the text it was written, whatever the items hold (brackets and
// escaped quotes in strings, nested lists), and refuses what ParseJsonObject and CheckKeys refuse.
TEST(JsonCodecTest, JsonListItemsSplitsTheListWithoutReadingItsItems) {
  struct Row {
    std::string body;
    std::vector<std::string> want;
  };
  const std::vector<Row> rows = {
      {R"({"jobs":[{"a":1},{"b":[1,2]}]})", {R"({"a":1})", R"({"b":[1,2]})"}},
      {" { \"jobs\" :\n [ {\"s\": \"]},[\\\"{\"} , 7 ,\"x\", [[]] ] } ",
       {R"({"s": "]},[\"{"})", "7", R"("x")", "[[]]"}},
      {R"({"jobs":[]})", {}},
      {R"({"jobs":{"a":1}})", {}},
      {R"({})", {}},
      {R"({"jobs":[1],"jobs":[2,3]})", {"2", "3"}},
      {R"({"jo\u0062s":[true]})", {"true"}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.body);
    Result<std::vector<std::string_view>> items = JsonListItems(row.body, "jobs");
    ASSERT_TRUE(items.ok()) << items.status().ToString();
    EXPECT_EQ(std::vector<std::string>(items->begin(), items->end()), row.want);
  }
  for (const std::string bad : {"", "[1]", "{", R"({"jobs":[1,]})", R"({"jobs":[1]} x)", R"({"jobs":[{}],"x":1})"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(JsonListItems(bad, "jobs").status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(JsonListItems(R"({"jobs":[{}],"x":1})", "jobs").status().message(), "unknown field 'x'");
}

}  // namespace xpool::server::internal
