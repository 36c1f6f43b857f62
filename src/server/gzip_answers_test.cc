// The answers compressed for clients that take gzip: GET /metrics (Prometheus) — the same series as the plain
// answer, the device series from the server's CompressedDeviceSeries — and GET /api/v1/nodes (Studio in a
// browser) — the same text as the plain answer, from each node's kept compressed parts.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "http/testing/gunzip.h"
#include "server/api_test_fixture.h"
#include "server/compressed_device_series.h"

namespace xpool::server {
namespace {

using std::chrono::milliseconds;

class GzipAnswersTest : public ApiFixture {
 protected:
  GzipAnswersTest() : ApiFixture("xpool_gzip_answers_test_") {}
  void SetUp() override {
    ApiFixture::SetUp();
    if (HasFatalFailure()) return;
    series_ = std::make_unique<CompressedDeviceSeries>(
        [this](std::string* out) { control_->AppendDeviceMetrics(out); },
        CompressedDeviceSeries::Options{milliseconds(20), std::chrono::minutes(5)});
    ApiOptions options;
    options.device_series = series_.get();
    MakeApi(options);
  }
  void TearDown() override {
    api_.reset();
    series_.reset();
    ApiFixture::TearDown();
  }

  ApiResponse Get(const std::string& target, const std::string& accept_encoding, const std::string& token = "") {
    ApiRequest r = Request("GET", target, token);
    r.accept_encoding = accept_encoding;
    return api_->Handle(r);
  }
  ApiResponse Scrape(const std::string& accept_encoding) { return Get("/metrics", accept_encoding); }
  static std::string Header(const ApiResponse& r, const std::string& name) {
    for (const auto& [k, v] : r.headers) {
      if (k == name) return v;
    }
    return "";
  }
  // The lines of `text` that start with `prefix`, in order.
  static std::vector<std::string> Lines(const std::string& text, const std::string& prefix) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(prefix, 0) == 0) out.push_back(line);
    }
    return out;
  }
  void AddNode(const std::string& name) {
    ASSERT_EQ(Call("POST", "/api/v1/nodes", admin_token_,
                   R"({"name":")" + name +
                       R"(","cpu":32,"memory":"128Gi","gpus":{"count":2,"model":"A100","memory":"80Gi"}})")
                  .status,
              201);
  }

  std::unique_ptr<CompressedDeviceSeries> series_;
};

TEST_F(GzipAnswersTest, AGzipAnswerHoldsThePlainAnswersSeries) {
  AddNode("n1");
  AddNode("n2");
  const ApiResponse plain = Scrape("");
  ASSERT_EQ(plain.status, 200);
  EXPECT_EQ(Header(plain, "Content-Encoding"), "");
  EXPECT_EQ(Header(plain, "Vary"), "Accept-Encoding");
  const ApiResponse gz = Scrape("gzip, deflate, br");
  ASSERT_EQ(gz.status, 200);
  EXPECT_EQ(gz.content_type, plain.content_type);
  EXPECT_EQ(Header(gz, "Content-Encoding"), "gzip");
  EXPECT_EQ(Header(gz, "Vary"), "Accept-Encoding");
  const std::optional<std::string> text = testing::Gunzip(gz.body);
  ASSERT_TRUE(text.has_value());
  EXPECT_LT(gz.body.size(), text->size());
  const std::vector<std::string> devices = Lines(plain.body, "xpool_device_");
  ASSERT_EQ(devices.size(), 4u * 4u);  // four families × two nodes × two devices
  EXPECT_EQ(Lines(*text, "xpool_device_"), devices);
  EXPECT_EQ(Lines(*text, "# TYPE"), Lines(plain.body, "# TYPE"));  // every family, in the same order
  EXPECT_EQ(Lines(*text, "xpool_nodes"), Lines(plain.body, "xpool_nodes"));
  // Clients that do not take gzip get the plain text.
  for (const char* refuses : {"identity", "gzip;q=0", "br"}) {
    const ApiResponse r = Scrape(refuses);
    EXPECT_EQ(Header(r, "Content-Encoding"), "") << refuses;
    EXPECT_EQ(Lines(r.body, "xpool_device_"), devices) << refuses;
  }
}

