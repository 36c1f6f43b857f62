#include "server/http_status.h"

#include <nlohmann/json.hpp>

namespace xpool::server {

int HttpStatusFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
      return 409;
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kAborted:
      return 409;
    case StatusCode::kResourceExhausted:
      return 413;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

std::string ErrorBody(const Status& status) {
  nlohmann::json body;
  body["error"]["code"] = std::string(StatusCodeName(status.code()));
  body["error"]["message"] = status.message();
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace xpool::server
