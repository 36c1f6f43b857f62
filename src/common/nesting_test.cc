#include "common/nesting.h"

#include <gtest/gtest.h>

#include <string>

namespace xpool {
namespace {

TEST(NestingTest, CountsBracketsOpenAtOnce) {
  EXPECT_EQ(NestingDepth("1", NestingSyntax::kJson), 0);
  EXPECT_EQ(NestingDepth(R"({"a": [1, {"b": []}], "c": {}})", NestingSyntax::kJson), 4);
  EXPECT_EQ(NestingDepth("[][][]", NestingSyntax::kJson), 1);
  EXPECT_EQ(NestingDepth(std::string(100000, '['), NestingSyntax::kJson), 100000);
  // Unbalanced closers never make the count negative.
  EXPECT_EQ(NestingDepth("]]]][[", NestingSyntax::kJson), 2);
}

TEST(NestingTest, JsonStringsAreSkippedYamlCountsEveryBracket) {
  EXPECT_EQ(NestingDepth(R"({"cmd": "[[[[ \" [[[["})", NestingSyntax::kJson), 1);
  EXPECT_EQ(NestingDepth(R"(["#", "it's", [1]])", NestingSyntax::kJson), 2);
  // YAML: a quote or '#' may or may not start a string or comment (a block scalar, a plain scalar's apostrophe);
  // every bracket counts, so no text can hide its nesting behind one.
  EXPECT_EQ(NestingDepth("run: |\n  \"\nx: [[[]]]\n", NestingSyntax::kYaml), 3);
  EXPECT_EQ(NestingDepth("[\" #\", [[[1]]]]", NestingSyntax::kYaml), 4);
  EXPECT_EQ(NestingDepth("a: it's\nb: [[2]]\n", NestingSyntax::kYaml), 2);
  EXPECT_EQ(NestingDepth("a: 1 # [[\n", NestingSyntax::kYaml), 2);
}

TEST(NestingTest, CheckNamesWhatAndTheLimit) {
  EXPECT_TRUE(CheckNesting(std::string(64, '[') + std::string(64, ']'), NestingSyntax::kJson, "body").ok());
  const Status s = CheckNesting(std::string(65, '['), NestingSyntax::kJson, "body");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "body nests deeper than 64 levels of [ and {");
  EXPECT_FALSE(CheckNesting("{{{", NestingSyntax::kYaml, "the spec", 2).ok());
}

}  // namespace
}  // namespace xpool
