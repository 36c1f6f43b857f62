#pragma once
// The agent protocol's protobuf codec (proto/agent/v1/agent.proto), both ends: the one place where the gRPC
// messages become xpool's structs (Node, TaskReport, TaskAssignment, HeartbeatRequest) and
// back. The agent's GrpcControlPlaneClient and the server's gRPC listener (server/agent_grpc_service.cc) both use
// it; the JSON codec of the HTTP fallback (protocol/json_codec.h) carries the same structs.
//
// The generated classes are only forward-declared here, so including this header pulls in no protobuf header;
// only .cc files that talk gRPC include "agent/v1/agent.pb.h". Pure functions (no I/O); thread-safe.
#include <vector>

#include "common/status.h"
#include "model/device.h"
#include "protocol/messages.h"

namespace xpool::agent::v1 {
class Node;
class HeartbeatRequest;
class HeartbeatReply;
}  // namespace xpool::agent::v1

namespace xpool::protocol {

namespace v1 = ::xpool::agent::v1;  // the generated messages (package xpool.agent.v1)

// Agent → server.
void NodeToProto(const Node& node, v1::Node* out);
void HeartbeatToProto(const Node& node, const std::vector<TaskReport>& tasks, v1::HeartbeatRequest* out,
                      const std::vector<DeviceUsageSample>& device_usage = {});
// Server side. Bad messages (unknown vendor or state, a link table of the wrong size, an invalid node) are
// InvalidArgument naming the field. Devices are numbered in message order.
Result<Node> NodeFromProto(const v1::Node& in);
Result<HeartbeatRequest> HeartbeatFromProto(const v1::HeartbeatRequest& in);

// Server → agent.
void ReplyToProto(const HeartbeatReply& reply, v1::HeartbeatReply* out);
// Agent side: InvalidArgument for an unknown action or vendor.
Result<HeartbeatReply> ReplyFromProto(const v1::HeartbeatReply& in);

}  // namespace xpool::protocol
