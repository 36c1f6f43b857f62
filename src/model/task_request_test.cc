#include "model/task_request.h"

#include <gtest/gtest.h>

namespace xpool {
namespace {

TEST(TaskRequestTest, Validation) {
  struct Row {
    const char* name;
    TaskRequest request;
    const char* error;  // nullptr = valid
  };
  auto gpu = [](int count) {
    TaskRequest r;
    r.cpu_milli = 1000;
    r.device_count = count;
    return r;
  };
  std::vector<Row> rows;
  rows.push_back({"plain gpu", gpu(1), nullptr});
  {
    TaskRequest r = gpu(1);
    r.device_memory_percent = 101;
    rows.push_back({"percent above 100", r, "percentage"});
  }
  {
    TaskRequest r = gpu(1);
    r.device_compute_milli = 1010;
    rows.push_back({"cores above 100", r, "cores"});
  }
  {
    TaskRequest r = gpu(1);
    r.device_memory_mib = 10;
    r.device_memory_percent = 10;
    rows.push_back({"both memory forms", r, "not both"});
  }
  {
    TaskRequest r = gpu(0);
    r.device_memory_mib = 10;
    rows.push_back({"memory without devices", r, "device count is 0"});
  }
  rows.push_back({"negative count", gpu(-1), "negative"});
  {
    TaskRequest r;
    rows.push_back({"empty", r, "asks for nothing"});
  }
  {
    TaskRequest r = gpu(0);
    r.cpu_milli = -5;
    rows.push_back({"negative cpu", r, "negative"});
  }
  {
    TaskRequest r = gpu(1);
    r.mig_profile = "1g.10gb";
    rows.push_back({"a MIG instance", r, nullptr});
    r.mig_profile = "1g.11gb";
    rows.push_back({"an unknown MIG profile", r, "unknown MIG profile '1g.11gb' (known: 1g.5gb, 1g.5gb+me, 1g.6gb"});
    r = gpu(2);
    r.mig_profile = "1g.10gb";
    rows.push_back({"two MIG instances", r, "exactly one instance"});
    r = gpu(1);
    r.mig_profile = "3g.40gb";
    r.device_memory_mib = 1024;
    rows.push_back({"MIG with a memory share", r, "held whole"});
    r.device_memory_mib = 0;
    r.device_compute_milli = 500;
    rows.push_back({"MIG with a cores share", r, "held whole"});
  }
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Status s = ValidateTaskRequest(row.request);
    if (row.error == nullptr) {
      EXPECT_TRUE(s.ok()) << s.ToString();
    } else {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(s.message().find(row.error), std::string::npos) << s.message();
    }
  }
}

}  // namespace
}  // namespace xpool
