// The usage history end to end inside the server: agents' measurements (AgentService) → UsageRecorder → the store
// → GET /api/v1/usage, with who may see what.
#include "server/usage_recorder.h"

#include <gtest/gtest.h>

#include "model/node_builder.h"
#include "server/agent_service.h"
#include "server/api_test_fixture.h"

namespace xpool::server {
namespace {

using nlohmann::json;

constexpr TimeMicros kMinuteUs = 60 * kMicrosPerSecond;

class UsageRecorderTest : public ApiFixture {
 protected:
  UsageRecorderTest() : ApiFixture("xpool_usage_recorder_test_") {}
  void SetUp() override {
    ApiFixture::SetUp();
    if (HasFatalFailure()) return;
    clock_.Set(clock_.NowMicros() / (60 * kMinuteUs) * (60 * kMinuteUs));  // on the hour
    recorder_ = std::make_unique<UsageRecorder>(*jobs_, clock_);
    agents_ = std::make_unique<AgentService>(*control_, *jobs_);
    agents_->SetUsageRecorder(recorder_.get());
    MakeApi(ApiOptions{});
    node_ = MakeNode("n1").WithCpu(8000).WithMemory(16384).WithGpus(2, "A100", 81920).Build();
    ASSERT_TRUE(agents_->Register(node_).ok());
    vision_ = NewTenant("vision");
    speech_ = NewTenant("speech");
  }
  void TearDown() override {
    agents_.reset();
    recorder_.reset();
    ApiFixture::TearDown();
  }
  int64_t SubmitAs(const std::string& token, const std::string& name) {
    ApiResponse r = Call("POST", "/api/v1/jobs", token,
                         "name: " + name + "\nresources: {gpu: 1, gpumem: 40Gi, gpucores: 100}\ncommand: sleep 100\n");
    EXPECT_EQ(r.status, 201) << r.body;
    return Body(r)["id"].get<int64_t>();
  }
  // The index on n1 of the device job `id` was given.
  int DeviceOf(int64_t id) {
    auto allocations = jobs_->JobAllocations(JobId(id));
    EXPECT_TRUE(allocations.ok() && allocations->size() == 1u && (*allocations)[0].devices.size() == 1u);
    for (const Device& d : node_.devices) {
      if (d.uuid == (*allocations)[0].devices[0].device_uuid) return d.index;
    }
    ADD_FAILURE() << "job " << id << " holds no device of n1";
    return -1;
  }
  // A heartbeat from an agent that measured `sm` ‰ and `used` MiB on each device, and `task_mib` per job.
  void Beat(const std::map<int, std::pair<int64_t, int64_t>>& measured, const std::map<int64_t, int64_t>& task_mib) {
    std::vector<protocol::DeviceUsageSample> devices;
    for (const auto& [index, m] : measured) devices.push_back(protocol::DeviceUsageSample{index, m.second, m.first});
    std::vector<protocol::TaskReport> reports;
    for (const auto& [id, mib] : task_mib) {
      protocol::TaskReport& r = reports.emplace_back();
      r.job_id = id;
      r.status.task_id = "job" + std::to_string(id) + "-r0";
      r.status.state = protocol::TaskState::kRunning;
      r.used_memory_mib = mib;
    }
    ASSERT_TRUE(agents_->Heartbeat(node_, reports, devices).ok());
  }
  Status Step() {
    auto allocations = jobs_->ListAllocations();
    if (!allocations.ok()) return allocations.status();
    return recorder_->Step(clock_.NowMicros(), control_->Nodes(), *allocations);
  }

  std::unique_ptr<UsageRecorder> recorder_;
  std::unique_ptr<AgentService> agents_;
  Node node_;
  std::string vision_, speech_;
};

TEST_F(UsageRecorderTest, AnHourOfMeasuredUseBecomesGpuHoursPerTenantAndJob) {
  const int64_t train = SubmitAs(vision_, "train");
  const int64_t asr = SubmitAs(speech_, "asr");
  control_->RunPass(true);
  const int train_dev = DeviceOf(train), asr_dev = DeviceOf(asr);
  ASSERT_NE(train_dev, asr_dev);
  ASSERT_TRUE(Step().ok());  // starts the count
  for (int minute = 0; minute < 60; ++minute) {
    // train keeps its device half busy with 20 GiB; asr a quarter with 10 GiB, but its agent stops measuring
    // after 30 minutes (an old agent took over): unmeasured time counts as allocated, not used.
    std::map<int, std::pair<int64_t, int64_t>> measured = {{train_dev, {500, 20480}}};
    std::map<int64_t, int64_t> tasks = {{train, 20480}};
    if (minute < 30) {
      measured[asr_dev] = {250, 10240};
      tasks[asr] = 10240;
    }
    clock_.Advance(kMinuteUs);
    Beat(measured, tasks);  // what the agent measures now stands for the step that ends now
    ASSERT_TRUE(Step().ok());
  }

  // The store: a row per job per minute, and per device.
  UsageFilter filter;
  filter.job = JobId(train);
  auto rows = store_->ListUsage(filter);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 60u);
  EXPECT_EQ((*rows)[0].seconds, 60);
  EXPECT_EQ((*rows)[0].alloc_compute_milli_s, 60000);
  EXPECT_EQ((*rows)[0].used_compute_milli_s, 30000);
  EXPECT_EQ((*rows)[0].used_memory_mib_s, 20480 * 60);
  EXPECT_EQ((*rows)[0].alloc_memory_mib_s, 81920 * 60);  // a whole device's memory
  filter = UsageFilter{};
  filter.devices = true;
  EXPECT_EQ(store_->ListUsage(filter)->size(), 2u * 60u);

