#pragma once
// Bearer tokens: generation and hashing. The store keeps only Sha256Hex(token); compare hashes, never tokens.
// Stateless functions; thread-safe.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace xpool {

// SHA-256 (FIPS 180-4) of `data`.
std::array<uint8_t, 32> Sha256(std::string_view data);
// Lower-case hex of Sha256(data), 64 characters.
std::string Sha256Hex(std::string_view data);

// A new random token "xpt_" + 48 hex characters (192 bits from /dev/urandom). Unavailable if the system's
// random source cannot be read.
Result<std::string> GenerateToken();

}  // namespace xpool
