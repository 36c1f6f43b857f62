#pragma once
// The client side of the API's error contract: an HTTP answer that is not 2xx becomes the Status the server
// meant. The server sends {"error": {"code": "FAILED_PRECONDITION", "message": "..."}} (server/http_status.h);
// the canonical code in the body is taken as it is, so a 409 stays FailedPrecondition, AlreadyExists or Aborted
// and a 413 ResourceExhausted. A body without a known code (a proxy's page, an older server) falls back to the
// HTTP status: 400 InvalidArgument, 401 Unauthenticated, 403 PermissionDenied, 404 NotFound, 409
// FailedPrecondition, 413/429 ResourceExhausted, 502/503/504 Unavailable, anything else Internal.
// The one such mapping: the CLI and the agent's HTTP client both use it. Stateless; thread-safe.
#include <string_view>

#include "common/status.h"

namespace xpool {

// The StatusCode named `name` ("NOT_FOUND", as StatusCodeName writes it); kOk for an unknown name.
StatusCode StatusCodeFromName(std::string_view name);

// The Status for a non-2xx answer: its code as above, its message the body's error message (else the body
// itself, clipped to 512 bytes; else "HTTP <status>").
Status StatusFromHttpError(int http_status, std::string_view body);

}  // namespace xpool
