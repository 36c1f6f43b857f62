#pragma once
// The agent protocol's JSON codec, both ends: what `xpool agent` sends (register, heartbeat with task reports and
// log tails) and what the server answers (the wanted-task list), as documented in docs/agent.md ("Agent ↔ server").
// The agent's HttpControlPlaneClient and the server's heartbeat route both use it, so the two sides cannot drift.
// Pure functions (no I/O); thread-safe. Kept out of messages.h so that nlohmann/json stays out of wide headers.
#include <string>
#include <string_view>
#include <vector>

#include "protocol/messages.h"

namespace xpool::protocol {

// Agent → server.
std::string RegisterBody(const Node& node);
std::string HeartbeatBody(const Node& node, const std::vector<TaskReport>& tasks,
                          const std::vector<DeviceUsageSample>& device_usage = {});
// Server side: parses a heartbeat body. An empty body is a heartbeat without tasks. Bad bodies are
// InvalidArgument naming the field.
Result<HeartbeatRequest> ParseHeartbeatBody(std::string_view body);

// Server → agent.
std::string HeartbeatReplyBody(const HeartbeatReply& reply);
// Agent side: parses a heartbeat reply. A reply without "tasks" has has_tasks = false. Bad replies are
// InvalidArgument.
Result<HeartbeatReply> ParseHeartbeatReply(std::string_view body);

// Replaces every byte that is not part of a valid UTF-8 sequence with '?', keeping the length (log offsets stay
// byte offsets). When `hold_incomplete_tail`, a valid but incomplete sequence at the very end is not included
// (the returned size is smaller): the rest of the character comes with the next read.
std::string SanitizeUtf8(std::string_view data, bool hold_incomplete_tail, size_t* consumed);

}  // namespace xpool::protocol
