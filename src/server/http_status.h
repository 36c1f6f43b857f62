#pragma once
// The one mapping from a Status to an HTTP status code, and the JSON error body the API answers with.
// Stateless functions; thread-safe.
#include <string>

#include "common/status.h"

namespace xpool::server {

// OK→200, InvalidArgument→400, Unauthenticated→401, PermissionDenied→403, NotFound→404, AlreadyExists→409,
// FailedPrecondition→409, Aborted→409, ResourceExhausted→413 (a body or request over a limit),
// Unavailable→503, Internal→500. The only place in xpool that decides this.
int HttpStatusFor(const Status& status);

// {"error":{"code":"INVALID_ARGUMENT","message":"..."}} with the message JSON-escaped.
std::string ErrorBody(const Status& status);

}  // namespace xpool::server
