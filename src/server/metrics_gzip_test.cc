// GET /metrics to clients that take gzip (Prometheus): the same series as the plain answer, in one gzip member,
// with the device series from the server's CompressedDeviceSeries.
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

class MetricsGzipTest : public ApiFixture {
 protected:
  MetricsGzipTest() : ApiFixture("xpool_metrics_gzip_test_") {}
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

  ApiResponse Scrape(const std::string& accept_encoding) {
    ApiRequest r;
    r.method = "GET";
    r.path = "/metrics";
    r.accept_encoding = accept_encoding;
    return api_->Handle(r);
  }
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

TEST_F(MetricsGzipTest, AGzipAnswerHoldsThePlainAnswersSeries) {
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
TEST_F(MetricsGzipTest, AGzipScrapeSeesNewCountsAtOnceAndNewAllocationsWithinTheRefresh) {
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

TEST_F(MetricsGzipTest, NoTokenIsNeededAsForThePlainAnswer) {
  const ApiResponse gz = Scrape("gzip");
  EXPECT_EQ(gz.status, 200);
  ASSERT_TRUE(testing::Gunzip(gz.body).has_value());
  EXPECT_NE(testing::Gunzip(gz.body)->find("# TYPE xpool_device_memory_capacity_bytes gauge"), std::string::npos);
}

}  // namespace
}  // namespace xpool::server
