#!/usr/bin/env bash
# `default` against `fgd` on every variant family (src/sim/variants.h): for each family, `xpool sim fill --vary`
# runs VARIANTS variants × SEEDS with both policies (trace-then-sample) and the family's line of mean and worst
# difference (default − fgd, allocation at arrived 100 %) is collected into OUT/summary.txt; each family's full
# table goes to OUT/FAMILY.txt and its curves to OUT/FAMILY.csv. One family at a time, one run at a time unless
# JOBS says more.
#   scripts/sim-variants.sh [OUT=/tmp/sim-variants]
# Environment (defaults): XPOOL=build/bin/xpool (a Release build), XPOOL_TRACE_DIR=../shared/data/traces,
#   WORKLOAD=openb_pod_list_default, FAMILIES="spec-uniform spec-fleet spec-one spec-small spec-lists spec-mixed
#   multi", VARIANTS=30, SEEDS=42-51, FAMILY_SEED=1, POLICIES=fgd,default (the first is the baseline), JOBS=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-/tmp/sim-variants}
xpool=${XPOOL:-$root/build/bin/xpool}
trace=${XPOOL_TRACE_DIR:-$root/../shared/data/traces}/alibaba-gpu-v2023
workload=${WORKLOAD:-openb_pod_list_default}
families=${FAMILIES:-spec-uniform spec-fleet spec-one spec-small spec-lists spec-mixed multi}
mkdir -p "$out"
: >"$out/summary.txt"
for family in $families; do
  start=$(date +%s)
  "$xpool" sim fill --cluster "$trace/openb_node_list_gpu_node.csv" --workload "$trace/$workload.csv" \
    --policy "${POLICIES:-fgd,default}" --seeds "${SEEDS:-42-51}" --compose trace-then-sample \
    --vary "$family" --variants "${VARIANTS:-30}" --family-seed "${FAMILY_SEED:-1}" --jobs "${JOBS:-1}" \
    --csv "$out/$family.csv" >"$out/$family.txt"
  # The summary block: its header once, then each family's rows.
  if [[ ! -s $out/summary.txt ]]; then grep -m1 '^family ' "$out/$family.txt" >>"$out/summary.txt"; fi
  sed -n '/^family /,$p' "$out/$family.txt" | tail -n +2 >>"$out/summary.txt"
  echo "$family: $(($(date +%s) - start)) s" >&2
done
cat "$out/summary.txt"
