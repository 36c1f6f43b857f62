// The API's largest answers on a big cluster, CPU per call, through Api::Handle (no HTTP): GET /api/v1/nodes,
// GET /metrics and GET /api/v1/jobs (its default page, 1,000 jobs) with N nodes of 8 GPUs each, every GPU shared by a
// placed job, and one node's usage changed between calls (as a placement or a finished job changes it under load). The
// node list keeps each node's text between calls (server/internal/node_list.h) and /metrics renders the device series
// from label text kept between calls (ControlPlane::AppendDeviceMetrics): what a call costs is copies, plus renewing
// what changed. GET /metrics as Prometheus asks it (gzip) takes the device series from a CompressedDeviceSeries;
// GET /api/v1/nodes as a browser asks it (gzip) sends each node's kept compressed parts;
// BM_ApiRoutesDeviceSeriesRefresh is what that cache's thread spends per refresh (render and compress).
//
//   build/bin/xpool_bench --benchmark_filter=ApiRoutes
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "common/clock.h"
#include "http/gzip.h"
#include "model/job_spec.h"
#include "model/node_builder.h"
#include "server/api.h"
#include "server/compressed_device_series.h"
#include "server/control_plane.h"
#include "server/metrics.h"
#include "store/caching_state_store.h"
#include "store/state_store.h"
#include "store/token.h"

namespace xpool {
namespace {

// A server's API over SQLite in a temp dir with `nodes` nodes of 8 GPUs, each GPU half taken by a running job.
class RoutesWorld {
 public:
  explicit RoutesWorld(int nodes) {
    dir_ = std::filesystem::temp_directory_path() / ("xpool-routes-bench-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    store_ = std::move(*OpenStateStore((dir_ / "xpool.db").string()));
    auto admin = store_->CreateTenant("admin", true, TenantQuota{}, clock_.NowMicros());
    token_ = *GenerateToken();
    (void)store_->AddToken(admin->id, token_, "bench", clock_.NowMicros());
    server::Api::DeclareMetrics(metrics_);
    server::ControlPlane::DeclareMetrics(metrics_);
    jobs_ = std::move(*CachingStateStore::Load(*store_));
    control_ = std::make_unique<server::ControlPlane>(*jobs_, clock_, &metrics_, server::ControlPlaneOptions{});
    (void)control_->Rebuild();
    // Refreshed only when a scrape finds none: the benchmark times the scrape, not the thread.
    device_series_ = std::make_unique<server::CompressedDeviceSeries>(
        [this](std::string* out) { control_->AppendDeviceMetrics(out); },
        server::CompressedDeviceSeries::Options{std::chrono::hours(1), std::chrono::hours(2)});
    server::ApiOptions options;
    options.device_series = device_series_.get();
    api_ = std::make_unique<server::Api>(*jobs_, *control_, metrics_, clock_, options);
    for (int i = 0; i < nodes; ++i) {
      Node n =
          MakeNode("node-" + std::to_string(i)).WithCpu(128000).WithMemory(1 << 20).WithGpus(8, "A100", 81920).Build();
      (void)control_->RegisterNode(n);
    }
    JobSpec spec;
    spec.name = "half";
    spec.command = {"sleep", "1000"};
    spec.resources.cpu_milli = 1000;
    spec.resources.memory_mib = 1024;
    spec.resources.gpu = 1;
    spec.resources.gpumem_mib = 40960;
    spec.resources.gpucores = 50;
    for (int i = 0; i < nodes * 8; ++i) (void)control_->Submit(admin->id, spec);
    control_->RunPass(true);
    churn_ = spec;
    churn_.name = "churn";
    tenant_ = admin->id;
  }
  ~RoutesWorld() {
    api_.reset();
    device_series_.reset();
    std::filesystem::remove_all(dir_);
  }

  server::ApiResponse Get(const std::string& path, const std::string& accept_encoding = "") {
    server::ApiRequest r;
    r.method = "GET";
    r.path = path;
    r.authorization = "Bearer " + token_;
    r.accept_encoding = accept_encoding;
    return api_->Handle(r);
  }
  // What CompressedDeviceSeries's thread does per refresh.
  http::DeflatedText RenderAndCompressDeviceSeries() const {
    std::string text;
    control_->AppendDeviceMetrics(&text);
    return http::DeflateText(text);
  }
  // One more job placed: one node's usage changes.
  void Churn() {
    (void)control_->Submit(tenant_, churn_);
    control_->RunPass(false);
  }

 private:
  std::filesystem::path dir_;
  FakeClock clock_{1'700'000'000'000'000};
  server::MetricsRegistry metrics_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<CachingStateStore> jobs_;
  std::unique_ptr<server::ControlPlane> control_;
  std::unique_ptr<server::CompressedDeviceSeries> device_series_;
  std::unique_ptr<server::Api> api_;
  std::string token_;
  JobSpec churn_;
  TenantId tenant_;
};

void RunRoute(benchmark::State& state, const std::string& path, const std::string& accept_encoding = "") {
  RoutesWorld world(static_cast<int>(state.range(0)));
  size_t bytes = world.Get(path, accept_encoding).body.size();
  for (auto _ : state) {
    state.PauseTiming();
    world.Churn();
    state.ResumeTiming();
    server::ApiResponse r = world.Get(path, accept_encoding);
    bytes = r.body.size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_ApiRoutesListNodes(benchmark::State& state) { RunRoute(state, "/api/v1/nodes"); }
void BM_ApiRoutesMetrics(benchmark::State& state) { RunRoute(state, "/metrics"); }
void BM_ApiRoutesListJobs(benchmark::State& state) { RunRoute(state, "/api/v1/jobs"); }
void BM_ApiRoutesMetricsGzip(benchmark::State& state) { RunRoute(state, "/metrics", "gzip"); }
void BM_ApiRoutesListNodesGzip(benchmark::State& state) { RunRoute(state, "/api/v1/nodes", "gzip"); }

void BM_ApiRoutesDeviceSeriesRefresh(benchmark::State& state) {
  RoutesWorld world(static_cast<int>(state.range(0)));
  size_t bytes = 0, text_bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    world.Churn();
    state.ResumeTiming();
    http::DeflatedText d = world.RenderAndCompressDeviceSeries();
    bytes = d.deflate.size();
    text_bytes = d.size;
    benchmark::DoNotOptimize(d);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["text_bytes"] = static_cast<double>(text_bytes);
}

BENCHMARK(BM_ApiRoutesListNodes)->Arg(1500)->Unit(benchmark::kMillisecond)->Iterations(30);
BENCHMARK(BM_ApiRoutesMetrics)->Arg(1500)->Unit(benchmark::kMillisecond)->Iterations(30);
BENCHMARK(BM_ApiRoutesListJobs)->Arg(1500)->Unit(benchmark::kMillisecond)->Iterations(30);
BENCHMARK(BM_ApiRoutesListNodesGzip)->Arg(1500)->Unit(benchmark::kMillisecond)->Iterations(30);
BENCHMARK(BM_ApiRoutesMetricsGzip)->Arg(1500)->Unit(benchmark::kMillisecond)->Iterations(30);
BENCHMARK(BM_ApiRoutesDeviceSeriesRefresh)->Arg(1500)->Unit(benchmark::kMillisecond)->Iterations(30);

}  // namespace
}  // namespace xpool
