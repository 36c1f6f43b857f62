#include "support/xpool_process.h"

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace xpool::testing {

std::filesystem::path TempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("xpool_e2e_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  LetTasksWrite(dir);
  return dir;
}

bool XpoolProcess::WaitHealthy(int port, int seconds) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(0, 200000);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    auto res = client.Get("/healthz");
    if (res && res->status == 200) return true;
    if (!Alive()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

ServerProcess::ServerProcess(std::string binary, std::string state_dir)
    : state_dir_(std::move(state_dir)), process_(std::move(binary)) {}

bool ServerProcess::Start(const std::string& extra_flags) {
  if (port_ == 0) port_ = FreePort();
  std::vector<std::string> args = {"server", "--listen", "127.0.0.1:" + std::to_string(port_), "--state-dir",
                                   state_dir_};
  std::istringstream extra(extra_flags);
  for (std::string a; extra >> a;) args.push_back(a);
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (!process_.Start(args, cwd, std::filesystem::path(state_dir_) / "server.log")) return false;
  return process_.WaitHealthy(port_, 60);
}

std::unique_ptr<httplib::Client> ServerProcess::Client(const std::string& token) const {
  auto c = std::make_unique<httplib::Client>(url());
  if (!token.empty()) c->set_bearer_token_auth(token.c_str());
  c->set_connection_timeout(2, 0);
  c->set_read_timeout(20, 0);
  return c;
}

namespace {

// The port in `xpool up`'s hint "export XPOOL_SERVER=http://127.0.0.1:PORT"; -1 while the hint is not there.
int HintedPort(const std::string& log) {
  const std::string prefix = "XPOOL_SERVER=http://127.0.0.1:";
  const size_t at = log.find(prefix);
  if (at == std::string::npos) return -1;
  int port = 0;
  for (size_t i = at + prefix.size(); i < log.size() && log[i] >= '0' && log[i] <= '9'; ++i) {
    port = port * 10 + (log[i] - '0');
  }
  return port;
}

}  // namespace

bool UpProcess::Start(const std::vector<std::string>& extra_args, int seconds) {
  std::vector<std::string> args = {"up", "--listen", "127.0.0.1:0", "--state-dir", (dir_ / "var").string()};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  if (!process_.Start(args, dir_, dir_ / "up.log")) return false;
  std::unique_ptr<httplib::Client> client;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!process_.Alive()) return false;
    if (port_ <= 0) {
      port_ = HintedPort(Log());
      if (port_ == 0) return false;  // the hint must name the bound port, never 0
    }
    if (port_ > 0 && token_.empty()) token_ = ReadFile(dir_ / "var" / "admin.token");
    if (port_ > 0 && !token_.empty()) {
      if (!client) {
        client = std::make_unique<httplib::Client>("127.0.0.1", port_);
        client->set_connection_timeout(2, 0);
        client->set_read_timeout(10, 0);
        client->set_bearer_token_auth(token_.c_str());
      }
      auto r = client->Get("/api/v1/nodes");
      if (r && r->status == 200) {
        const nlohmann::json body = nlohmann::json::parse(r->body, nullptr, /*allow_exceptions=*/false);
        if (body.is_object() && body.contains("nodes") && !body["nodes"].empty()) return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace xpool::testing
