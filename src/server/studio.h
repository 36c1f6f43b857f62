#pragma once
// Studio: serves the built web UI (sources in web/, built by CMake into BUILD/web) at `/` of the API server.
// What it may serve is an allow-list: the regular files found under `web_dir` when it scans it (no symlinks, no
// hidden names, at most kMaxFiles), each under its relative name. A request path is only ever a key into that
// list, never joined to a directory, so `//etc/shadow`, `/%2e%2e/...` or a symlink planted in the bundle name
// nothing. The list is scanned again when index.html changes (a rebuild needs no restart); files are read on
// each request. Any GET path that names no listed file and has no extension gets index.html (the UI routes in the
// browser). It never answers /api/..., /metrics, /healthz or /readyz: Handles() says which requests are Studio's.
// When the UI was not built (no npm at build time) every page says so, with how to build it.
//
// Owned by the Server. Thread-safe: the list is swapped under a mutex; Serve() reads files.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xpool::server {

struct StudioResponse {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

class Studio {
 public:
  explicit Studio(std::string web_dir);

  // Where the built UI is when no --web-dir is given: next to the binary (BIN/../web, as in build/bin/xpool →
  // build/web), else the build directory this binary was compiled in.
  static std::string DefaultWebDir();
  // True for GET/HEAD requests outside the API and the operations routes.
  static bool Handles(std::string_view method, std::string_view path);
  static std::string_view ContentType(std::string_view path);

  // The most files the allow-list holds (a bundle has tens); the rest are not served.
  static constexpr size_t kMaxFiles = 4096;

  bool built() const;
  const std::string& web_dir() const { return web_dir_; }
  StudioResponse Serve(std::string_view path) const;

 private:
  // The allow-list: relative name ("assets/app-1234.js") → the file's path, and index.html's change time when
  // scanned (nanoseconds since the epoch of the file clock).
  struct Bundle {
    std::map<std::string, std::string, std::less<>> files;
    int64_t index_stamp = 0;
  };
  // The current list, scanned again when index.html's change time differs from the one it was built at.
  std::shared_ptr<const Bundle> CurrentBundle() const;
  std::shared_ptr<const Bundle> Scan(int64_t stamp) const;
  StudioResponse NotBuilt() const;
  std::string web_dir_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const Bundle> bundle_;  // guarded by mu_
};

}  // namespace xpool::server
