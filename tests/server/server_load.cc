// xpool_server_load: load benchmarks of `xpool server` through its HTTP API (docs/PERFORMANCE.md).
//
//   xpool_server_load --xpool build/bin/xpool [--mode submit|heartbeat|all|slow|keepalive|http] [--seconds 10]
//                     [--clients 64] [--nodes 1500] [--slow 500] [--runs 3] [--transports epoll,threads]
//                     [--server-flags "--store postgresql://..."]
//
// 1. submit: `clients` keep-alive connections POST job specs as fast as the server acknowledges them (each 201
//    follows the job's commit to SQLite with synchronous=FULL); reports durable submissions per second.
// 2. heartbeat: registers `nodes` simulated nodes (8 GPUs each, over 8 connections); each node then reports in
//    once per second (paced over 8 connections) while a probe client times typical API calls one after another
//    (get job, list jobs (default page and 20), submit, get node); reports p50/p99/max per call.
// 3. slow: `slow` connections trickle one header byte each per second (a request head never finished) while a
//    probe asks GET /healthz on a new connection every 20 ms (2 s per probe at most: slower counts as no answer);
//    reports the probes answered and their p50/p99/max.
// 4. keepalive: `clients` keep-alive connections (32 unless --clients is given) call the API as fast as it
//    answers (get job, list 20 jobs, list nodes, healthz in turn); reports requests/s and p50/p99/max.
// "all" runs 1 and 2, "http" runs 3 and 4. Each scenario runs once per HTTP transport in --transports
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
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/flags.h"
#include "http/testing/raw_client.h"
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
  int64_t seconds = 10, clients = 0, nodes = 1500, runs = 1, slow = 500;
  xpool::FlagSet flags("xpool_server_load", "Load benchmarks of xpool server through HTTP.");
  flags.String("xpool", &xpool, "the xpool binary");
  flags.String("mode", &mode, "submit, heartbeat, all (both), slow, keepalive or http (both)");
  flags.Int("seconds", &seconds, "seconds per scenario");
  flags.Int("clients", &clients, "submit (default 64) and keepalive (default 32): concurrent connections");
  flags.Int("nodes", &nodes, "heartbeat: simulated nodes reporting once per second");
  flags.Int("slow", &slow, "slow: connections trickling a request head");
  flags.Int("runs", &runs, "repeat each scenario this many times (fresh server each) and print the median");
  flags.String("transports", &transports, "comma-separated xpool server --http-transport values to compare");
  flags.String("server-flags", &server_flags, "extra flags for xpool server, e.g. \"--store postgresql://...\"");
  int code = 0;
  if (!xpool::ParseFlagsOrExit(flags, std::vector<std::string>(argv + 1, argv + argc), &code)) return code;
  const std::vector<std::string> modes = {"submit", "heartbeat", "all", "slow", "keepalive", "http"};
  if (std::find(modes.begin(), modes.end(), mode) == modes.end()) {
    std::fprintf(stderr, "error: --mode must be submit, heartbeat, all, slow, keepalive or http\n");
    return 2;
  }
  if (seconds < 1 || clients < 0 || clients > 1024 || nodes < 1 || runs < 1 || runs > 100 || slow < 1 || slow > 20000 ||
      SplitComma(transports).empty()) {
    std::fprintf(stderr,
                 "error: --seconds >= 1, --clients 1..1024, --nodes >= 1, --slow 1..20000, --runs 1..100, "
                 "--transports not empty\n");
    return 2;
  }
  for (const std::string scenario : {"submit", "heartbeat", "slow", "keepalive"}) {
    const bool pair = (mode == "all" && (scenario == "submit" || scenario == "heartbeat")) ||
                      (mode == "http" && (scenario == "slow" || scenario == "keepalive"));
    if (mode != scenario && !pair) continue;
    const int64_t n_clients = clients > 0 ? clients : (scenario == "keepalive" ? 32 : 64);
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
                  static_cast<long long>(runs), median, scenario == "submit" ? "durable submissions/s" : "ms p99");
    }
  }
  return 0;
}
