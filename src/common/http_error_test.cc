#include "common/http_error.h"

#include <gtest/gtest.h>

#include <string>

namespace xpool {
namespace {

std::string Body(std::string_view code, std::string_view message) {
  return "{\"error\":{\"code\":\"" + std::string(code) + "\",\"message\":\"" + std::string(message) + "\"}}";
}

// Every canonical code the server can send comes back as itself, whatever HTTP status carried it.
TEST(StatusFromHttpErrorTest, TakesTheCodeFromTheBody) {
  const struct {
    int http;
    const char* name;
    StatusCode code;
  } rows[] = {
      {400, "INVALID_ARGUMENT", StatusCode::kInvalidArgument},
      {401, "UNAUTHENTICATED", StatusCode::kUnauthenticated},
      {403, "PERMISSION_DENIED", StatusCode::kPermissionDenied},
      {404, "NOT_FOUND", StatusCode::kNotFound},
      {409, "ALREADY_EXISTS", StatusCode::kAlreadyExists},
      {409, "FAILED_PRECONDITION", StatusCode::kFailedPrecondition},
      {409, "ABORTED", StatusCode::kAborted},
      {413, "RESOURCE_EXHAUSTED", StatusCode::kResourceExhausted},
      {503, "UNAVAILABLE", StatusCode::kUnavailable},
      {500, "INTERNAL", StatusCode::kInternal},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    Status s = StatusFromHttpError(r.http, Body(r.name, "job 7 is queued"));
    EXPECT_EQ(s.code(), r.code);
    EXPECT_EQ(s.message(), "job 7 is queued");
    EXPECT_EQ(StatusCodeFromName(r.name), r.code);
  }
}

// Without a code the server's (a proxy's page, a truncated body) the HTTP status decides.
TEST(StatusFromHttpErrorTest, FallsBackToTheHttpStatus) {
  const struct {
    int http;
    StatusCode code;
  } rows[] = {
      {400, StatusCode::kInvalidArgument},    {401, StatusCode::kUnauthenticated},
      {403, StatusCode::kPermissionDenied},   {404, StatusCode::kNotFound},
      {409, StatusCode::kFailedPrecondition}, {413, StatusCode::kResourceExhausted},
      {429, StatusCode::kResourceExhausted},  {502, StatusCode::kUnavailable},
      {503, StatusCode::kUnavailable},        {500, StatusCode::kInternal},
      {418, StatusCode::kInternal},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.http);
    EXPECT_EQ(StatusFromHttpError(r.http, "<html>Bad Gateway</html>").code(), r.code);
    EXPECT_EQ(StatusFromHttpError(r.http, Body("NO_SUCH_CODE", "x")).code(), r.code);
  }
  EXPECT_EQ(StatusFromHttpError(502, "<html>Bad Gateway</html>").message(), "<html>Bad Gateway</html>");
  EXPECT_EQ(StatusFromHttpError(502, "").message(), "HTTP 502");
  EXPECT_EQ(StatusFromHttpError(400, "{\"error\": 3}").message(), "{\"error\": 3}");
  EXPECT_EQ(StatusCodeFromName("OK"), StatusCode::kOk);
}

}  // namespace
}  // namespace xpool
