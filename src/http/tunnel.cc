#include "http/tunnel.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace xpool::http {
namespace {

constexpr int kMaxEvents = 128;
constexpr int64_t kSweepMs = 200;
constexpr size_t kReadChunk = 64 << 10;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void SetNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// One end of a tunnel: its socket and the bytes waiting to be written to it.
struct Side {
  int fd = -1;
  std::string out;
  size_t out_pos = 0;
  bool read_eof = false;    // its peer ended its output
  bool write_shut = false;  // we ended our output to it (after the other side's EOF)
  uint32_t events = 0;      // the epoll interest now
  size_t pending() const { return out.size() - out_pos; }
};

struct Tunnel {
  Side side[2];
  int64_t last_io = 0;
  int64_t last_report = 0;
  TunnelPool::Activity on_activity;
};

struct Added {
  int a, b;
  std::string to_b, to_a;
  TunnelPool::Activity on_activity;
};

}  // namespace

struct TunnelPool::Impl {
  explicit Impl(const TunnelOptions& o) : options(o) {}
  const TunnelOptions options;
  int epoll_fd = -1, wake_fd = -1;
  std::atomic<int> open{0};
  std::mutex mu;
  std::vector<Added> added;  // guarded by mu
  bool stopped = false;      // guarded by mu
  std::thread thread;

  // The thread's own state.
  std::unordered_map<uint64_t, std::unique_ptr<Tunnel>> tunnels;
  uint64_t next_id = 1;
  std::vector<char> buffer = std::vector<char>(kReadChunk);

  void Loop();
  void Start(Added a, int64_t now);
  // Moves what can move without blocking; false when the tunnel was closed.
  bool Pump(uint64_t id, Tunnel& t, int64_t now);
  // Writes side's pending bytes; false on a socket error.
  static bool Flush(Side& s);
  void Watch(uint64_t id, Tunnel& t, int which);
  void Close(uint64_t id);
};

TunnelPool::TunnelPool(TunnelOptions options) : options_(options), impl_(std::make_unique<Impl>(options)) {
  impl_->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  impl_->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;  // tunnel ids start at 1
  ::epoll_ctl(impl_->epoll_fd, EPOLL_CTL_ADD, impl_->wake_fd, &ev);
  impl_->thread = std::thread([impl = impl_.get()] { impl->Loop(); });
}

TunnelPool::~TunnelPool() {
  Stop();
  ::close(impl_->epoll_fd);
  ::close(impl_->wake_fd);
}

int TunnelPool::open() const { return impl_->open.load(std::memory_order_relaxed); }

Status TunnelPool::Add(int a, std::string to_b, int b, std::string to_a, Activity on_activity) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    const bool stopped = impl_->stopped;
    const bool room = impl_->open.load() < options_.max_tunnels;
    if (stopped || !room) {
      ::close(a);
      ::close(b);
      if (stopped) return UnavailableError("the tunnel pool is stopped");
      return ResourceExhaustedError("too many open tunnels (" + std::to_string(options_.max_tunnels) + ")");
    }
    impl_->open.fetch_add(1);
    impl_->added.push_back(Added{a, b, std::move(to_b), std::move(to_a), std::move(on_activity)});
  }
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(impl_->wake_fd, &one, sizeof(one));
  return Status::Ok();
}

void TunnelPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(impl_->wake_fd, &one, sizeof(one));
  if (impl_->thread.joinable()) impl_->thread.join();
}

void TunnelPool::Impl::Loop() {
  epoll_event events[kMaxEvents];
  int64_t last_sweep = NowMs();
  while (true) {
    const int n = ::epoll_wait(epoll_fd, events, kMaxEvents, static_cast<int>(kSweepMs));
    const int64_t now = NowMs();
    std::vector<Added> fresh;
    bool stop = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      fresh.swap(added);
      stop = stopped;
    }
    if (stop) {
      for (Added& a : fresh) {
        ::close(a.a);
        ::close(a.b);
      }
      while (!tunnels.empty()) Close(tunnels.begin()->first);
      open = 0;
      return;
    }
    for (Added& a : fresh) Start(std::move(a), now);
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == 0) {
        uint64_t count = 0;
        [[maybe_unused]] ssize_t r = ::read(wake_fd, &count, sizeof(count));
        continue;
      }
      auto it = tunnels.find(id);
      if (it == tunnels.end()) continue;
      if (events[i].events & EPOLLERR) {
        Close(id);
        continue;
      }
      if (!Pump(id, *it->second, now)) continue;
      if (events[i].events & EPOLLHUP) Close(id);  // both directions of a socket are gone
    }
    if (now - last_sweep >= kSweepMs) {
      last_sweep = now;
      std::vector<uint64_t> idle;
      for (const auto& [id, t] : tunnels) {
        if (now - t->last_io >= options.idle_timeout_ms) idle.push_back(id);
      }
      for (uint64_t id : idle) Close(id);
    }
  }
}

