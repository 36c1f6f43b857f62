#include "server/auth.h"

#include <cctype>

namespace xpool::server {

std::optional<std::string> BearerToken(std::string_view header) {
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() <= kScheme.size()) return std::nullopt;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return std::nullopt;
  }
  std::string_view token = header.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\r')) token.remove_suffix(1);
  if (token.empty() || token.size() > 512) return std::nullopt;
  return std::string(token);
}

}  // namespace xpool::server
