// xpool_server_load: load benchmarks of `xpool server` through its HTTP API (docs/PERFORMANCE.md).
//
//   xpool_server_load --xpool build/bin/xpool [--mode submit|batch|agents|heartbeat|all|slow|keepalive|http]
//                     [--seconds 10] [--clients 64] [--batch 1000] [--nodes 1500] [--job-rate 100] [--slow 500]
//                     [--runs 3] [--transports epoll,threads]
//                     [--server-flags "--store postgresql://..."]
//
// 1. submit: `clients` keep-alive connections POST job specs as fast as the server acknowledges them (each 201
//    follows the job's commit to SQLite with synchronous=FULL); reports durable submissions per second.
// 2. batch: `clients` connections (1 unless --clients is given) POST batches of `batch` jobs to /api/v1/jobs:batch
//    (one transaction each); reports durable jobs per second and the batch's latency.
// 3. agents: `nodes` simulated agents (load_agents.h: one gRPC connection each, 8 GPUs, heartbeats at the
//    server's interval with device health and task reports, a WaitForChange long-poll) run the jobs a submitter
//    posts at `job-rate` per second (5-15 s each) while a probe client times the API routes one after another,
//    a round every 100 ms (job lists, queued jobs, a job, submit, nodes plain and gzip as a browser asks, a page of
//    100 nodes, a node, /metrics plain and gzip as Prometheus asks) after a 5 s warm-up; reports the Heartbeat
//    RPC's p50/p99 and p50/p99/max per route. The simulated agents run at nice --agents-nice (19 by
//    default): they stand for other machines, so they take only the CPU the server and the probe leave; the
//    server's own agent calls run at its --agent-nice (10 by default).
// 4. heartbeat: the HTTP fallback's bare heartbeat: `nodes` nodes registered over HTTP each POST `{}` once per
//    second over 8 shared connections (no tasks, no device health) while the probe client times get job, list
//    jobs (default page and 20), submit and get node.
// 5. slow: `slow` connections trickle one header byte each per second (a request head never finished) while a
//    probe asks GET /healthz on a new connection every 20 ms (2 s per probe at most: slower counts as no answer);
//    reports the probes answered and their p50/p99/max.
// 6. keepalive: `clients` keep-alive connections (32 unless --clients is given) call the API as fast as it
//    answers (get job, list 20 jobs, list nodes, healthz in turn); reports requests/s and p50/p99/max.
// "all" runs 1 and 3, "http" runs 5 and 6. Each scenario runs once per HTTP transport in --transports
// (xpool server --http-transport: epoll, threads), so the transports are compared in one run.
// Each run starts a real server on a fresh state directory under /tmp and stops it at the end; with --runs N
// the scenario is repeated N times and the median of the runs is printed last (the line to report).
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/flags.h"
#include "common/thread_priority.h"
#include "http/http_client.h"
#include "http/testing/raw_client.h"
#include "load_agents.h"
#include "support/xpool_process.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::unique_ptr<httplib::Client> Client(const std::string& url, const std::string& token) {
  auto c = std::make_unique<httplib::Client>(url);
  c->set_bearer_token_auth(token.c_str());
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  c->set_read_timeout(30, 0);
  return c;
}

// CPU seconds (user + system) the process has used so far; 0 when /proc cannot say.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(text.substr(paren + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(f);  // utime, stime
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

const char* kJob = R"({"name":"bench","command":["true"],"resources":{"gpu":1,"gpumem":"4Gi","gpucores":10}})";

