#include "server/http_status.h"

#include <gtest/gtest.h>

#include "server/auth.h"

namespace xpool::server {
namespace {

TEST(HttpStatusTest, EveryCodeMaps) {
  struct Row {
    Status status;
    int http;
  };
  const Row rows[] = {
      {Status::Ok(), 200},
      {InvalidArgumentError("x"), 400},
      {UnauthenticatedError("x"), 401},
      {PermissionDeniedError("x"), 403},
      {NotFoundError("x"), 404},
      {AlreadyExistsError("x"), 409},
      {FailedPreconditionError("x"), 409},
      {AbortedError("x"), 409},
      {ResourceExhaustedError("x"), 413},
      {InternalError("x"), 500},
      {UnavailableError("x"), 503},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.status.ToString());
    EXPECT_EQ(HttpStatusFor(r.status), r.http);
  }
}

TEST(HttpStatusTest, ErrorBodyEscapes) {
  EXPECT_EQ(ErrorBody(InvalidArgumentError("bad \"x\"")),
            R"({"error":{"code":"INVALID_ARGUMENT","message":"bad \"x\""}})");
}

TEST(AuthTest, BearerToken) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("bearer  abc "), "abc");
  EXPECT_EQ(BearerToken("Basic abc"), std::nullopt);
  EXPECT_EQ(BearerToken("Bearer "), std::nullopt);
  EXPECT_EQ(BearerToken(""), std::nullopt);
}

}  // namespace
}  // namespace xpool::server