void TunnelPool::Impl::Start(Added a, int64_t now) {
  const uint64_t id = next_id++;
  auto t = std::make_unique<Tunnel>();
  SetNonBlocking(a.a);
  SetNonBlocking(a.b);
  t->side[0].fd = a.a;
  t->side[1].fd = a.b;
  t->side[1].out = std::move(a.to_b);
  t->side[0].out = std::move(a.to_a);
  t->last_io = now;
  t->on_activity = std::move(a.on_activity);
  Tunnel& ref = *t;
  tunnels[id] = std::move(t);
  for (int which : {0, 1}) {
    epoll_event ev{};
    ev.events = 0;
    ev.data.u64 = id;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, ref.side[which].fd, &ev);
  }
  Pump(id, ref, now);
}

bool TunnelPool::Impl::Flush(Side& s) {
  while (s.pending() > 0) {
    const ssize_t n = ::send(s.fd, s.out.data() + s.out_pos, s.pending(), MSG_NOSIGNAL);
    if (n > 0) {
      s.out_pos += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;
  }
  s.out.clear();
  s.out_pos = 0;
  return true;
}

bool TunnelPool::Impl::Pump(uint64_t id, Tunnel& t, int64_t now) {
  bool moved = false;
  for (int from : {0, 1}) {
    Side& src = t.side[from];
    Side& dst = t.side[1 - from];
    const size_t before = dst.pending();
    if (!Flush(dst)) {
      Close(id);
      return false;
    }
    moved = moved || dst.pending() != before;
    while (!src.read_eof && dst.pending() < options.buffer_bytes) {
      const size_t want = std::min(buffer.size(), options.buffer_bytes - dst.pending());
      const ssize_t n = ::recv(src.fd, buffer.data(), want, 0);
      if (n > 0) {
        if (dst.out_pos > 0 && dst.out_pos == dst.out.size()) {
          dst.out.clear();
          dst.out_pos = 0;
        }
        dst.out.append(buffer.data(), static_cast<size_t>(n));
        moved = true;
        if (!Flush(dst)) {
          Close(id);
          return false;
        }
        continue;
      }
      if (n == 0) {
        src.read_eof = true;
        break;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      Close(id);
      return false;
    }
    if (src.read_eof && dst.pending() == 0 && !dst.write_shut) {
      ::shutdown(dst.fd, SHUT_WR);
      dst.write_shut = true;
    }
  }
  if (t.side[0].write_shut && t.side[1].write_shut) {
    Close(id);
    return false;
  }
  if (moved) {
    t.last_io = now;
    if (t.on_activity && now - t.last_report >= options.activity_interval_ms) {
      t.last_report = now;
      t.on_activity();
    }
  }
  Watch(id, t, 0);
  Watch(id, t, 1);
  return true;
}

void TunnelPool::Impl::Watch(uint64_t id, Tunnel& t, int which) {
  Side& s = t.side[which];
  const Side& other = t.side[1 - which];
  uint32_t events = 0;
  if (!s.read_eof && other.pending() < options.buffer_bytes) events |= EPOLLIN;
  if (s.pending() > 0) events |= EPOLLOUT;
  if (events == s.events) return;
  s.events = events;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = id;
  ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, s.fd, &ev);
}

void TunnelPool::Impl::Close(uint64_t id) {
  auto it = tunnels.find(id);
  if (it == tunnels.end()) return;
  for (Side& s : it->second->side) {
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, s.fd, nullptr);
    ::close(s.fd);
  }
  tunnels.erase(it);
  open.fetch_sub(1);
}

}  // namespace xpool::http
