// BM_ClusterStateCopy: one copy of the openb cluster's ClusterState (1,213 nodes, openb_workload.h): what the
// server's scheduling pass paid before each pass when it ran on a copy; it now runs on the control plane's own
// state and takes its changes back (server/internal/pass_undo.h).
#include <benchmark/benchmark.h>

#include "openb_workload.h"

namespace xpool::bench {
namespace {

void BM_ClusterStateCopy(benchmark::State& state) {
  const ClusterState cluster = OpenbCluster();
  for (auto _ : state) {
    ClusterState copy = cluster;
    benchmark::DoNotOptimize(copy);
  }
  state.counters["nodes"] = cluster.node_count();
}
BENCHMARK(BM_ClusterStateCopy)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace xpool::bench
