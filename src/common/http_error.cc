#include "common/http_error.h"

#include <nlohmann/json.hpp>
#include <string>

namespace xpool {
namespace {

constexpr StatusCode kAllCodes[] = {
    StatusCode::kInvalidArgument,    StatusCode::kNotFound,          StatusCode::kAlreadyExists,
    StatusCode::kFailedPrecondition, StatusCode::kResourceExhausted, StatusCode::kPermissionDenied,
    StatusCode::kUnauthenticated,    StatusCode::kUnavailable,       StatusCode::kAborted,
    StatusCode::kInternal,
};

StatusCode CodeForHttpStatus(int http_status) {
  switch (http_status) {
    case 400:
      return StatusCode::kInvalidArgument;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 409:
      return StatusCode::kFailedPrecondition;
    case 413:
    case 429:
      return StatusCode::kResourceExhausted;
    case 502:
    case 503:
    case 504:
      return StatusCode::kUnavailable;
    default:
      return StatusCode::kInternal;
  }
}

}  // namespace

StatusCode StatusCodeFromName(std::string_view name) {
  for (StatusCode c : kAllCodes) {
    if (StatusCodeName(c) == name) return c;
  }
  return StatusCode::kOk;
}

Status StatusFromHttpError(int http_status, std::string_view body) {
  StatusCode code = StatusCode::kOk;
  std::string message;
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    const nlohmann::json& e = j["error"];
    if (e.contains("code") && e["code"].is_string()) code = StatusCodeFromName(e["code"].get<std::string>());
    if (e.contains("message") && e["message"].is_string()) message = e["message"].get<std::string>();
  }
  if (code == StatusCode::kOk) code = CodeForHttpStatus(http_status);
  if (message.empty()) message = std::string(body.substr(0, 512));
  if (message.empty()) message = "HTTP " + std::to_string(http_status);
  return Status(code, std::move(message));
}

}  // namespace xpool
