# xpool — top-level entry points. See README.md.
#   make deps   install missing Debian packages (idempotent)
#   make build  release build in build/ (build/bin/xpool, xpool-roles and the task shim beside it; build/lib/)
#   make test   deps + sanitizer build (ASan+UBSan) in build-asan/ + every test through ctest
#   make bench  release build + benchmarks
#   make up     build, then start xpool on this machine
JOBS ?= $(shell nproc)
# Tests run at once by ctest. Many mostly wait, and `make test TEST_JOBS=4` is ~40 % faster on 2 cores
# (docs/PERFORMANCE.md, "Build time (CI)"), but the e2e tests' timeouts are sized for one test per core: CI keeps JOBS.
TEST_JOBS ?= $(JOBS)
CMAKE_GEN := -G Ninja
XPOOL_TRACE_DIR ?= $(abspath ../shared/data/traces)
export XPOOL_TRACE_DIR
# Let ccache share results between clones of the repository (paths are rewritten relative to the clone).
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: deps build build-asan test bench up clean format

deps:
	@scripts/install-deps.sh

build: deps
	cmake -S . -B build $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release
	cmake --build build -j $(JOBS)

build-asan: deps
	cmake -S . -B build-asan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Asan
	cmake --build build-asan -j $(JOBS)

test: build-asan
	cd build-asan && ctest --output-on-failure -j $(TEST_JOBS)

bench: build
	build/bin/xpool_bench --benchmark_counters_tabular=true

up: build
	build/bin/xpool up

clean:
	rm -rf build build-asan

format:
	git ls-files '*.h' '*.cc' '*.c' | xargs clang-format -i
