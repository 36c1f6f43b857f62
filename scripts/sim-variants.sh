#!/usr/bin/env bash
# `default` against `fgd` on every variant family (src/sim/variants.h): for each family, `xpool sim fill --vary`
# runs VARIANTS variants × SEEDS with both policies (trace-then-sample) and the family's line of mean and worst
# difference (default − fgd, allocation at arrived 100 %) is collected into OUT/summary.txt; each family's full
# table goes to OUT/FAMILY.txt and its curves to OUT/FAMILY.csv. One family at a time, one run at a time unless
# JOBS says more. Last, OUT/table.md: per family the mean allocation of both policies over every variant and seed,
# the mean and worst difference, and the mean difference over the spec variants with share ≥ 25 %.
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
python3 - "$out" $families <<'PY' | tee "$out/table.md"
import csv, re, statistics, sys
out, families = sys.argv[1], sys.argv[2:]
print("| family | variants | fgd | default | default − fgd, mean | worst | worst variant | mean, share ≥ 25 % |")
print("|---|---|---|---|---|---|---|---|")
for family in families:
    runs = {}  # workload -> policy -> allocation at arrived 100 % per seed
    for row in csv.reader(open(f"{out}/{family}.csv")):
        if row[0] != "workload":
            runs.setdefault(row[0], {}).setdefault(row[1], []).append(float(row[5 + 100]))
    base, other = "fgd", "default"
    diffs, big, means = [], [], {base: [], other: []}
    for workload, by_policy in runs.items():
        if base not in by_policy or other not in by_policy:
            continue
        b, o = statistics.mean(by_policy[base]), statistics.mean(by_policy[other])
        means[base].append(b)
        means[other].append(o)
        variant = workload.split("/", 1)[1]
        diffs.append((o - b, variant))
        share = re.search(r"share=(\d+)", variant)
        if variant.startswith("spec") and share and int(share.group(1)) >= 25:
            big.append(o - b)
    worst = min(diffs)
    big_text = f"{statistics.mean(big):+.2f} ({len(big)})" if big else "–"
    print(f"| {family} | {len(diffs)} | {statistics.mean(means[base]):.2f} | {statistics.mean(means[other]):.2f} | "
          f"{statistics.mean(d for d, _ in diffs):+.2f} | {worst[0]:+.2f} | `{worst[1]}` | {big_text} |")
PY
