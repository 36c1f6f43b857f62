#pragma once
// Reading bearer tokens from requests. Tokens are generated and hashed by store/token.h and checked by
// StateStore::Authenticate; the server never logs or stores a token's plaintext.
// Stateless functions; thread-safe.
#include <optional>
#include <string>
#include <string_view>

namespace xpool::server {

// The token from "Bearer <token>" (scheme case-insensitive); nullopt when absent or malformed.
std::optional<std::string> BearerToken(std::string_view authorization_header);

}  // namespace xpool::server
