// Durable submissions per second straight into a StateStore (no HTTP): N threads call SubmitJob concurrently,
// so group commit batches them; or, with BATCH > 1, SubmitJobs of BATCH jobs at a time (one transaction each,
// what POST /api/v1/jobs:batch does). Every counted submission returned OK, i.e. was committed. With BATCH 1 it
// also reports each call's latency (p50, p99, max over all threads): a commit's tail, such as a WAL checkpoint.
//   store_submit_bench [LOCATION] [THREADS] [TOTAL] [BATCH]
//   defaults: a fresh SQLite file in /tmp, 64 threads, 20000 submissions, BATCH 1.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/state_store.h"

int main(int argc, char** argv) {
  using namespace xpool;
  std::string dir;
  std::string location;
  if (argc > 1) {
    location = argv[1];
  } else {
    char tmpl[] = "/tmp/xpool-store-bench-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return 1;
    dir = tmpl;
    location = dir + "/xpool.db";
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 64;
  const int total = argc > 3 ? std::atoi(argv[3]) : 20000;
  const int batch = argc > 4 ? std::atoi(argv[4]) : 1;
  if (threads <= 0 || total <= 0 || batch <= 0) {
    std::fprintf(stderr, "usage: store_submit_bench [LOCATION] [THREADS>0] [TOTAL>0] [BATCH>0]\n");
    return 2;
  }
  Result<std::unique_ptr<StateStore>> store = OpenStateStore(location);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }
  Result<TenantRecord> tenant = (*store)->CreateTenant("bench" + std::to_string(::getpid()), false, {}, 1);
  if (!tenant.ok()) {
    std::fprintf(stderr, "%s\n", tenant.status().ToString().c_str());
    return 1;
  }
  JobSpec spec;
  spec.name = "bench";
  spec.resources.cpu_milli = 1000;
  spec.resources.gpu = 1;
  spec.resources.gpucores = 50;
  spec.command = {"python", "train.py"};
  std::atomic<int> next{0}, failures{0};
  const auto start = std::chrono::steady_clock::now();
  std::mutex latencies_mu;
  std::vector<double> latencies_ms;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      if (batch == 1) {
        std::vector<double> mine;
        while (next.fetch_add(1) < total) {
          const auto call = std::chrono::steady_clock::now();
          if (!(*store)->SubmitJob(tenant->id, spec, 1).ok()) ++failures;
          mine.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - call).count());
        }
        std::lock_guard lock(latencies_mu);
        latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
        return;
      }
      const std::vector<std::pair<TenantId, JobSpec>> jobs(static_cast<size_t>(batch), {tenant->id, spec});
      while (next.fetch_add(batch) < total) {
        for (const Result<JobRecord>& r : (*store)->SubmitJobs(jobs, 1)) failures += r.ok() ? 0 : 1;
      }
    });
  }
  for (auto& w : workers) w.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int done = batch == 1 ? total : (total + batch - 1) / batch * batch;  // whole batches
  std::printf("%s: %d threads, batches of %d, %d submissions in %.2f s = %.0f durable submissions/s (%d failed)\n",
              std::string((*store)->Kind()).c_str(), threads, batch, done, seconds, done / seconds, failures.load());
  if (!latencies_ms.empty()) {
    std::sort(latencies_ms.begin(), latencies_ms.end());
    const auto at = [&](double q) { return latencies_ms[static_cast<size_t>(q * double(latencies_ms.size() - 1))]; };
    std::printf("  per call: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", at(0.5), at(0.99), latencies_ms.back());
  }
  store->reset();
  if (!dir.empty()) std::filesystem::remove_all(dir);
  return failures.load() == 0 ? 0 : 1;
}
