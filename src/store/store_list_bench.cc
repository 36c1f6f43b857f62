// Job reads from the SQL store and from the job cache in front of it (store/caching_state_store.h), over a
// SQLite store of N queued jobs of 10 tenants (group-committed batches, built once per N):
//   BM_ListJobs/jobs:N/query:Q/from:F — one page, wall time. Q 0: the first 1,000 jobs (the API's default page);
//     1: one tenant's first 20; 2: state running (no job matches: the whole filter is walked). F 0: the store
//     (reads and parses each row); 1: the cache's ListJobRefs (what the API reads: no copy); 2: the cache's
//     ListJobs (copies). The API's GET /api/v1/jobs adds the JSON it writes per job.
//   BM_JobCacheLoad/N — CachingStateStore::Load (what a server start adds), wall time; counter cache_mib: the
//     resident memory it added (/proc/self/statm, approximate), run first in its own process for a clean number.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "store/caching_state_store.h"
#include "store/state_store.h"

namespace xpool {
namespace {

struct ListEnv {
  std::filesystem::path dir;
  std::unique_ptr<StateStore> store;
  std::unique_ptr<CachingStateStore> cache;
  TenantId tenant;  // one of the 10

  ~ListEnv() {
    cache.reset();
    store.reset();
    std::filesystem::remove_all(dir);
  }
};

JobSpec BenchSpec(int i) {
  JobSpec spec;
  spec.name = "train-" + std::to_string(i);
  spec.command = {"python", "train.py", "--epochs", "3"};
  spec.env = {{"EPOCHS", "3"}, {"DATASET", "imagenet"}};
  spec.resources.cpu_milli = 4000;
  spec.resources.memory_mib = 16384;
  spec.resources.gpu = 1;
  spec.resources.gpucores = 50;
  spec.resources.gpumem_mib = 8192;
  return spec;
}

// The store of `jobs` jobs (with the cache loaded when `cached`), made once per count.
ListEnv& EnvFor(int jobs, bool cached) {
  static std::map<int, std::unique_ptr<ListEnv>> envs;
  std::unique_ptr<ListEnv>& env = envs[jobs];
  if (!env) {
    env = std::make_unique<ListEnv>();
    env->dir = std::filesystem::temp_directory_path() /
               ("xpool_store_list_bench_" + std::to_string(::getpid()) + "_" + std::to_string(jobs));
    std::filesystem::remove_all(env->dir);
    std::filesystem::create_directories(env->dir);
    env->store = std::move(OpenStateStore((env->dir / "xpool.db").string())).value();
    std::vector<TenantId> tenants;
    for (int t = 0; t < 10; ++t) {
      tenants.push_back(env->store->CreateTenant("team-" + std::to_string(t), false, TenantQuota{}, 1).value().id);
    }
    env->tenant = tenants[3];
    for (int start = 0; start < jobs; start += 1000) {
      std::vector<std::pair<TenantId, JobSpec>> batch;
      for (int i = start; i < std::min(jobs, start + 1000); ++i) batch.emplace_back(tenants[i % 10], BenchSpec(i));
      for (const Result<JobRecord>& r : env->store->SubmitJobs(batch, 2)) CheckOk(r.status(), "a valid spec");
    }
  }
  if (cached && !env->cache) env->cache = std::move(CachingStateStore::Load(*env->store)).value();
  return *env;
}

void BM_ListJobs(benchmark::State& state) {
  const int query = static_cast<int>(state.range(1));
  const int from = static_cast<int>(state.range(2));
  ListEnv& env = EnvFor(static_cast<int>(state.range(0)), from > 0);
  JobFilter filter;
  filter.limit = query == 1 ? 20 : 1000;
  if (query == 1) filter.tenant = env.tenant;
  if (query == 2) filter.states = {JobState::kRunning};
  size_t listed = 0;
  for (auto _ : state) {
    if (from == 1) {
      CachingStateStore::JobPage page = env.cache->ListJobRefs(filter);
      listed = page.jobs.size();
      benchmark::DoNotOptimize(page);
    } else {
      Result<std::vector<JobRecord>> jobs = (from == 0 ? *env.store : *env.cache).ListJobs(filter);
      if (!jobs.ok()) state.SkipWithError(jobs.status().ToString().c_str());
      listed = jobs.ok() ? jobs->size() : 0;
      benchmark::DoNotOptimize(jobs);
    }
  }
  state.counters["listed"] = static_cast<double>(listed);
  state.SetLabel(from == 0 ? "store" : from == 1 ? "cache refs" : "cache copies");
}
BENCHMARK(BM_ListJobs)
    ->ArgsProduct({{1000, 10000}, {0, 1, 2}, {0, 1, 2}})
    ->ArgNames({"jobs", "query", "from"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

double ResidentMib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1 << 20);
}

void BM_JobCacheLoad(benchmark::State& state) {
  ListEnv& env = EnvFor(static_cast<int>(state.range(0)), false);
  double added = 0;
  for (auto _ : state) {
    const double before = ResidentMib();
    Result<std::unique_ptr<CachingStateStore>> cache = CachingStateStore::Load(*env.store);
    added = ResidentMib() - before;
    if (!cache.ok()) state.SkipWithError(cache.status().ToString().c_str());
    state.PauseTiming();
    if (cache.ok()) cache->reset();  // not timed
    state.ResumeTiming();
  }
  state.counters["cache_mib"] = added;
}
BENCHMARK(BM_JobCacheLoad)->Arg(10000)->Arg(100000)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace xpool

BENCHMARK_MAIN();
