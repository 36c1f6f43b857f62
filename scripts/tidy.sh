#!/usr/bin/env bash
# clang-tidy's bugprone-* and performance-* checks on the C++ files you changed: the files given, or else those
# that differ from HEAD plus those of the last commit. bugprone-easily-swappable-parameters is left out (it flags
# every function taking two ints). Needs a configured build (compile_commands.json):
#   scripts/tidy.sh                       # changed files, build-asan/
#   BUILD_DIR=build scripts/tidy.sh src/server/api.cc
# Not part of CI: about 7 s of CPU per file, ~25 CPU-minutes for the tree, which 2-core CI cannot spare
# (docs/ARCHITECTURE.md, "Checks"). Exit status 1 when a check reports something.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-asan}
if [[ ! -f "$build/compile_commands.json" ]]; then
  echo "tidy: no $build/compile_commands.json (configure a build first: make build-asan)" >&2
  exit 2
fi
if (($#)); then
  files=("$@")
else
  mapfile -t files < <({ git diff --name-only HEAD; git diff --name-only HEAD~1 HEAD; } | sort -u |
                        grep -E '^src/.*\.cc$' | grep -v '_test\.cc$' || true)
fi
if ((${#files[@]} == 0)); then
  echo "tidy: no changed C++ files"
  exit 0
fi
# GCC's flags clang does not know (-Wno-restrict) are only warnings here.
out=$(clang-tidy -p "$build" --quiet --checks='-*,bugprone-*,-bugprone-easily-swappable-parameters,performance-*' \
        --extra-arg=-Wno-unknown-warning-option "${files[@]}" 2>/dev/null || true)
if grep -qE '(warning|error):' <<<"$out"; then
  echo "$out"
  exit 1
fi
echo "tidy: ${#files[@]} file(s), nothing to report"