// The registry's series are rendered at each scrape; the device series follow within the refresh interval.
TEST_F(GzipAnswersTest, AGzipScrapeSeesNewCountsAtOnceAndNewAllocationsWithinTheRefresh) {
  AddNode("n1");
  ASSERT_EQ(Lines(*testing::Gunzip(Scrape("gzip").body), "xpool_device_memory_allocated_bytes").size(), 2u);
  ApiResponse job = Call("POST", "/api/v1/jobs", admin_token_,
                         "name: j\ncommand: [sleep, '99']\nresources: {gpu: 1, gpumem: 20Gi}\n");
  ASSERT_EQ(job.status, 201) << job.body;
  EXPECT_EQ(Lines(*testing::Gunzip(Scrape("gzip").body), "xpool_jobs_submitted_total"),
            std::vector<std::string>{"xpool_jobs_submitted_total 1"});
  control_->RunPass(true);
  bool seen = false;
  for (int i = 0; i < 500 && !seen; ++i) {
    for (const std::string& line : Lines(*testing::Gunzip(Scrape("gzip").body), "xpool_device_memory_allocated")) {
      seen = seen || line.ends_with(" 21474836480");
    }
    if (!seen) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(seen);
}

TEST_F(GzipAnswersTest, NoTokenIsNeededAsForThePlainAnswer) {
  const ApiResponse gz = Scrape("gzip");
  EXPECT_EQ(gz.status, 200);
  ASSERT_TRUE(testing::Gunzip(gz.body).has_value());
  EXPECT_NE(testing::Gunzip(gz.body)->find("# TYPE xpool_device_memory_capacity_bytes gauge"), std::string::npos);
}

// The node list to a browser: byte for byte the plain list, also after nodes changed (their compressed parts are
// renewed) and for a page; the same token rules.
TEST_F(GzipAnswersTest, TheNodeListInGzipIsThePlainList) {
  AddNode("n2");
  AddNode("n1");
  AddNode("n3");
  const std::string alice = NewTenant("alice");
  auto same = [&](const std::string& target, const std::string& token) {
    const ApiResponse plain = Get(target, "", token);
    const ApiResponse gz = Get(target, "gzip, deflate, br", token);
    EXPECT_EQ(plain.status, 200) << target;
    EXPECT_EQ(Header(plain, "Content-Encoding"), "");
    EXPECT_EQ(Header(gz, "Content-Encoding"), "gzip");
    EXPECT_EQ(Header(gz, "Vary"), "Accept-Encoding");
    EXPECT_EQ(testing::Gunzip(gz.body), plain.body) << target;
  };
  same("/api/v1/nodes", admin_token_);
  same("/api/v1/nodes", alice);
  same("/api/v1/nodes?limit=2", alice);
  const nlohmann::json page = Body(Get("/api/v1/nodes?limit=1", "", alice));
  same("/api/v1/nodes?limit=1&cursor=" + page["next_cursor"].get<std::string>(), alice);
  // A placement renews n1's text (and its compressed parts); a heartbeat moves only its last-seen time.
  ASSERT_EQ(
      Call("POST", "/api/v1/jobs", admin_token_, "name: j\ncommand: [sleep, '99']\nresources: {gpu: 1, gpumem: 20Gi}\n")
          .status,
      201);
  control_->RunPass(true);
  clock_.Advance(5'000'000);
  ASSERT_EQ(Call("POST", "/api/v1/nodes/n2/heartbeat", admin_token_, "{}").status, 200);
  const std::string after = *testing::Gunzip(Get("/api/v1/nodes", "gzip", alice).body);
  EXPECT_NE(after.find("\"memory_allocated_mib\":20480"), std::string::npos) << after;
  same("/api/v1/nodes", alice);
  // No token: 401, whatever the encoding asked.
  const ApiResponse refused = Get("/api/v1/nodes", "gzip", "");
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(Header(refused, "Content-Encoding"), "");
}

}  // namespace
}  // namespace xpool::server
