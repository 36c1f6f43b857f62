#pragma once
// Studio: serves the built web UI (sources in web/, built by CMake into BUILD/web) at `/` of the API server.
// Files are read from `web_dir` on each request (they are small, and a rebuild needs no restart); any GET path
// that names no file and has no extension gets index.html (the UI routes in the browser). It never answers
// /api/..., /metrics, /healthz or /readyz: Handles() says which requests are Studio's.
// When the UI was not built (no npm at build time) every page says so, with how to build it.
//
// Owned by the Server. Thread-safe: Serve() only reads files.
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

  bool built() const;
  const std::string& web_dir() const { return web_dir_; }
  StudioResponse Serve(std::string_view path) const;

 private:
  StudioResponse NotBuilt() const;
  std::string web_dir_;
};

}  // namespace xpool::server
