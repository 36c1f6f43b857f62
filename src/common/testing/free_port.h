#pragma once
// FreePort: a TCP port on 127.0.0.1 that was free a moment ago, for tests that start servers (the end-to-end
// tests' tests/support, the PostgreSQL test server in src/store/testing). Header-only and test-only: src/
// code under test never depends on tests/, so the one copy lives here. Stateless; thread-safe.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace xpool::testing {

// A port another process may take before the caller binds it: retry on a bind failure. 0 when none was found.
inline int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
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

}  // namespace xpool::testing
