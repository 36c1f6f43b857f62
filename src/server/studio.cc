#include "server/studio.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef XPOOL_DEFAULT_WEB_DIR
#define XPOOL_DEFAULT_WEB_DIR ""
#endif

namespace xpool::server {
namespace {

namespace fs = std::filesystem;

bool ReadFile(const fs::path& path, std::string* out) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buf;
  buf << in.rdbuf();
  *out = buf.str();
  return true;
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// No external requests: scripts, styles, images and API calls only from this server.
constexpr const char* kPolicy =
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

}  // namespace

Studio::Studio(std::string web_dir) : web_dir_(std::move(web_dir)) {}

std::string Studio::DefaultWebDir() {
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = '\0';
    fs::path beside = fs::path(exe).parent_path().parent_path() / "web";
    std::error_code ec;
    if (fs::exists(beside / "index.html", ec)) return beside.string();
  }
  return XPOOL_DEFAULT_WEB_DIR;
}

bool Studio::Handles(std::string_view method, std::string_view path) {
  if (method != "GET" && method != "HEAD") return false;
  if (path == "/api" || path.starts_with("/api/")) return false;
  return path != "/metrics" && path != "/healthz" && path != "/readyz";
}

std::string_view Studio::ContentType(std::string_view path) {
  static const std::pair<std::string_view, std::string_view> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".txt", "text/plain; charset=utf-8"},
      {".woff2", "font/woff2"},
  };
  for (const auto& [ext, type] : kTypes) {
    if (path.ends_with(ext)) return type;
  }
  return "application/octet-stream";
}

bool Studio::built() const {
  std::error_code ec;
  return !web_dir_.empty() && fs::is_regular_file(fs::path(web_dir_) / "index.html", ec);
}

StudioResponse Studio::NotBuilt() const {
  StudioResponse r;
  r.status = 503;
  r.content_type = "text/html; charset=utf-8";
  r.body =
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>xpool Studio</title></head>"
      "<body style=\"font-family:sans-serif;max-width:40em;margin:3em auto\"><h1>xpool Studio is not built</h1>"
      "<p>No built web UI was found in <code>" +
      HtmlEscape(web_dir_.empty() ? "(no directory)" : web_dir_) +
      "</code>.</p><p>Studio is built by the normal build when Node.js and npm are installed (<code>make deps</code> "
      "installs them, then <code>make build</code>), or pass <code>--web-dir</code> to a built copy.</p>"
      "<p>The REST API works without it: <a href=\"/api/v1/openapi.json\">/api/v1/openapi.json</a>.</p></body></html>";
  r.headers = {{"Cache-Control", "no-store"}, {"Content-Security-Policy", kPolicy}};
  return r;
}

StudioResponse Studio::Serve(std::string_view path) const {
  if (!built()) return NotBuilt();
  StudioResponse r;
  r.headers = {
      {"X-Content-Type-Options", "nosniff"}, {"Content-Security-Policy", kPolicy}, {"Referrer-Policy", "no-referrer"}};
  // Only plain relative names below web_dir: no "..", no hidden files, no backslashes.
  std::string rel(path.substr(path.starts_with('/') ? 1 : 0));
  bool safe = rel.find('\\') == std::string::npos && rel.find('\0') == std::string::npos;
  std::stringstream parts(rel);
  std::string part;
  while (safe && std::getline(parts, part, '/')) {
    if (!part.empty() && part.front() == '.') safe = false;
  }
  const std::string last = rel.substr(rel.rfind('/') == std::string::npos ? 0 : rel.rfind('/') + 1);
  const bool has_extension = last.find('.') != std::string::npos;
  if (safe && !rel.empty() && ReadFile(fs::path(web_dir_) / rel, &r.body)) {
    r.content_type = std::string(ContentType(rel));
    // Bundles have content hashes in their names (assets/...); index.html must always be fresh.
    r.headers.emplace_back("Cache-Control",
                           rel.starts_with("assets/") ? "public, max-age=31536000, immutable" : "no-cache");
    return r;
  }
  if (!has_extension && ReadFile(fs::path(web_dir_) / "index.html", &r.body)) {
    r.content_type = "text/html; charset=utf-8";
    r.headers.emplace_back("Cache-Control", "no-cache");
    return r;
  }
  r.status = 404;
  r.content_type = "text/plain; charset=utf-8";
  r.body = "not found\n";
  return r;
}

}  // namespace xpool::server
