#!/usr/bin/env bash
# Where a cold build's time goes, in CPU seconds (on a shared machine wall times grow with the load; CPU
# seconds barely do). Configures a fresh BUILD_DIR with scripts/compile-timer.sh as compiler and linker launcher
# (so no ccache), builds the default target and prints the total, the compile and link sums, the heaviest
# targets and the heaviest steps.
#   scripts/compile-profile.sh [BUILD_DIR=build-profile] [BUILD_TYPE=Asan] [extra cmake -D args...]
#   JOBS=2 (default) sets the build's parallelism.
# Example (what `make test` builds): scripts/compile-profile.sh build-profile Asan
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build-profile}
type=${2:-Asan}
shift $(($# < 2 ? $# : 2))
timer=$root/scripts/compile-timer.sh
rm -rf "$dir" && mkdir -p "$dir"
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DCMAKE_C_COMPILER_LAUNCHER="$timer" \
  -DCMAKE_CXX_COMPILER_LAUNCHER="$timer" -DCMAKE_C_LINKER_LAUNCHER="$timer" -DCMAKE_CXX_LINKER_LAUNCHER="$timer" \
  "$@" >"$dir/configure.log"
/usr/bin/time -f '%U %S %e' -o "$dir/build-time.txt" cmake --build "$dir" -j "${JOBS:-2}" >"$dir/build.log"
python3 - "$dir" <<'PY'
import collections, re, sys
d = sys.argv[1]
user, sys_, wall = map(float, open(f"{d}/build-time.txt").read().split()[-3:])
steps = []
for line in open(f"{d}/compile-times.tsv"):
    u, s, w, out = line.rstrip("\n").split("\t", 3)
    steps.append((float(u) + float(s), out))
compiles = [(c, o) for c, o in steps if o.endswith(".o")]
links = [(c, o) for c, o in steps if not o.endswith(".o")]
print(f"build: {user + sys_:.0f} CPU s (user {user:.0f} + sys {sys_:.0f}), {wall:.0f} s wall")
print(f"  compiles: {len(compiles)} steps, {sum(c for c, _ in compiles):.0f} CPU s; "
      f"links: {len(links)} steps, {sum(c for c, _ in links):.0f} CPU s; "
      f"other (protoc, npm, custom commands): {user + sys_ - sum(c for c, _ in steps):.0f} CPU s")
per_target = collections.Counter()
for c, o in compiles:
    m = re.search(r"CMakeFiles/([^/]+)\.dir/", o)
    per_target[m.group(1) if m else "?"] += c
print("heaviest targets (compile CPU s):")
for t, c in per_target.most_common(15):
    print(f"  {c:7.1f}  {t}")
print("heaviest steps (CPU s):")
for c, o in sorted(steps, reverse=True)[:20]:
    print(f"  {c:7.1f}  {o}")
PY
