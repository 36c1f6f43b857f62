#include "agent/grpc_client.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <utility>

#include "agent/http_client.h"
#include "agent/v1/agent.grpc.pb.h"
#include "protocol/grpc_codec.h"
#include "protocol/grpc_runtime.h"

namespace xpool::agent {
namespace {

Status FromGrpc(const grpc::Status& s, const std::string& what, const std::string& target) {
  const std::string& m = s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::OK:
      return Status::Ok();
    case grpc::StatusCode::UNAVAILABLE:
      // gRPC's details after the first ';' change from one attempt to the next (refused, handshake shut down):
      // the agent says a message once while it stays the same, so keep the stable part.
      return UnavailableError("cannot reach the server at grpc://" + target + " (" + m.substr(0, m.find(';')) + ")");
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return UnavailableError("cannot reach the server at grpc://" + target + " (no answer in time)");
    case grpc::StatusCode::UNAUTHENTICATED:
      return UnauthenticatedError(what + ": the server rejected the node token (" + m + ")");
    case grpc::StatusCode::PERMISSION_DENIED:
      return PermissionDeniedError(what + ": " + m);
    case grpc::StatusCode::NOT_FOUND:
      return NotFoundError(what + ": " + m);
    case grpc::StatusCode::INVALID_ARGUMENT:
      return InvalidArgumentError(what + ": " + m);
    case grpc::StatusCode::FAILED_PRECONDITION:
      return FailedPreconditionError(what + ": " + m);
    case grpc::StatusCode::UNIMPLEMENTED:
      return UnavailableError(what + ": grpc://" + target + " does not serve the agent protocol (" + m + ")");
    default:
      return UnavailableError(what + ": " + m + " (gRPC code " + std::to_string(s.error_code()) + ")");
  }
}

// "host:port" with a port 1..65535; InvalidArgument otherwise.
Status CheckTarget(const std::string& target, const std::string& server) {
  const size_t colon = target.rfind(':');
  const std::string port = colon == std::string::npos ? "" : target.substr(colon + 1);
  bool ok = colon != std::string::npos && colon > 0 && !port.empty() && port.size() <= 5;
  for (char c : port) ok = ok && c >= '0' && c <= '9';
  if (ok) ok = std::stoi(port) >= 1 && std::stoi(port) <= 65535;
  if (!ok) {
    return InvalidArgumentError("bad server URL \"" + server +
                                "\": give grpc://HOST:PORT (or HOST:PORT; http://HOST:PORT for the HTTP fallback)");
  }
  return Status::Ok();
}

}  // namespace

struct GrpcControlPlaneClient::Impl {
  GrpcClientOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Agent::Stub> stub;

  void Prepare(grpc::ClientContext* ctx) const {
    if (!options.token.empty()) ctx->AddMetadata("authorization", "Bearer " + options.token);
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::microseconds(options.timeout_micros));
  }
};

GrpcControlPlaneClient::GrpcControlPlaneClient(GrpcClientOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  protocol::PrepareGrpcRuntime();
  grpc::ChannelArguments args;
  // gRPC's default reconnect backoff grows to 120 s; the agent retries on its own schedule, so keep the channel
  // ready to try again within ~1 s of the server coming back.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 250);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 250);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetMaxReceiveMessageSize(16 << 20);
  impl_->channel = grpc::CreateCustomChannel(impl_->options.target, grpc::InsecureChannelCredentials(), args);
  impl_->stub = v1::Agent::NewStub(impl_->channel);
}

bool GrpcControlPlaneClient::Connected() {
  return impl_->channel->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY;
}

GrpcControlPlaneClient::~GrpcControlPlaneClient() = default;

Status GrpcControlPlaneClient::Register(const Node& node) {
  v1::RegisterRequest request;
  protocol::NodeToProto(node, request.mutable_node());
  v1::RegisterReply reply;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx);
  return FromGrpc(impl_->stub->Register(&ctx, request, &reply), "Register", impl_->options.target);
}

Result<HeartbeatReply> GrpcControlPlaneClient::Heartbeat(const Node& node, const std::vector<TaskReport>& tasks,
                                                         const std::vector<protocol::DeviceUsageSample>& device_usage) {
  v1::HeartbeatRequest request;
  protocol::HeartbeatToProto(node, tasks, &request, device_usage);
  v1::HeartbeatReply reply;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx);
  RETURN_IF_ERROR(FromGrpc(impl_->stub->Heartbeat(&ctx, request, &reply), "Heartbeat", impl_->options.target));
  return protocol::ReplyFromProto(reply);
}

Result<int64_t> GrpcControlPlaneClient::WaitForChange(const Node& node, int64_t seen, TimeMicros timeout) {
  v1::WaitForChangeRequest request;
  request.set_node(node.name);
  request.set_seen(seen);
  v1::WaitForChangeReply reply;
  grpc::ClientContext ctx;
  if (!impl_->options.token.empty()) ctx.AddMetadata("authorization", "Bearer " + impl_->options.token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::microseconds(timeout));
  const grpc::Status s = impl_->stub->WaitForChange(&ctx, request, &reply);
  // The long-poll's end when nothing changed: the deadline (or the server cancelling at it).
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED || s.error_code() == grpc::StatusCode::CANCELLED) {
    return seen;
  }
  if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    return FailedPreconditionError("grpc://" + impl_->options.target + " does not announce changes (an older server)");
  }
  RETURN_IF_ERROR(FromGrpc(s, "WaitForChange", impl_->options.target));
  return reply.generation();
}

Result<std::unique_ptr<ControlPlaneClient>> MakeControlPlaneClient(const std::string& server, const std::string& token,
                                                                   TimeMicros timeout_micros) {
  if (server.rfind("http://", 0) == 0) {
    std::string host_port = server.substr(7);
    while (!host_port.empty() && host_port.back() == '/') host_port.pop_back();
    RETURN_IF_ERROR(CheckTarget(host_port, server));
    return std::unique_ptr<ControlPlaneClient>(
        std::make_unique<HttpControlPlaneClient>(HttpClientOptions{server, token, timeout_micros}));
  }
  std::string target = server;
  if (server.rfind("grpc://", 0) == 0) {
    target = server.substr(7);
  } else if (server.find("://") != std::string::npos) {
    return InvalidArgumentError("bad server URL \"" + server + "\": the scheme must be grpc:// (or http://)");
  }
  while (!target.empty() && target.back() == '/') target.pop_back();
  RETURN_IF_ERROR(CheckTarget(target, server));
  return std::unique_ptr<ControlPlaneClient>(
      std::make_unique<GrpcControlPlaneClient>(GrpcClientOptions{target, token, timeout_micros}));
}

}  // namespace xpool::agent
