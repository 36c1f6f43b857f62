// kind: interactive (docs/jobs.md, "Interactive jobs"): its fields, defaults, limits and canonical form.
#include <gtest/gtest.h>

#include <string>

#include "model/job_spec.h"
#include "model/job_spec_position.h"

namespace xpool {
namespace {

constexpr const char* kHead = "name: nb\nresources: {cpu: 1}\ncommand: [jupyter-notebook]\n";

TEST(JobSpecInteractiveTest, ReadsTheBlockWithUnits) {
  Result<JobSpec> spec = ParseJobSpec(std::string(kHead) +
                                      "kind: interactive\ninteractive:\n  port: 9000\n  ttl: 2h\n"
                                      "  idle-timeout: 15m\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_TRUE(spec->interactive.has_value());
  EXPECT_EQ(spec->interactive->port, 9000);
  EXPECT_EQ(spec->interactive->ttl_seconds, 2 * 3600);
  EXPECT_EQ(spec->interactive->idle_timeout_seconds, 15 * 60);
}

TEST(JobSpecInteractiveTest, DefaultsAndBatchSpecsUnchanged) {
  Result<JobSpec> spec = ParseJobSpec(std::string(kHead) + "kind: interactive\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_TRUE(spec->interactive.has_value());
  EXPECT_EQ(*spec->interactive, InteractiveSpec{});
  EXPECT_EQ(spec->interactive->port, 8888);
  EXPECT_EQ(spec->interactive->ttl_seconds, 8 * 3600);
  EXPECT_EQ(spec->interactive->idle_timeout_seconds, 30 * 60);
  Result<JobSpec> idle_off = ParseJobSpec(std::string(kHead) + "kind: interactive\ninteractive: {idle-timeout: 0}\n");
  ASSERT_TRUE(idle_off.ok()) << idle_off.status().ToString();
  EXPECT_EQ(idle_off->interactive->idle_timeout_seconds, 0);
  for (const char* batch : {"", "kind: batch\n"}) {
    SCOPED_TRACE(batch);
    Result<JobSpec> plain = ParseJobSpec(std::string(kHead) + batch);
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();
    EXPECT_FALSE(plain->interactive.has_value());
    EXPECT_EQ(JobSpecToJson(*plain).find("interactive"), std::string::npos);  // old specs' stored form unchanged
  }
}

TEST(JobSpecInteractiveTest, CanonicalJsonRoundTrips) {
  Result<JobSpec> spec = ParseJobSpec(std::string(kHead) + "kind: interactive\ninteractive: {port: 80, ttl: 90m}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const std::string json = JobSpecToJson(*spec);
  EXPECT_NE(json.find("\"kind\":\"interactive\""), std::string::npos) << json;
  Result<JobSpec> again = ParseJobSpec(json);
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << json;
  EXPECT_EQ(*again, *spec);
  EXPECT_EQ(JobSpecToJson(*again), json);
}

struct BadCase {
  const char* tail;
  const char* error;  // expected substring
  int line;           // where ParseJobSpecAt points
};

TEST(JobSpecInteractiveTest, RejectsBadFieldsWithLineAndColumn) {
  const BadCase cases[] = {
      {"kind: notebook\n", "kind must be batch or interactive, not 'notebook'", 4},
      {"interactive: {port: 80}\n", "interactive needs kind: interactive", 1},  // about the spec as a whole
      {"kind: interactive\ninteractive:\n  port: 0\n", "interactive.port must be 1..65535", 6},
      {"kind: interactive\ninteractive:\n  port: 70000\n", "interactive.port must be 1..65535", 6},
      {"kind: interactive\ninteractive:\n  ttl: 9s\n", "interactive.ttl must be 10..604800 seconds", 6},
      {"kind: interactive\ninteractive:\n  ttl: 0\n", "interactive.ttl must be 10..604800", 6},
      {"kind: interactive\ninteractive:\n  ttl: 8d\n", "interactive.ttl must be", 6},
      {"kind: interactive\ninteractive:\n  idle-timeout: 5\n", "interactive.idle-timeout must be 0 (never) or 10", 6},
      {"kind: interactive\ninteractive:\n  idle: 5m\n", "unknown field 'interactive.idle'", 6},
      {"kind: interactive\nreplicas: 2\n", "replicas must be 1 for kind: interactive", 5},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.tail);
    TextPosition where;
    Result<JobSpec> spec = ParseJobSpecAt(std::string(kHead) + c.tail, &where);
    ASSERT_FALSE(spec.ok());
    EXPECT_NE(spec.status().message().find(c.error), std::string::npos) << spec.status().message();
    EXPECT_EQ(where.line, c.line) << spec.status().message();
  }
}

TEST(JobSpecInteractiveTest, ValidateCatchesSpecsBuiltInCode) {
  Result<JobSpec> spec = ParseJobSpec(std::string(kHead) + "kind: interactive\n");
  ASSERT_TRUE(spec.ok());
  JobSpec bad = *spec;
  bad.interactive->ttl_seconds = 1;
  EXPECT_NE(ValidateJobSpec(bad).message().find("interactive.ttl"), std::string::npos);
  bad = *spec;
  bad.interactive->idle_timeout_seconds = 0;
  EXPECT_TRUE(ValidateJobSpec(bad).ok());
}

}  // namespace
}  // namespace xpool
