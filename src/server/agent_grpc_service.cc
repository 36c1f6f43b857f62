// The only file of the server that includes gRPC: it adapts the Agent service to Api's agent calls.
#include "server/agent_grpc_service.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "agent/v1/agent.grpc.pb.h"
#include "common/grpc_status.h"
#include "common/thread_priority.h"
#include "protocol/grpc_codec.h"
#include "protocol/grpc_runtime.h"
#include "server/api.h"
#include "server/change_feed.h"

namespace xpool::server {
namespace {

namespace v1 = agent::v1;

std::string Authorization(const grpc::ServerContextBase* ctx) {
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  return it == md.end() ? "" : std::string(it->second.data(), it->second.size());
}

// One agent's WaitForChange long-poll, held without a thread: a ChangeFeed subscription finishes it when the
// node's generation moves; the client's deadline (or the server's shutdown) cancels it. Deletes itself when done.
class ChangeWait final : public grpc::ServerUnaryReactor {
 public:
  ChangeWait(ChangeFeed& feed, const v1::WaitForChangeRequest& request, v1::WaitForChangeReply* reply)
      : feed_(feed), reply_(reply) {
    // The subscription may answer at once (a change the agent missed): then id_ stays 0 and Cancel is a no-op.
    // Otherwise it runs on the thread of the Bump, never twice.
    id_ = feed_.Subscribe(request.node(), request.seen(), [this](int64_t generation) {
      reply_->set_generation(generation);
      Finish(grpc::Status::OK);
    });
  }
  void OnCancel() override {
    // Still subscribed (nothing changed before the deadline): this RPC ends here; else the callback finished it.
    if (feed_.Cancel(id_.load())) Finish(grpc::Status::CANCELLED);
  }
  void OnDone() override { delete this; }

 private:
  ChangeFeed& feed_;
  v1::WaitForChangeReply* reply_;
  std::atomic<uint64_t> id_{0};
};

// How many threads run the agents' calls (at least; one per core on a larger machine). Most heartbeats write
// nothing (running tasks report again), but one that reports a task started or ended waits for the store's writer
// (a commit and its fsync each, one at a time): under 1,500 agents several such calls at once are usual (`gdb`
// stacks during `xpool_server_load --mode agents`), and with 4 threads they held up the heartbeats behind them.
constexpr unsigned kCallThreads = 16;

// The threads that run the agents' Register and Heartbeat calls. Those calls may wait (a store write and its fsync,
// the control plane's lock), so they do not run on gRPC's own threads; and a fixed set of threads, rather than
// gRPC's synchronous server (a thread per call in flight: 1,500 agents under load made ~1,000 threads queueing on
// one lock), keeps a burst of heartbeats a queue. Post may be called from any thread; the destructor runs what is
// queued, then joins.
class CallPool {
 public:
  explicit CallPool(unsigned threads) {
    for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~CallPool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  void Post(std::function<void()> call) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(call));
    }
    cv_.notify_one();
  }

 private:
  void Work() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      std::function<void()> call = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      call();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

class AgentServiceImpl final : public v1::Agent::CallbackService {
 public:
  AgentServiceImpl(Api& api, CallPool& pool) : api_(api), pool_(pool) {}

  grpc::ServerUnaryReactor* WaitForChange(grpc::CallbackServerContext* ctx, const v1::WaitForChangeRequest* request,
                                          v1::WaitForChangeReply* reply) override {
    auto feed = api_.AgentChanges(Authorization(ctx), request->node());
    if (!feed.ok()) {
      grpc::ServerUnaryReactor* refused = ctx->DefaultReactor();
      refused->Finish(ToGrpc(feed.status()));
      return refused;
    }
    return new ChangeWait(**feed, *request, reply);
  }

  // The request and reply live until the reactor is done, so the pool's thread may read and write them.
  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* ctx, const v1::RegisterRequest* request,
                                     v1::RegisterReply*) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    pool_.Post([this, reactor, request, auth = Authorization(ctx)] {
      auto node = protocol::NodeFromProto(request->node());
      reactor->Finish(ToGrpc(node.ok() ? api_.RegisterAgentNode(auth, std::move(*node)) : node.status()));
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* ctx, const v1::HeartbeatRequest* request,
                                      v1::HeartbeatReply* response) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    pool_.Post([this, reactor, request, response, auth = Authorization(ctx)] {
      reactor->Finish(Beat(auth, *request, response));
    });
    return reactor;
  }

 private:
  grpc::Status Beat(const std::string& auth, const v1::HeartbeatRequest& request, v1::HeartbeatReply* response) {
    auto beat = protocol::HeartbeatFromProto(request);
    if (!beat.ok()) return ToGrpc(beat.status());
    auto reply = api_.AgentHeartbeat(auth, request.node(), *beat);
    if (!reply.ok()) return ToGrpc(reply.status());
    protocol::ReplyToProto(*reply, response);
    return grpc::Status::OK;
  }

  Api& api_;
  CallPool& pool_;
};

}  // namespace

struct AgentGrpcServer::Impl {
  explicit Impl(Api& api) : pool(std::max(kCallThreads, std::thread::hardware_concurrency())), service(api, pool) {}
  CallPool pool;  // destroyed after the server: the calls it still holds finish first
  AgentServiceImpl service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::once_flag shut;
};

AgentGrpcServer::AgentGrpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AgentGrpcServer::~AgentGrpcServer() { Shutdown(); }

Result<std::unique_ptr<AgentGrpcServer>> AgentGrpcServer::Start(const std::string& listen, Api& api, int nice) {
  // Everything is created on a thread at `nice`: the call pool's threads and the threads gRPC starts for the
  // server inherit its value (common/thread_priority.h).
  protocol::PrepareGrpcRuntime();
  std::unique_ptr<Impl> impl;
  Status niced = RunNiced(nice, [&] {
    impl = std::make_unique<Impl>(api);
    grpc::ServerBuilder builder;
    // SO_REUSEPORT would let a second server bind the same port silently.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.SetMaxReceiveMessageSize(16 << 20);
    builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &impl->port);
    builder.RegisterService(&impl->service);
    impl->server = builder.BuildAndStart();
  });
  if (niced.code() == StatusCode::kInvalidArgument) return InvalidArgumentError("--agent-nice: " + niced.message());
  if (!niced.ok())
    std::fprintf(stderr, "xpool server: agents' calls run at the API's priority: %s\n", niced.ToString().c_str());
  if (!impl->server || impl->port == 0) {
    return UnavailableError("cannot listen for agents (gRPC) on " + listen +
                            " (address in use? give --agent-listen HOST:PORT, or off)");
  }
  return std::unique_ptr<AgentGrpcServer>(new AgentGrpcServer(std::move(impl)));
}

int AgentGrpcServer::port() const { return impl_->port; }

void AgentGrpcServer::Shutdown() {
  std::call_once(impl_->shut, [this] {
    impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    impl_->server->Wait();
  });
}

}  // namespace xpool::server