  // A tenant sees its own accounting: one GPU-hour allocated, half of it used.
  json mine = Body(Call("GET", "/api/v1/usage?since=2h&by=job", vision_));
  ASSERT_EQ(mine["tenants"].size(), 1u) << mine.dump();
  EXPECT_EQ(mine["tenants"][0]["tenant"], "vision");
  EXPECT_EQ(mine["tenants"][0]["allocated_gpu_milli_hours"], 1000);
  EXPECT_EQ(mine["tenants"][0]["used_gpu_milli_hours"], 500);
  EXPECT_EQ(mine["tenants"][0]["used_memory_mib_hours"], 20480);
  ASSERT_EQ(mine["jobs"].size(), 1u);
  EXPECT_EQ(mine["jobs"][0]["id"], train);
  EXPECT_EQ(mine["jobs"][0]["name"], "train");
  EXPECT_EQ(mine["step_s"], 60);
  ASSERT_EQ(mine["series"].size(), 60u);
  EXPECT_EQ(mine["series"][0]["allocated_compute_milli"], 1000);
  EXPECT_EQ(mine["series"][0]["used_compute_milli"], 500);

  // The admin names any tenant: speech measured half the hour at 250 ‰.
  json speech = Body(Call("GET", "/api/v1/usage?since=2h&tenant=speech", admin_token_));
  ASSERT_EQ(speech["tenants"].size(), 1u);
  EXPECT_EQ(speech["tenants"][0]["allocated_gpu_milli_hours"], 1000);
  EXPECT_EQ(speech["tenants"][0]["used_gpu_milli_hours"], 125);
  EXPECT_EQ(speech["tenants"][0]["measured_seconds"], 1800);
  EXPECT_EQ(Body(Call("GET", "/api/v1/usage?since=2h", admin_token_))["tenants"].size(), 2u);
}

TEST_F(UsageRecorderTest, ATenantSeesOnlyItsOwnUsage) {
  const int64_t asr = SubmitAs(speech_, "asr");
  control_->RunPass(true);
  ASSERT_TRUE(Step().ok());
  Beat({{DeviceOf(asr), {900, 1000}}}, {{asr, 1000}});
  clock_.Advance(2 * kMinuteUs);
  ASSERT_TRUE(Step().ok());

  EXPECT_EQ(Call("GET", "/api/v1/usage", "").status, 401);
  EXPECT_EQ(Call("GET", "/api/v1/usage?tenant=speech", vision_).status, 404);  // as for GET /tenants/speech
  EXPECT_EQ(Call("GET", "/api/v1/usage?tenant=nobody", admin_token_).status, 404);
  json none = Body(Call("GET", "/api/v1/usage?by=job", vision_));
  EXPECT_TRUE(none["tenants"].empty()) << none.dump();  // speech's job is not in vision's view
  EXPECT_TRUE(none["jobs"].empty());
  json own = Body(Call("GET", "/api/v1/usage?by=job", speech_));
  ASSERT_EQ(own["jobs"].size(), 1u);
  EXPECT_EQ(own["jobs"][0]["tenant"], "speech");
  for (const char* bad : {"since=7", "since=0d", "since=400d", "since=-1h", "by=node"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(Call("GET", std::string("/api/v1/usage?") + bad, speech_).status, 400);
  }
}

TEST_F(UsageRecorderTest, MinutesAreWrittenOnceTheyPassAndAStepIsSplitAtTheirEnd) {
  const int64_t asr = SubmitAs(speech_, "asr");
  control_->RunPass(true);
  clock_.Advance(30 * kMicrosPerSecond);  // mid-minute
  ASSERT_TRUE(Step().ok());
  Beat({}, {{asr, 512}});
  clock_.Advance(20 * kMicrosPerSecond);
  ASSERT_TRUE(Step().ok());
  UsageFilter filter;
  EXPECT_TRUE(store_->ListUsage(filter)->empty());  // the minute is still open
  Beat({}, {{asr, 512}});
  clock_.Advance(20 * kMicrosPerSecond);  // the step spans the minute's end: split at it
  ASSERT_TRUE(Step().ok());
  auto rows = store_->ListUsage(filter);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].seconds, 30);
  EXPECT_EQ((*rows)[0].measured_seconds, 30);  // the task's memory was measured, no device was
  EXPECT_EQ((*rows)[0].used_compute_milli_s, 0);
  EXPECT_EQ((*rows)[0].used_memory_mib_s, 512 * 30);
  ASSERT_TRUE(recorder_->Flush().ok());  // the open minute's 10 s
  EXPECT_EQ(store_->ListUsage(filter)->size(), 2u);
}

TEST_F(UsageRecorderTest, SmTimeOnADeviceWhereNobodyReservedComputeIsSharedByMemoryGrant) {
  ApiResponse r = Call("POST", "/api/v1/jobs", speech_,
                       "name: mem-only\nresources: {gpu: 1, gpumem-percentage: 50}\ncommand: sleep 100\n");
  ASSERT_EQ(r.status, 201) << r.body;
  const int64_t id = Body(r)["id"].get<int64_t>();
  control_->RunPass(true);
  ASSERT_TRUE(Step().ok());
  clock_.Advance(kMinuteUs);
  Beat({{DeviceOf(id), {600, 20480}}}, {{id, 20480}});
  ASSERT_TRUE(Step().ok());
  UsageFilter filter;
  auto rows = store_->ListUsage(filter);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].alloc_compute_milli_s, 0);     // no compute reserved
  EXPECT_EQ((*rows)[0].used_compute_milli_s, 36000);  // but the device's SM time is its own
}

}  // namespace
}  // namespace xpool::server
