// The one main() of build/bin/xpool_bench: every *_bench.cc registers its benchmarks, this runs them.
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
