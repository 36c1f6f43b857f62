#include <charconv>
#include <cstdint>
#include <string>

#include "store/internal/sql_rows.h"
#include "store/postgres/postgres_store.h"
#include "store/sqlite/sqlite_store.h"
#include "store/state_store.h"

namespace xpool {
namespace {

Status ParseSqliteOptions(std::string_view query, SqliteStoreOptions* options) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    if (key != "max_size_mib") {
      return InvalidArgumentError("unknown sqlite store option '" + store_internal::Printable(key) +
                                  "' (known: max_size_mib)");
    }
    int64_t mib = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), mib);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size() || mib < 1 || mib > (1 << 30)) {
      return InvalidArgumentError("sqlite store option max_size_mib must be an integer 1..1073741824, got '" +
                                  store_internal::Printable(value) + "'");
    }
    options->max_size_mib = mib;
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<StateStore>> OpenStateStore(std::string_view location) {
  auto starts_with = [location](std::string_view prefix) { return location.substr(0, prefix.size()) == prefix; };
  if (location.empty()) return InvalidArgumentError("store location is empty");
  if (starts_with("postgres://") || starts_with("postgresql://") || starts_with("host=") || starts_with("dbname=")) {
    return OpenPostgresStore(std::string(location));
  }
  SqliteStoreOptions options;
  if (starts_with("sqlite:")) {
    location.remove_prefix(7);
    // Options after '?' (only with the sqlite: prefix, so a plain path may contain '?'): max_size_mib=N.
    const size_t q = location.find('?');
    if (q != std::string_view::npos) {
      RETURN_IF_ERROR(ParseSqliteOptions(location.substr(q + 1), &options));
      location = location.substr(0, q);
    }
  }
  if (location.empty()) return InvalidArgumentError("store location 'sqlite:' names no file");
  return OpenSqliteStore(std::string(location), options);
}

}  // namespace xpool