// Returns durable submissions per second.
double Submit(const std::string& url, const std::string& token, int clients, int seconds) {
  std::atomic<int64_t> ok{0}, failed{0};
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> latencies(clients);
  std::vector<std::thread> threads;
  auto start = Clock::now();
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      auto c = Client(url, token);
      while (!stop) {
        auto s = Clock::now();
        auto r = c->Post("/api/v1/jobs", kJob, "application/json");
        latencies[t].push_back(Ms(Clock::now() - s));
        if (r && r->status == 201) {
          ++ok;
        } else if (failed++ < 3) {
          std::fprintf(stderr, "submit failed: %s\n",
                       r ? (std::to_string(r->status) + " " + r->body).c_str() : httplib::to_string(r.error()).c_str());
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::printf(
      "submit: %d clients, %.1f s: %lld acknowledged (201), %lld failed: %.0f durable submissions/s; "
      "latency p50 %.2f ms p99 %.2f ms\n",
      clients, elapsed, static_cast<long long>(ok.load()), static_cast<long long>(failed.load()), ok / elapsed,
      Percentile(all, 0.5), Percentile(all, 0.99));
  std::fflush(stdout);
  return ok / elapsed;
}

// Returns durable submissions per second: `clients` connections POST batches of `batch` jobs to
// /api/v1/jobs:batch (one store transaction each; the 201 follows its commit).
double Batch(const std::string& url, const std::string& token, pid_t server, int clients, int batch, int seconds) {
  json specs = json::array();
  for (int i = 0; i < batch; ++i) specs.push_back(json::parse(kJob));
  const std::string body = json{{"jobs", specs}}.dump();
  std::atomic<int64_t> ok{0}, failed{0};
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> latencies(clients);
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  const double cpu_start = CpuSeconds(server);
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      auto c = Client(url, token);
      while (!stop) {
        const auto s = Clock::now();
        auto r = c->Post("/api/v1/jobs:batch", body, "application/json");
        latencies[t].push_back(Ms(Clock::now() - s));
        if (r && r->status == 201) {
          ok += batch;
        } else if (failed++ < 3) {
          std::fprintf(stderr, "batch failed: %s\n",
                       r ? (std::to_string(r->status) + " " + r->body.substr(0, 200)).c_str()
                         : httplib::to_string(r.error()).c_str());
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  const double cpu = CpuSeconds(server) - cpu_start;
  std::printf(
      "batch: %d clients, batches of %d, %.1f s: %lld jobs acknowledged, %lld batches failed: %.0f durable "
      "jobs/s; batch latency p50 %.1f ms p99 %.1f ms; server CPU %.1f s = %.1f us a job (%.0f jobs per CPU "
      "second)\n",
      clients, batch, elapsed, static_cast<long long>(ok.load()), static_cast<long long>(failed.load()),
      static_cast<double>(ok) / elapsed, Percentile(all, 0.5), Percentile(all, 0.99), cpu,
      ok > 0 ? cpu * 1e6 / static_cast<double>(ok) : 0.0, cpu > 0 ? static_cast<double>(ok) / cpu : 0.0);
  std::fflush(stdout);
  return static_cast<double>(ok) / elapsed;
}

json NodeJson(int i) {
  return {{"name", "sim" + std::to_string(i)},
          {"cpu", 96},
          {"memory", "768Gi"},
          {"gpus", {{"count", 8}, {"model", i % 2 ? "A100" : "V100"}, {"memory", i % 2 ? "80Gi" : "32Gi"}}}};
}

// Registers nodes 0..nodes-1 over `connections` connections; false when one is refused.
bool RegisterNodes(const std::string& url, const std::string& token, int nodes, int connections) {
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < connections; ++t) {
    threads.emplace_back([&] {
      auto c = Client(url, token);
      for (int i = next++; i < nodes && !failed; i = next++) {
        auto r = c->Post("/api/v1/nodes", NodeJson(i).dump(), "application/json");
        if (!r || r->status != 201) {
          std::fprintf(stderr, "registering node %d failed: %s\n", i, r ? r->body.c_str() : "no answer");
          failed = true;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  return !failed;
}

// Returns the p99 (ms) over every probe call; a negative value when the nodes could not be registered.
double Heartbeat(const std::string& url, const std::string& token, int nodes, int seconds) {
  auto admin = Client(url, token);
  auto reg_start = Clock::now();
  if (!RegisterNodes(url, token, nodes, 8)) return -1;
  std::printf("heartbeat: registered %d simulated nodes in %.1f s\n", nodes,
              std::chrono::duration<double>(Clock::now() - reg_start).count());
  auto sub = admin->Post("/api/v1/jobs", kJob, "application/json");
  std::string job_id = sub && sub->status == 201 ? std::to_string(json::parse(sub->body)["id"].get<int64_t>()) : "1";

  constexpr int kReporters = 8;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> beats{0}, beat_errors{0};
  std::vector<std::vector<double>> beat_ms(kReporters);
  std::vector<std::thread> reporters;
  for (int t = 0; t < kReporters; ++t) {
    reporters.emplace_back([&, t] {
      auto c = Client(url, token);
      std::vector<int> mine;
      for (int i = t; i < nodes; i += kReporters) mine.push_back(i);
      const auto period = std::chrono::microseconds(1'000'000 / std::max<size_t>(1, mine.size()));
      auto next = Clock::now();
      for (size_t k = 0; !stop; ++k) {
        std::string path = "/api/v1/nodes/sim" + std::to_string(mine[k % mine.size()]) + "/heartbeat";
        auto s = Clock::now();
        auto r = c->Post(path.c_str(), "{}", "application/json");
        beat_ms[t].push_back(Ms(Clock::now() - s));
        (r && r->status == 200 ? beats : beat_errors)++;
        next += period;
        std::this_thread::sleep_until(next);
      }
    });
  }
  std::map<std::string, std::vector<double>> probe;
  auto c = Client(url, token);
  auto end = Clock::now() + std::chrono::seconds(seconds);
  auto start = Clock::now();
  while (Clock::now() < end) {
    auto time = [&](const std::string& name, auto call) {
      auto s = Clock::now();
      auto r = call();
      double ms = Ms(Clock::now() - s);
      if (!r || r->status >= 300) std::fprintf(stderr, "probe %s failed\n", name.c_str());
      probe[name].push_back(ms);
      probe["all"].push_back(ms);
    };
    time("GET /api/v1/jobs/{id}", [&] { return c->Get(("/api/v1/jobs/" + job_id).c_str()); });
    time("GET /api/v1/jobs", [&] { return c->Get("/api/v1/jobs"); });
    time("GET /api/v1/jobs?limit=20", [&] { return c->Get("/api/v1/jobs?limit=20"); });
    time("POST /api/v1/jobs", [&] { return c->Post("/api/v1/jobs", kJob, "application/json"); });
    time("GET /api/v1/nodes/{name}", [&] { return c->Get("/api/v1/nodes/sim17"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  stop = true;
  for (auto& t : reporters) t.join();
  std::vector<double> all_beats;
  for (auto& b : beat_ms) all_beats.insert(all_beats.end(), b.begin(), b.end());
  std::printf("heartbeat: %.0f reports/s (%lld errors), report latency p50 %.2f ms p99 %.2f ms\n", beats / elapsed,
              static_cast<long long>(beat_errors.load()), Percentile(all_beats, 0.5), Percentile(all_beats, 0.99));
  for (const auto& [name, v] : probe) {
    std::printf("  %-28s n=%-6zu p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms\n", name.c_str(), v.size(),
                Percentile(v, 0.5), Percentile(v, 0.99), *std::max_element(v.begin(), v.end()));
  }
  std::fflush(stdout);
  return Percentile(probe["all"], 0.99);
}

// Returns the highest per-route p99 (ms); a negative value when the agents could not register.
double Agents(const std::string& url, const std::string& token, pid_t server, int agent_port, int agents, int job_rate,
              int seconds, int agents_nice) {
  xpool::load::SimulatedAgents sim({"127.0.0.1:" + std::to_string(agent_port), token, agents});
  const auto reg_start = Clock::now();
  // The simulated agents stand for 1,500 other machines: on this one they take only the CPU the server and the
  // probe leave (their pacing thread and gRPC's threads inherit the nice value; common/thread_priority.h).
  bool started = false;
  if (xpool::Status s = xpool::RunNiced(agents_nice, [&] { started = sim.Start(); }); !s.ok()) {
    std::fprintf(stderr, "agents: %s\n", s.ToString().c_str());
  }
  if (!started) return -1;
  std::printf("agents: %d agents registered over their own gRPC connections in %.1f s\n", agents,
              std::chrono::duration<double>(Clock::now() - reg_start).count());
  // The scheduler's work: jobs arrive at job_rate per second (one GPU's share each; the agents run them 5-15 s).
  std::atomic<bool> stop{false};
  std::atomic<int64_t> submitted{0};
  std::thread submitter([&] {
    auto c = Client(url, token);
    auto next = Clock::now();
    while (!stop) {
      auto r = c->Post("/api/v1/jobs", kJob, "application/json");
      if (r && r->status == 201) ++submitted;
      next += std::chrono::microseconds(1'000'000 / std::max(1, job_rate));
      std::this_thread::sleep_until(next);
    }
  });
  auto c = Client(url, token);
  auto sub = c->Post("/api/v1/jobs", kJob, "application/json");
  // The probe calls as the `xpool` CLI does (http/http_client.h: a connection per call, 64 KiB reads), so that a
  // route is timed as a user's client sees it: httplib reads 4 KiB at a time after a poll() each (~2,400 of them
  // for a 10 MB /metrics), which doubled the big routes' times here. curl and Prometheus read alike.
  // With `gzip`, it asks as Prometheus and browsers do (Accept-Encoding: gzip) and checks the answer came
  // compressed; the time is to the last byte received, before decompressing.
  auto call = [&](const char* method, const std::string& target, int want, bool gzip = false) {
    xpool::http::HttpRequest request;
    request.method = method;
    request.target = target;
    request.headers.emplace_back("Authorization", "Bearer " + token);
    if (gzip) request.headers.emplace_back("Accept-Encoding", "gzip");
    if (std::string_view(method) == "POST") {
      request.headers.emplace_back("Content-Type", "application/json");
      request.body = kJob;
    }
    auto r = xpool::http::SendHttpRequest(url, request);
    if (!r.ok() || r->status != want) std::fprintf(stderr, "probe %s %s failed\n", method, target.c_str());
    if (gzip && r.ok() &&
        std::find(r->headers.begin(), r->headers.end(),
                  std::make_pair(std::string("content-encoding"), std::string("gzip"))) == r->headers.end()) {
      std::fprintf(stderr, "probe %s %s: not answered gzip\n", method, target.c_str());
    }
  };
  const std::string job =
      "/api/v1/jobs/" +
      (sub && sub->status == 201 ? std::to_string(json::parse(sub->body)["id"].get<int64_t>()) : std::string("1"));
  std::this_thread::sleep_for(std::chrono::seconds(5));  // warm-up: the first tasks run
  sim.ResetStats();
  struct Route {
    std::string name, target;
    bool gzip = false;
  };
  const std::vector<Route> routes = {
      {"GET /api/v1/jobs", "/api/v1/jobs"},
      {"GET /api/v1/jobs?limit=20", "/api/v1/jobs?limit=20"},
      {"GET /api/v1/jobs?state=queued", "/api/v1/jobs?state=queued&limit=100"},
      {"GET /api/v1/jobs/{id}", job},
      {"GET /api/v1/nodes", "/api/v1/nodes"},
      {"GET /api/v1/nodes (gzip)", "/api/v1/nodes", true},
      {"GET /api/v1/nodes?limit=100", "/api/v1/nodes?limit=100"},
      {"GET /api/v1/nodes/{name}", "/api/v1/nodes/agent17"},
      {"GET /metrics", "/metrics"},
      {"GET /metrics (gzip)", "/metrics", true},
  };
  // One round of every route each 100 ms, what a few dashboards and CLI users ask (a scrape of /metrics each
  // 100 ms is far more than Prometheus asks, so that each route has enough samples for its p99).
  std::map<std::string, std::vector<double>> probe;
  const auto start = Clock::now();
  const double cpu_start = CpuSeconds(server), tool_cpu_start = CpuSeconds(::getpid());
  auto round = start;
  while (Clock::now() - start < std::chrono::seconds(seconds)) {
    round += std::chrono::milliseconds(100);
    for (const Route& route : routes) {
      const auto s = Clock::now();
      call("GET", route.target, 200, route.gzip);
      probe[route.name].push_back(Ms(Clock::now() - s));
    }
    const auto s = Clock::now();
    call("POST", "/api/v1/jobs", 201);
    probe["POST /api/v1/jobs"].push_back(Ms(Clock::now() - s));
    std::this_thread::sleep_until(round);
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = CpuSeconds(server) - cpu_start, tool_cpu = CpuSeconds(::getpid()) - tool_cpu_start;
  const xpool::load::AgentLoadStats stats = sim.Stats();
  stop = true;
  submitter.join();
  sim.Stop();
  std::printf(
      "agents: %.1f s: %.0f heartbeats/s (%lld errors), Heartbeat RPC p50 %.2f ms p99 %.2f ms max %.2f ms; "
      "%lld long-polls answered; tasks started %lld, finished %lld; %lld jobs submitted; CPU: server %.2f cores, "
      "this tool %.2f cores\n",
      elapsed, static_cast<double>(stats.heartbeat_ms.size()) / elapsed, static_cast<long long>(stats.heartbeat_errors),
      Percentile(stats.heartbeat_ms, 0.5), Percentile(stats.heartbeat_ms, 0.99),
      stats.heartbeat_ms.empty() ? 0.0 : *std::max_element(stats.heartbeat_ms.begin(), stats.heartbeat_ms.end()),
      static_cast<long long>(stats.waits_answered), static_cast<long long>(stats.tasks_started),
      static_cast<long long>(stats.tasks_finished), static_cast<long long>(submitted.load()), cpu / elapsed,
      tool_cpu / elapsed);
  double worst = 0;
  for (const auto& [name, v] : probe) {
    std::printf("  %-32s n=%-6zu p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms\n", name.c_str(), v.size(),
                Percentile(v, 0.5), Percentile(v, 0.99), *std::max_element(v.begin(), v.end()));
    worst = std::max(worst, Percentile(v, 0.99));
  }
  std::fflush(stdout);
  return worst;
}

void PrintLatencies(const char* label, const std::vector<double>& v, int64_t failed, double elapsed) {
  std::printf("  %-34s n=%-7zu failed=%-5lld %8.0f/s  p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms\n", label, v.size(),
              static_cast<long long>(failed), static_cast<double>(v.size()) / elapsed, Percentile(v, 0.5),
              Percentile(v, 0.99), v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()));
  std::fflush(stdout);
}

// Returns the p99 (ms) of the /healthz probes answered; 1e9 when fewer than 99 % were answered.
double Slow(int port, int slow_connections, int seconds) {
  std::vector<std::unique_ptr<xpool::testing::RawClient>> slow;
  for (int i = 0; i < slow_connections; ++i) {
    slow.push_back(std::make_unique<xpool::testing::RawClient>(port));
    slow.back()->Send("GET /healthz HTTP/1.1\r\nX-Slow: ");
  }
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    while (!stop) {
      for (auto& c : slow) c->Send("a");
      for (int i = 0; i < 10 && !stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::vector<double> ms;
  int64_t failed = 0;
  const auto start = Clock::now();
  while (Clock::now() - start < std::chrono::seconds(seconds)) {
    const auto s = Clock::now();
    xpool::testing::RawClient c(port);
    auto r = c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") ? c.Read(2000) : std::nullopt;
    if (r && r->status == 200) {
      ms.push_back(Ms(Clock::now() - s));
    } else {
      ++failed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  stop = true;
  trickle.join();
  std::printf("slow: %d slow connections, %.1f s\n", slow_connections, elapsed);
  PrintLatencies("GET /healthz (new connection)", ms, failed, elapsed);
  const auto total = static_cast<double>(ms.size() + static_cast<size_t>(failed));
  return static_cast<double>(ms.size()) >= 0.99 * total && !ms.empty() ? Percentile(ms, 0.99) : 1e9;
}

// Returns the p99 (ms) over every call of every client.
double KeepAlive(const std::string& url, const std::string& token, int clients, int seconds) {
  auto admin = Client(url, token);
  auto sub = admin->Post("/api/v1/jobs", kJob, "application/json");
  const std::string job =
      "/api/v1/jobs/" +
      (sub && sub->status == 201 ? std::to_string(json::parse(sub->body)["id"].get<int64_t>()) : std::string("1"));
  const std::vector<std::string> paths = {job, "/api/v1/jobs?limit=20", "/api/v1/nodes", "/healthz"};
  std::atomic<bool> stop{false};
  std::atomic<int64_t> failed{0};
  std::vector<std::vector<double>> latencies(clients);
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      auto c = Client(url, token);
      for (size_t k = static_cast<size_t>(t); !stop; ++k) {
        const auto s = Clock::now();
        auto r = c->Get(paths[k % paths.size()].c_str());
        if (r && r->status == 200) {
          latencies[t].push_back(Ms(Clock::now() - s));
        } else {
          ++failed;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::printf("keepalive: %d keep-alive clients, %.1f s\n", clients, elapsed);
  PrintLatencies("API calls (4 routes in turn)", all, failed.load(), elapsed);
  return Percentile(all, 0.99);
}

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string xpool = "build/bin/xpool", mode = "all", server_flags, transports = "epoll";
  int64_t seconds = 10, clients = 0, nodes = 1500, runs = 1, slow = 500, job_rate = 100, batch = 1000, agents_nice = 19;
  xpool::FlagSet flags("xpool_server_load", "Load benchmarks of xpool server through HTTP.");
  flags.String("xpool", &xpool, "the xpool binary");
  flags.String("mode", &mode,
               "submit, batch, agents, heartbeat, all (submit and agents), slow, keepalive or http (both)");
  flags.Int("seconds", &seconds, "seconds per scenario");
  flags.Int("clients", &clients, "submit (default 64) and keepalive (default 32): concurrent connections");
  flags.Int("nodes", &nodes, "agents and heartbeat: simulated nodes");
  flags.Int("job-rate", &job_rate, "agents: jobs submitted per second while the agents run them");
  flags.Int("agents-nice", &agents_nice,
            "agents: nice value 0..19 of the simulated agents (default 19: they stand for other machines)");
  flags.Int("batch", &batch, "batch: jobs per POST /api/v1/jobs:batch");
  flags.Int("slow", &slow, "slow: connections trickling a request head");
  flags.Int("runs", &runs, "repeat each scenario this many times (fresh server each) and print the median");
  flags.String("transports", &transports, "comma-separated xpool server --http-transport values to compare");
  flags.String("server-flags", &server_flags, "extra flags for xpool server, e.g. \"--store postgresql://...\"");
  int code = 0;
  if (!xpool::ParseFlagsOrExit(flags, std::vector<std::string>(argv + 1, argv + argc), &code)) return code;
  const std::vector<std::string> modes = {"submit", "batch", "agents", "heartbeat", "all", "slow", "keepalive", "http"};
  if (std::find(modes.begin(), modes.end(), mode) == modes.end()) {
    std::fprintf(stderr, "error: --mode must be submit, batch, agents, heartbeat, all, slow, keepalive or http\n");
    return 2;
  }
  if (seconds < 1 || clients < 0 || clients > 1024 || nodes < 1 || runs < 1 || runs > 100 || slow < 1 || slow > 20000 ||
      job_rate < 1 || batch < 1 || batch > 10000 || SplitComma(transports).empty()) {
    std::fprintf(stderr,
                 "error: --seconds >= 1, --clients 1..1024, --nodes >= 1, --slow 1..20000, --runs 1..100, "
                 "--job-rate >= 1, --batch 1..10000, --transports not empty\n");
    return 2;
  }
  for (const std::string scenario : {"submit", "batch", "agents", "heartbeat", "slow", "keepalive"}) {
    const bool pair = (mode == "all" && (scenario == "submit" || scenario == "agents")) ||
                      (mode == "http" && (scenario == "slow" || scenario == "keepalive"));
    if (mode != scenario && !pair) continue;
    const int64_t n_clients = clients > 0 ? clients : (scenario == "keepalive" ? 32 : scenario == "batch" ? 1 : 64);
    // Runs alternate between the transports (run 1 of each, then run 2 of each, ...), so that the machine's
    // load drifting during the benchmark touches them alike.
    const std::vector<std::string> list = SplitComma(transports);
    std::map<std::string, std::vector<double>> results;
    for (int64_t run = 0; run < runs; ++run) {
      for (const std::string& transport : list) {
        std::printf("== %s, --http-transport %s, run %lld\n", scenario.c_str(), transport.c_str(),
                    static_cast<long long>(run + 1));
        auto dir = std::filesystem::temp_directory_path() /
                   ("xpool_load_" + scenario + "_" + std::to_string(::getpid()) + "_" + std::to_string(run));
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir);  // ServerProcess logs into it
        xpool::testing::ServerProcess server(xpool, dir.string());
        // Enough HTTP workers for every keep-alive connection of the tool (the threads transport holds one per
        // open connection); the slow scenario runs with the server's default.
        std::string extra = "--http-transport " + transport + " " + server_flags;
        const int agent_port = xpool::testing::FreePort();
        if (scenario == "agents") extra = "--agent-listen 127.0.0.1:" + std::to_string(agent_port) + " " + extra;
        if (scenario != "slow") {
          extra = "--threads " + std::to_string(std::max<int64_t>(64, n_clients + 32)) + " " + extra;
        }
        if (!server.Start(extra)) {
          std::fprintf(stderr, "cannot start %s:\n%s\n", xpool.c_str(), server.Log().c_str());
          return 1;
        }
        const std::string url = server.url(), token = server.AdminToken();
        double result = 0;
        if (scenario == "submit") {
          result = Submit(url, token, int(n_clients), int(seconds));
        } else if (scenario == "batch") {
          result = Batch(url, token, server.pid(), int(n_clients), int(batch), int(seconds));
        } else if (scenario == "agents") {
          result =
              Agents(url, token, server.pid(), agent_port, int(nodes), int(job_rate), int(seconds), int(agents_nice));
        } else if (scenario == "heartbeat") {
          result = Heartbeat(url, token, int(nodes), int(seconds));
        } else if (scenario == "slow") {
          result = Slow(server.port(), int(slow), int(seconds));
        } else {
          result = KeepAlive(url, token, int(n_clients), int(seconds));
        }
        results[transport].push_back(result);
        server.Stop();
        std::filesystem::remove_all(dir);
        if (result < 0) return 1;
      }
    }
    for (const std::string& transport : list) {
      if (runs == 1 && list.size() == 1) break;
      const double median = Percentile(results[transport], 0.5);
      if (scenario == "slow" && median >= 1e9) {
        std::printf("%s (%s): median of %lld runs: under 99 %% of the probes answered\n", scenario.c_str(),
                    transport.c_str(), static_cast<long long>(runs));
        continue;
      }
      std::printf("%s (%s): median of %lld runs: %.2f %s\n", scenario.c_str(), transport.c_str(),
                  static_cast<long long>(runs), median,
                  scenario == "submit" || scenario == "batch" ? "durable submissions/s"
                  : scenario == "agents"                      ? "ms p99 (the highest route's)"
                                                              : "ms p99");
    }
  }
  return 0;
}
