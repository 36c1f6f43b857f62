#include "http/http_message.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace xpool::http {
namespace {

TEST(HttpMessageTest, PercentDecodeKeepsMalformedEscapes) {
  EXPECT_EQ(PercentDecode("/a%20b%2Fc", false), "/a b/c");
  EXPECT_EQ(PercentDecode("a+b", false), "a+b");
  EXPECT_EQ(PercentDecode("a+b", true), "a b");
  EXPECT_EQ(PercentDecode("100%", false), "100%");
  EXPECT_EQ(PercentDecode("%zz%4", false), "%zz%4");
  EXPECT_EQ(PercentDecode("%41%42", false), "AB");
}

TEST(HttpMessageTest, ParseQueryDecodesNamesAndValuesInOrder) {
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(ParseQuery("a=1&b=x%20y+z&c&&a=2&=v"),
            (Pairs{{"a", "1"}, {"b", "x y z"}, {"c", ""}, {"a", "2"}, {"", "v"}}));
  EXPECT_TRUE(ParseQuery("").empty());
}

TEST(HttpMessageTest, HeaderLookupIgnoresCase) {
  HttpRequest r;
  r.headers = {{"content-type", "application/json"}, {"x", "1"}, {"x", "2"}};
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  EXPECT_EQ(r.Header("X"), "1");
  EXPECT_EQ(r.Header("missing"), "");
  EXPECT_EQ(ReasonPhrase(431), "Request Header Fields Too Large");
}

}  // namespace
}  // namespace xpool::http
