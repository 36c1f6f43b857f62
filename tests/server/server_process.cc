#include "server_process.h"

#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace xpool::testing {

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

ServerProcess::ServerProcess(std::string binary, std::string state_dir)
    : binary_(std::move(binary)), state_dir_(std::move(state_dir)) {}

ServerProcess::~ServerProcess() { Stop(); }

bool ServerProcess::Start(const std::string& extra_flags) {
  if (port_ == 0) port_ = FreePort();
  std::string listen = "127.0.0.1:" + std::to_string(port_);
  std::vector<std::string> args = {binary_, "server", "--listen", listen, "--state-dir", state_dir_};
  std::istringstream extra(extra_flags);
  for (std::string a; extra >> a;) args.push_back(a);
  std::string log = state_dir_ + "/server.log";
  pid_ = ::fork();
  if (pid_ == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid_ < 0) return false;
  httplib::Client client(url());
  client.set_connection_timeout(0, 200000);
  for (int i = 0; i < 600; ++i) {
    auto res = client.Get("/healthz");
    if (res && res->status == 200) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

void ServerProcess::Kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void ServerProcess::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Kill9();
}

std::string ServerProcess::AdminToken() const {
  std::ifstream in(state_dir_ + "/admin.token");
  std::string token;
  std::getline(in, token);
  return token;
}

std::string ServerProcess::Log() const {
  std::ifstream in(state_dir_ + "/server.log");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace xpool::testing
