#include "model/job_state.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

namespace xpool {
namespace {

using S = JobState;

// The lifecycle written out independently of the implementation's switch.
const std::set<std::pair<S, S>>& Allowed() {
  static const std::set<std::pair<S, S>> allowed = {
      {S::kQueued, S::kScheduled},  {S::kQueued, S::kSuspended},     {S::kQueued, S::kFailed},
      {S::kQueued, S::kCancelled},  {S::kScheduled, S::kRunning},    {S::kScheduled, S::kQueued},
      {S::kScheduled, S::kFailed},  {S::kScheduled, S::kCancelled},  {S::kRunning, S::kSucceeded},
      {S::kRunning, S::kFailed},    {S::kRunning, S::kCancelled},    {S::kRunning, S::kSuspending},
      {S::kRunning, S::kQueued},    {S::kSuspending, S::kSuspended}, {S::kSuspending, S::kSucceeded},
      {S::kSuspending, S::kFailed}, {S::kSuspending, S::kCancelled}, {S::kSuspending, S::kQueued},
      {S::kSuspended, S::kQueued},  {S::kSuspended, S::kCancelled},
  };
  return allowed;
}

TEST(JobStateTest, EveryPairFollowsTheTable) {
  int legal = 0;
  for (S from : kAllJobStates) {
    for (S to : kAllJobStates) {
      SCOPED_TRACE(std::string(JobStateName(from)) + " -> " + std::string(JobStateName(to)));
      const bool expected = Allowed().count({from, to}) > 0;
      EXPECT_EQ(IsLegalTransition(from, to), expected);
      Status s = CheckTransition(from, to);
      EXPECT_EQ(s.ok(), expected);
      if (!expected) {
        EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
        EXPECT_NE(s.message().find(JobStateName(from)), std::string::npos);
      }
      legal += expected;
    }
  }
  EXPECT_EQ(legal, static_cast<int>(Allowed().size()));
}

TEST(JobStateTest, NothingLeavesATerminalState) {
  for (S from : {S::kSucceeded, S::kFailed, S::kCancelled}) {
    EXPECT_TRUE(IsTerminal(from));
    for (S to : kAllJobStates) {
      Status s = CheckTransition(from, to);
      EXPECT_FALSE(s.ok());
      EXPECT_NE(s.message().find("is final"), std::string::npos) << s.message();
    }
  }
  for (S s : {S::kQueued, S::kScheduled, S::kRunning, S::kSuspending, S::kSuspended}) EXPECT_FALSE(IsTerminal(s));
}

TEST(JobStateTest, NamesRoundTrip) {
  for (S s : kAllJobStates) {
    Result<S> parsed = ParseJobState(JobStateName(s));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_EQ(*ParseJobState("RUNNING"), S::kRunning);
  EXPECT_FALSE(ParseJobState("pending").ok());
  EXPECT_FALSE(ParseJobState("").ok());
}

TEST(JobStateTest, HoldsAllocation) {
  EXPECT_TRUE(HoldsAllocation(S::kScheduled));
  EXPECT_TRUE(HoldsAllocation(S::kRunning));
  EXPECT_TRUE(HoldsAllocation(S::kSuspending));
  EXPECT_FALSE(HoldsAllocation(S::kQueued));
  EXPECT_FALSE(HoldsAllocation(S::kSuspended));
  EXPECT_FALSE(HoldsAllocation(S::kSucceeded));
}

}  // namespace
}  // namespace xpool
