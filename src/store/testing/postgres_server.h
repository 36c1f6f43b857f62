#pragma once
// PostgresServer: a throw-away PostgreSQL server for tests — initdb + pg_ctl in a temp dir, listening on
// 127.0.0.1 on a free port, trust auth for a user "xpool", fsync off (tests need transactions, not power-loss
// durability). initdb and postgres refuse to run as root, so as root the binaries run as the "postgres"
// account (runuser) and the temp dir is handed to it.
// Owned by the test that starts it; stopped (immediate) and removed on destruction. Not thread-safe.
#include <memory>
#include <string>

#include "common/status.h"

namespace xpool::testing {

class PostgresServer {
 public:
  // FailedPrecondition (tests should skip with its message) when no PostgreSQL binaries are installed or no
  // unprivileged account exists to run them; Internal when they are there but fail.
  static Result<std::unique_ptr<PostgresServer>> Start();
  ~PostgresServer();

  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  int port() const { return port_; }
  // A new, empty database; returns its URI "postgresql://xpool@127.0.0.1:PORT/NAME".
  Result<std::string> CreateDatabase(const std::string& name);
  // Where the binaries were found (for messages).
  const std::string& bin_dir() const { return bin_dir_; }

 private:
  PostgresServer() = default;
  std::string bin_dir_;
  std::string dir_;
  std::string run_as_;  // "" or "runuser -u postgres -- "
  int port_ = 0;
  bool started_ = false;
};

// The directory holding initdb/pg_ctl/postgres, or "" when none. Prefers Debian's /usr/lib/postgresql/N/bin
// (highest N).
std::string FindPostgresBinDir();

}  // namespace xpool::testing
