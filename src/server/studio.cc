#include "server/studio.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#ifndef XPOOL_DEFAULT_WEB_DIR
#define XPOOL_DEFAULT_WEB_DIR ""
#endif

namespace xpool::server {
namespace {

namespace fs = std::filesystem;

// Reads a regular file, never through a symlink (one swapped in after the scan is refused by O_NOFOLLOW).
bool ReadFile(const std::string& path, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  out->clear();
  char buf[65536];
  while (ok) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ok = false;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return ok;
}

// index.html's change time (0 when it is not a regular file), the mark of a rebuilt bundle.
int64_t IndexStamp(const std::string& web_dir) {
  struct stat st {};
  if (web_dir.empty() || ::lstat((web_dir + "/index.html").c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec + 1;
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

bool Studio::built() const { return IndexStamp(web_dir_) != 0; }

std::shared_ptr<const Studio::Bundle> Studio::Scan(int64_t stamp) const {
  auto bundle = std::make_shared<Bundle>();
  bundle->index_stamp = stamp;
  std::error_code ec;
  // Directory symlinks are not followed (directory_options::none); file symlinks are left out below.
  fs::recursive_directory_iterator it(web_dir_, fs::directory_options::none, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.front() == '.') {  // hidden files and directories are never served
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->symlink_status(ec).type() != fs::file_type::regular) continue;
    if (bundle->files.size() >= kMaxFiles) break;
    bundle->files.emplace(fs::relative(it->path(), web_dir_, ec).generic_string(), it->path().string());
  }
  return bundle;
}

std::shared_ptr<const Studio::Bundle> Studio::CurrentBundle() const {
  const int64_t stamp = IndexStamp(web_dir_);
  std::lock_guard lock(mu_);
  if (bundle_ == nullptr || bundle_->index_stamp != stamp) bundle_ = Scan(stamp);
  return bundle_;
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
  // The request path is a key into the allow-list, never a path on disk.
  const std::shared_ptr<const Bundle> bundle = CurrentBundle();
  const std::string_view rel = path.substr(path.starts_with('/') ? 1 : 0);
  const std::string_view last = rel.substr(rel.rfind('/') == std::string_view::npos ? 0 : rel.rfind('/') + 1);
  const bool has_extension = last.find('.') != std::string_view::npos;
  if (auto file = bundle->files.find(rel); file != bundle->files.end() && ReadFile(file->second, &r.body)) {
    r.content_type = std::string(ContentType(rel));
    // Bundles have content hashes in their names (assets/...); index.html must always be fresh.
    r.headers.emplace_back("Cache-Control",
                           rel.starts_with("assets/") ? "public, max-age=31536000, immutable" : "no-cache");
    return r;
  }
  auto index = bundle->files.find(std::string_view("index.html"));
  if (!has_extension && index != bundle->files.end() && ReadFile(index->second, &r.body)) {
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
