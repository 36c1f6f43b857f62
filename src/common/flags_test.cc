#include "common/flags.h"

#include <gtest/gtest.h>

namespace xpool {
namespace {

TEST(FlagSetTest, ParsesEveryForm) {
  FlagSet flags("xpool t", "test");
  std::string s;
  int64_t n = 0;
  bool b = false;
  std::vector<std::string> env;
  flags.String("name", &s, "a name");
  flags.Int("jobs", &n, "jobs");
  flags.Bool("verbose", &b, "verbose");
  flags.Repeated("env", &env, "env");
  ASSERT_TRUE(flags
                  .Parse({"pos1", "--name", "x", "--jobs=-3", "--verbose", "--env", "A=1", "--env=B=2", "pos2", "--",
                          "--not-a-flag"})
                  .ok());
  EXPECT_EQ(s, "x");
  EXPECT_EQ(n, -3);
  EXPECT_TRUE(b);
  EXPECT_EQ(env, (std::vector<std::string>{"A=1", "B=2"}));
  EXPECT_EQ(flags.positional(), (std::vector<std::string>{"pos1", "pos2", "--not-a-flag"}));
  EXPECT_TRUE(flags.WasSet("jobs"));
}

TEST(FlagSetTest, ErrorsNameTheFlag) {
  FlagSet flags("xpool t", "test");
  int64_t n = 0;
  bool b = true;
  flags.Int("jobs", &n, "jobs");
  flags.Bool("verbose", &b, "verbose");
  EXPECT_NE(flags.Parse({"--nope"}).message().find("--nope"), std::string::npos);
  EXPECT_NE(flags.Parse({"--jobs"}).message().find("needs a value"), std::string::npos);
  EXPECT_NE(flags.Parse({"--jobs", "x"}).message().find("not an integer"), std::string::npos);
  EXPECT_TRUE(flags.Parse({"--verbose=false"}).ok());
  EXPECT_FALSE(b);
  Status help = flags.Parse({"--help"});
  EXPECT_EQ(help.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(help.message().find("--jobs VALUE"), std::string::npos);
}

// One-letter flags are written with one dash, as kubectl's: -o wide, -owide, -o=wide; -f alone for a bool.
TEST(FlagSetTest, OneLetterFlagsTakeOneDash) {
  for (const char* form : {"-owide", "-o=wide", "--o=wide"}) {
    SCOPED_TRACE(form);
    FlagSet flags("xpool t", "test");
    std::string o;
    flags.String("o", &o, "output");
    ASSERT_TRUE(flags.Parse({"jobs", form}).ok());
    EXPECT_EQ(o, "wide");
    EXPECT_EQ(flags.positional(), (std::vector<std::string>{"jobs"}));
  }
  FlagSet flags("xpool t", "test");
  std::string o;
  bool f = false;
  flags.String("o", &o, "output");
  flags.Bool("f", &f, "follow");
  ASSERT_TRUE(flags.Parse({"-o", "json", "-f", "-x", "-", "-1"}).ok());
  EXPECT_EQ(o, "json");
  EXPECT_TRUE(f);
  EXPECT_EQ(flags.positional(), (std::vector<std::string>{"-x", "-", "-1"}));  // not flags of this set
  EXPECT_NE(flags.Parse({"-o"}).message().find("flag -o needs a value"), std::string::npos);
  EXPECT_NE(flags.Usage().find("  -o VALUE"), std::string::npos) << flags.Usage();
  EXPECT_EQ(flags.Usage().find("--o"), std::string::npos) << flags.Usage();
}

}  // namespace
}  // namespace xpool
