// BM_AgentHeartbeat/<transport>: one agent heartbeat round trip, the agent's client against an in-process
// `xpool server` (server::Server: SQLite in a temp dir, the real listeners on loopback), gRPC (the default,
// `--agent-listen`) and the HTTP fallback (POST /api/v1/nodes/{name}/heartbeat) side by side. Each heartbeat is
// what an agent with a full node sends: 8 devices' health and 8 running tasks, each with a fresh 1 KiB log chunk;
// the reply lists the 8 tasks wanted on the node. Server side this is Api -> LogRelay -> AgentService (store
// reads per job), the same for both transports, so the difference is the transport and codec.
//
//   build-rel/bin/xpool_bench --benchmark_filter=AgentHeartbeat
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agent/grpc_client.h"
#include "agent/http_client.h"
#include "model/job_spec.h"
#include "model/node_builder.h"
#include "server/control_plane.h"
#include "server/server.h"
#include "store/state_store.h"
#include "support/xpool_process.h"

namespace xpool {
namespace {

constexpr int kTasks = 8;

// One server for the whole run (never torn down: its listener threads live until exit).
struct World {
  std::unique_ptr<server::Server> server;
  std::thread thread;
  int http_port = 0, grpc_port = 0;
  std::string token;
  Node node;
  std::vector<protocol::TaskReport> reports;
  std::string error;
};

World* MakeWorld() {
  auto* w = new World;
  const auto dir = std::filesystem::temp_directory_path() / ("xpool-agent-bench-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  w->http_port = xpool::testing::FreePort();
  do w->grpc_port = xpool::testing::FreePort();
  while (w->grpc_port == w->http_port);
  server::ServerOptions o;
  o.listen = "127.0.0.1:" + std::to_string(w->http_port);
  o.agent_listen = "127.0.0.1:" + std::to_string(w->grpc_port);
  o.state_dir = dir.string();
  o.tick_ms = 20;
  std::fflush(stderr);
  auto s = server::Server::Create(o);
  if (!s.ok()) {
    w->error = s.status().ToString();
    return w;
  }
  w->server = std::move(*s);
  w->thread = std::thread([w] { (void)w->server->Run(); });
  w->token = xpool::testing::ReadFile(dir / "admin.token");
  w->node = MakeNode("bench-node").WithCpu(64000).WithMemory(262144).WithGpus(8, "A100-80GB", 81920).Build();
  agent::GrpcControlPlaneClient client({"127.0.0.1:" + std::to_string(w->grpc_port), w->token, 5 * kMicrosPerSecond});
  if (Status r = client.Register(w->node); !r.ok()) {
    w->error = r.ToString();
    return w;
  }
  auto tenants = w->server->store().ListTenants();
  if (!tenants.ok() || tenants->empty()) {
    w->error = "no tenant";
    return w;
  }
  for (int i = 0; i < kTasks; ++i) {
    auto spec = ParseJobSpec("name: bench-" + std::to_string(i) +
                             "\nresources: {cpu: 100m, memory: 64Mi, gpu: 1}\ncommand: sleep 1000\n");
    auto job = spec.ok() ? w->server->control_plane().Submit(tenants->front().id, *spec) : spec.status();
    if (!job.ok()) {
      w->error = job.status().ToString();
      return w;
    }
    protocol::TaskReport r;
    r.job_id = job->id.value();
    r.status.task_id = "job" + std::to_string(r.job_id) + "-r0";
    r.status.pid = 1000 + i;
    r.log_data = std::string(1023, 'x') + "\n";
    w->reports.push_back(std::move(r));
  }
  // Until every job is placed and reported running.
  for (int i = 0; i < 500; ++i) {
    auto reply = client.Heartbeat(w->node, w->reports);
    if (reply.ok() && reply->tasks.size() == kTasks) return w;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  w->error = "the jobs were not placed";
  return w;
}

World& TheWorld() {
  static World* w = MakeWorld();
  return *w;
}

void BM_AgentHeartbeat(benchmark::State& state, bool grpc) {
  World& w = TheWorld();
  if (!w.error.empty()) {
    state.SkipWithError(w.error.c_str());
    return;
  }
  std::unique_ptr<protocol::ControlPlaneClient> client;
  if (grpc) {
    client = std::make_unique<agent::GrpcControlPlaneClient>(
        agent::GrpcClientOptions{"127.0.0.1:" + std::to_string(w.grpc_port), w.token, 5 * kMicrosPerSecond});
  } else {
    client = std::make_unique<agent::HttpControlPlaneClient>(
        agent::HttpClientOptions{"http://127.0.0.1:" + std::to_string(w.http_port), w.token, 5 * kMicrosPerSecond});
  }
  std::vector<protocol::TaskReport> reports = w.reports;
  int64_t errors = 0;
  for (auto _ : state) {
    for (protocol::TaskReport& r : reports) r.log_offset += static_cast<int64_t>(r.log_data.size());
    auto reply = client->Heartbeat(w.node, reports);
    if (!reply.ok() || reply->tasks.size() != kTasks) ++errors;
  }
  w.reports = reports;  // the next benchmark continues the log streams
  state.counters["errors"] = static_cast<double>(errors);
}

BENCHMARK_CAPTURE(BM_AgentHeartbeat, grpc, true)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_AgentHeartbeat, http, false)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace xpool
