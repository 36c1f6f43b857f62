#!/usr/bin/env bash
# Builds the job-spec libFuzzer target with clang++ (the main build uses g++) and runs it for a while.
#   run_job_spec_fuzz.sh SOURCE_DIR BUILD_DIR SECONDS
# Exit 77 (ctest: skipped) only when clang++ or libFuzzer's runtime is not installed (a one-line probe decides:
# the linker names the missing runtime); a probe failing otherwise, or a source that does not compile or link,
# fails the test. Rebuilds only when a source changed.
# The run is seeded (XPOOL_FUZZ_SEED, default 1) so that CI replays one fixed input sequence, cut by time: a run
# fails only for an input that a longer run with the same seed on the same corpus also reaches. Exploratory runs
# set another seed (or 0 for a random one) and more seconds.
set -euo pipefail
src=${1:?source dir}; out=${2:?build dir}; seconds=${3:-30}
seed=${XPOOL_FUZZ_SEED:-1}
cxx=${XPOOL_FUZZ_CXX:-$(command -v clang++ || true)}
if [[ -z "$cxx" ]]; then
  echo "SKIP: clang++ not found (install Debian's 'clang' to build the libFuzzer target)"; exit 77
fi
mkdir -p "$out"
probe="$out/libfuzzer_probe"
probe_link() {
  echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' |
    "$cxx" -x c++ - -fsanitize=fuzzer -o "$probe" 2>&1
}
# Skipped only when the runtime is missing (the linker cannot find libclang_rt.fuzzer); a probe that fails for any
# other reason is tried once more, then fails the test with the compiler's words.
if ! probe_error=$(probe_link) && ! probe_error=$(probe_link); then
  if grep -qi "clang_rt.fuzzer" <<<"$probe_error"; then
    echo "SKIP: $cxx cannot link a libFuzzer binary (install Debian's 'libclang-rt-dev'):"
    echo "$probe_error"
    exit 77
  fi
  echo "the libFuzzer probe failed:"; echo "$probe_error"; exit 1
fi
bin="$out/job_spec_fuzz"
sources=(
  "$src/tests/fuzz/job_spec_fuzz.cc"
  "$src/src/model/job_spec.cc" "$src/src/model/job_spec_parse.cc" "$src/src/model/task_request.cc"
  "$src/src/model/vendor.cc" "$src/src/model/mig_profile.cc" "$src/src/common/status.cc" "$src/src/common/units.cc"
  "$src/src/common/nesting.cc"
)
stale=0
[[ -x "$bin" ]] || stale=1
if [[ $stale -eq 0 ]]; then
  for f in "${sources[@]}" "$src"/src/model/*.h "$src"/src/model/internal/*.h "$src"/src/common/*.h; do
    [[ "$f" -nt "$bin" ]] && { stale=1; break; }
  done
fi
if [[ $stale -eq 1 ]]; then
  echo "building $bin with $cxx"
  launcher=(); command -v ccache >/dev/null && launcher=(ccache)
  objs=()
  pids=()
  for f in "${sources[@]}"; do
    o="$out/$(basename "${f%.cc}").o"
    "${launcher[@]}" "$cxx" -std=c++20 -O1 -g -fno-omit-frame-pointer \
      -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
      -I"$src/src" -c "$f" -o "$o" &
    objs+=("$o")
    pids+=($!)
    # two compilers at a time: the build machines are shared
    if (( ${#pids[@]} == 2 )); then
      for p in "${pids[@]}"; do wait "$p"; done
      pids=()
    fi
  done
  for p in "${pids[@]}"; do wait "$p"; done
  "$cxx" -fsanitize=fuzzer,address,undefined "${objs[@]}" -lyaml-cpp -o "$bin.tmp"
  mv "$bin.tmp" "$bin"
fi
corpus="$out/job_spec_corpus"
mkdir -p "$corpus"
artifacts="$out/job_spec_artifacts/"
mkdir -p "$artifacts"
echo "running $bin for ${seconds}s, seed $seed"
exec "$bin" "$corpus" "$src/tests/fuzz/corpus/job_spec" -dict="$src/tests/fuzz/job_spec.dict" -seed="$seed" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
  -artifact_prefix="$artifacts"
