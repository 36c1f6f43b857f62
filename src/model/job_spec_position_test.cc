#include "model/job_spec_position.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace xpool {
namespace {

// The column (1-based) where `needle` starts on line `line` (1-based) of `text`.
int ColumnOf(const std::string& text, int line, const std::string& needle) {
  size_t start = 0;
  for (int i = 1; i < line; ++i) start = text.find('\n', start) + 1;
  return static_cast<int>(text.find(needle, start) - start) + 1;
}

struct Row {
  const char* what;
  std::string text;
  int line;
  std::string at;  // the text the position points at on that line ("" = column 1)
};

TEST(JobSpecPositionTest, ErrorsAreLocatedAndTheVerdictIsParseJobSpecs) {
  const std::vector<Row> rows = {
      {"a bad value: at the value", "name: train\ncommand: [python]\nresources:\n  gpu: 1\n  gpucores: 300\n", 5,
       "300"},
      {"an unknown field: at its key", "name: train\ncommand: [python]\nresources:\n  gpus: 1\n", 4, "gpus"},
      {"a duplicate field: at the second key", "name: a\nname: b\ncommand: [x]\nresources: {cpu: 1}\n", 2, "name"},
      {"a bad list item: at the list's key", "name: a\ncommand: [x, {y: 1}]\nresources: {cpu: 1}\n", 2, "command"},
      {"a limit across fields: at the field it names",
       "name: a\ncommand: [x]\nresources:\n  gpu: 1\n  gpumem: 4Gi\n  gpumem-percentage: 50\n", 5, "gpumem"},
      {"a missing field: the whole spec", "command: [x]\nresources: {cpu: 1}\n", 1, ""},
      {"JSON: at the value",
       "{\"name\": \"a\",\n \"command\": [\"x\"],\n \"resources\": {\"gpu\": 1, \"gpucores\": 0}}\n", 3, "0}"},
      {"a mapping where a scalar belongs", "name: a\ncommand: [x]\nresources: {cpu: 1}\npriority: {x: 1}\n", 4,
       "priority"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    TextPosition where;
    Result<JobSpec> got = ParseJobSpecAt(row.text, &where);
    Result<JobSpec> plain = ParseJobSpec(row.text);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status(), plain.status());
    EXPECT_EQ(where.line, row.line);
    EXPECT_EQ(where.column, row.at.empty() ? 1 : ColumnOf(row.text, row.line, row.at)) << got.status().message();
  }
}

TEST(JobSpecPositionTest, SyntaxErrorsTakeTheParsersPosition) {
  const std::string text = "name: a\ncommand: [x]\nresources: {cpu: 1\nenv: {A: b}\n";
  TextPosition where;
  Result<JobSpec> got = ParseJobSpecAt(text, &where);
  ASSERT_FALSE(got.ok());
  EXPECT_GE(where.line, 3);
  const std::string said = "line " + std::to_string(where.line) + ", column " + std::to_string(where.column);
  EXPECT_NE(got.status().message().find(said), std::string::npos) << got.status().message() << " vs " << said;
}

TEST(JobSpecPositionTest, ValidSpecsLeaveThePositionAlone) {
  TextPosition where{7, 7};
  Result<JobSpec> got = ParseJobSpecAt("name: a\ncommand: [x]\nresources: {cpu: 1}\n", &where);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->name, "a");
  EXPECT_EQ(where, (TextPosition{7, 7}));
  EXPECT_FALSE(ParseJobSpecAt("", &where).ok());
  EXPECT_EQ(where, (TextPosition{1, 1}));
}

TEST(JobSpecPositionTest, LocatesAFieldByItsPath) {
  const std::string text = "name: a\nresources:\n  gpu: 1\ncommand: [x, y]\ntenant: vision\n";
  EXPECT_EQ(LocateJobSpecField(text, "tenant"), (TextPosition{5, 1}));
  EXPECT_EQ(LocateJobSpecField(text, "resources.gpu"), (TextPosition{3, 3}));
  EXPECT_EQ(LocateJobSpecField(text, "command[1]"), (TextPosition{4, ColumnOf(text, 4, "y]")}));
  EXPECT_EQ(LocateJobSpecField(text, "resources.gpumem"), TextPosition{});
  EXPECT_EQ(LocateJobSpecField(text, "name.x"), TextPosition{});
  EXPECT_EQ(LocateJobSpecField("name: [", "name"), TextPosition{});
}

}  // namespace
}  // namespace xpool
