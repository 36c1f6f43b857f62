#include "store/testing/postgres_server.h"

#include <libpq-fe.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/testing/free_port.h"

namespace xpool::testing {
namespace {

namespace fs = std::filesystem;

bool IsExecutable(const fs::path& p) { return ::access(p.c_str(), X_OK) == 0; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string FindPostgresBinDir() {
  std::error_code ec;
  int best_version = -1;
  std::string best;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const fs::path bin = entry.path() / "bin";
    if (!IsExecutable(bin / "initdb") || !IsExecutable(bin / "pg_ctl")) continue;
    const int version = std::atoi(entry.path().filename().c_str());
    if (version > best_version) {
      best_version = version;
      best = bin.string();
    }
  }
  if (!best.empty()) return best;
  for (const char* dir : {"/usr/local/bin", "/usr/bin"}) {
    if (IsExecutable(fs::path(dir) / "initdb") && IsExecutable(fs::path(dir) / "pg_ctl")) return dir;
  }
  return "";
}

Result<std::unique_ptr<PostgresServer>> PostgresServer::Start() {
  std::unique_ptr<PostgresServer> server(new PostgresServer());
  server->bin_dir_ = FindPostgresBinDir();
  if (server->bin_dir_.empty()) {
    return FailedPreconditionError(
        "PostgreSQL binaries (initdb, pg_ctl) not found under /usr/lib/postgresql/*/bin "
        "— install Debian's 'postgresql' package to run the PostgreSQL store tests");
  }
  char tmpl[] = "/tmp/xpool-pg-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return InternalError("mkdtemp failed");
  server->dir_ = tmpl;
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam("postgres");
    if (pw == nullptr) {
      return FailedPreconditionError("running as root and no 'postgres' account to run initdb/postgres as");
    }
    if (::chown(server->dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      return InternalError("cannot hand " + server->dir_ + " to the postgres account");
    }
    server->run_as_ = "runuser -u postgres -- ";
  }
  const std::string data = server->dir_ + "/data";
  const std::string log = server->dir_ + "/initdb.log";
  std::string cmd = server->run_as_ + server->bin_dir_ + "/initdb -D " + data +
                    " -U xpool --auth=trust -E UTF8 --no-locale --no-sync > " + log + " 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    return InternalError("initdb failed (" + cmd + "):\n" + ReadFile(log));
  }
  // A free port can be taken between our probe and the server's bind; retry a few times.
  for (int attempt = 0; attempt < 5 && !server->started_; ++attempt) {
    server->port_ = FreePort();
    const std::string server_log = server->dir_ + "/server.log";
    cmd = server->run_as_ + server->bin_dir_ + "/pg_ctl -D " + data + " -l " + server_log + " -w -t 60 -o \"-c " +
          "listen_addresses=127.0.0.1 -p " + std::to_string(server->port_) + " -k " + server->dir_ +
          " -c fsync=off -c synchronous_commit=off -c full_page_writes=off\" start > /dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) {
      server->started_ = true;
    } else if (attempt == 4) {
      return InternalError("pg_ctl start failed:\n" + ReadFile(server_log));
    }
  }
  return server;
}

PostgresServer::~PostgresServer() {
  if (started_) {
    const std::string cmd = run_as_ + bin_dir_ + "/pg_ctl -D " + dir_ + "/data -m immediate -w stop > /dev/null 2>&1";
    (void)std::system(cmd.c_str());
  }
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

Result<std::string> PostgresServer::CreateDatabase(const std::string& name) {
  const std::string admin = "postgresql://xpool@127.0.0.1:" + std::to_string(port_) + "/postgres";
  PGconn* conn = PQconnectdb(admin.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn);
    PQfinish(conn);
    return InternalError("cannot connect to the test server: " + message);
  }
  PGresult* res = PQexec(conn, ("CREATE DATABASE " + name).c_str());
  const bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
  std::string message = PQerrorMessage(conn);
  PQclear(res);
  PQfinish(conn);
  if (!ok) return InternalError("CREATE DATABASE " + name + ": " + message);
  return "postgresql://xpool@127.0.0.1:" + std::to_string(port_) + "/" + name;
}

}  // namespace xpool::testing
