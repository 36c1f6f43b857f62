#pragma once
// SimulatedAgents: `agents` node agents that speak the agent protocol over gRPC the way `xpool agent` does
// (proto/agent/v1/agent.proto, src/agent/node_agent.cc), for xpool_server_load --mode agents. Each has its own
// channel and its own TCP connection (a local subchannel pool: gRPC would otherwise share one connection between
// channels to the same address), registers a node with 8 GPUs, heartbeats at the interval the server's reply
// gives (health of every device and a report of every task), keeps a WaitForChange long-poll open (2 s, as the
// agent's ChangeWatcher) and heartbeats at once when it answers. A task the server assigns runs for a fixed-seed
// random time in [task_ms_min, task_ms_max], is reported running and then succeeded, and is forgotten when the
// server stops listing it, as the agent does.
//
// Connection model: no thread per agent. The calls are gRPC's asynchronous callback calls; one pacing thread
// sends each agent's heartbeat when it is due, and the replies are read on gRPC's own threads.
//
// Owned by the load tool's scenario. Start, Stop and Stats are called from one thread; the agents themselves run
// on the pacing thread and gRPC's threads (each agent's state under its own mutex).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace xpool::load {

struct AgentLoadOptions {
  std::string target;  // host:port of the server's --agent-listen
  std::string token;   // admin token (accepted for every node)
  int agents = 1500;
  int task_ms_min = 5000;
  int task_ms_max = 15000;
};

struct AgentLoadStats {
  std::vector<double> heartbeat_ms;  // every Heartbeat RPC answered OK, send to reply
  int64_t heartbeat_errors = 0;
  int64_t waits_answered = 0;  // WaitForChange calls that returned a new generation
  int64_t tasks_started = 0;   // assignments the agents started
  int64_t tasks_finished = 0;  // tasks reported succeeded
};

class SimulatedAgents {
 public:
  explicit SimulatedAgents(AgentLoadOptions options);
  ~SimulatedAgents();

  // Registers every node (8 threads of blocking calls), then starts heartbeating. False (with the reason on
  // stderr) when a registration fails.
  bool Start();
  // Stops sending and waits for the calls in flight.
  void Stop();
  // What happened since Start (or the last ResetStats).
  AgentLoadStats Stats();
  void ResetStats();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xpool::load
