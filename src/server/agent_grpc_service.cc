// The only file of the server that includes gRPC: it adapts the Agent service to Api's agent calls.
#include "server/agent_grpc_service.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <utility>

#include "agent/v1/agent.grpc.pb.h"
#include "common/grpc_status.h"
#include "protocol/grpc_codec.h"
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

class AgentServiceImpl final : public v1::Agent::WithCallbackMethod_WaitForChange<v1::Agent::Service> {
 public:
  explicit AgentServiceImpl(Api& api) : api_(api) {}

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

  grpc::Status Register(grpc::ServerContext* ctx, const v1::RegisterRequest* request, v1::RegisterReply*) override {
    auto node = protocol::NodeFromProto(request->node());
    if (!node.ok()) return ToGrpc(node.status());
    return ToGrpc(api_.RegisterAgentNode(Authorization(ctx), std::move(*node)));
  }

  grpc::Status Heartbeat(grpc::ServerContext* ctx, const v1::HeartbeatRequest* request,
                         v1::HeartbeatReply* response) override {
    auto beat = protocol::HeartbeatFromProto(*request);
    if (!beat.ok()) return ToGrpc(beat.status());
    auto reply = api_.AgentHeartbeat(Authorization(ctx), request->node(), *beat);
    if (!reply.ok()) return ToGrpc(reply.status());
    protocol::ReplyToProto(*reply, response);
    return grpc::Status::OK;
  }

 private:
  Api& api_;
};

}  // namespace

struct AgentGrpcServer::Impl {
  explicit Impl(Api& api) : service(api) {}
  AgentServiceImpl service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::once_flag shut;
};

AgentGrpcServer::AgentGrpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AgentGrpcServer::~AgentGrpcServer() { Shutdown(); }

Result<std::unique_ptr<AgentGrpcServer>> AgentGrpcServer::Start(const std::string& listen, Api& api) {
  auto impl = std::make_unique<Impl>(api);
  grpc::ServerBuilder builder;
  // SO_REUSEPORT would let a second server bind the same port silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(16 << 20);
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &impl->port);
  builder.RegisterService(&impl->service);
  impl->server = builder.BuildAndStart();
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
