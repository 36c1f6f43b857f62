#!/usr/bin/env bash
# The long fault and abuse campaign: ROUNDS rounds, each one tests/fault/rest_campaign.py (fuzzer,
# cross-tenant, cross-node and static-file probes, lost/leaked accounting) with its own seed and REQUESTS fuzzer
# requests, then the fault tests through ctest: server_crash_test (kill -9 of the server mid-traffic),
# e2e_fencing_test (an agent frozen past the node timeout) and e2e_isolation_test (tasks probing what is not
# theirs; skipped when not root). Prints a table, one row per round; exits 1 if any round failed.
#   scripts/soak.sh [BUILD_DIR] [ROUNDS] [REQUESTS]        defaults: build-asan 5 20000
# The fuzzer's requests are shared by SOAK_WORKERS concurrent clients (default 4: the load column); one worker
# replays a seed exactly, several interleave as the scheduler lets them.
# BUILD_DIR must hold a finished build (bin/xpool and the test binaries); this script builds nothing. Seeds are
# SOAK_SEED_BASE + round (default base 1000); a failing round reruns alone with
#   tests/fault/rest_campaign.py --xpool BUILD_DIR/bin/xpool --seed SEED --requests REQUESTS --workers N --verbose
# Logs: BUILD_DIR/soak/round-N-campaign.log and round-N-ctest.log.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-asan}
rounds=${2:-5}
requests=${3:-20000}
seed_base=${SOAK_SEED_BASE:-1000}
workers=${SOAK_WORKERS:-4}
[[ "$build" = /* ]] || build="$root/$build"
xpool="$build/bin/xpool"
if [[ ! -x "$xpool" ]]; then
  echo "soak: $xpool not found: build first (make build, or cmake --build $build)" >&2
  exit 2
fi
fault_tests='^(server_crash_test|e2e_fencing_test|e2e_isolation_test)$'
logs="$build/soak"
mkdir -p "$logs"

# A value from rest_campaign.py's line "summary seed=.. requests=.. bad_inputs=.. 5xx=.. lost=.. leaked=..".
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

rows=()
failed_rounds=0
started=$(date +%s)
for ((round = 1; round <= rounds; round++)); do
  seed=$((seed_base + round))
  campaign_log="$logs/round-$round-campaign.log"
  ctest_log="$logs/round-$round-ctest.log"
  echo "soak: round $round/$rounds, seed $seed, $requests requests from $workers clients" >&2
  python3 "$root/tests/fault/rest_campaign.py" --xpool "$xpool" --seed "$seed" --requests "$requests" \
    --workers "$workers" >"$campaign_log" 2>&1
  campaign_rc=$?
  summary=$(grep '^summary ' "$campaign_log" | tail -n 1)
  bad=$(field bad_inputs "$summary"); five=$(field 5xx "$summary")
  lost=$(field lost "$summary"); leaked=$(field leaked "$summary")

  ctest --test-dir "$build" -R "$fault_tests" --output-on-failure --timeout 900 >"$ctest_log" 2>&1
  ctest_rc=$?
  # "100% tests passed, 0 tests failed out of 3"
  faults=$(sed -n 's/.* tests failed out of \([0-9]*\).*/\1/p' "$ctest_log" | tail -n 1)
  fault_failures=$(sed -n 's/.*, \([0-9]*\) tests failed out of.*/\1/p' "$ctest_log" | tail -n 1)

  result=ok
  if [[ $campaign_rc -ne 0 || -z "$summary" ]]; then result="FAIL(campaign)"; fi
  if [[ $ctest_rc -ne 0 || -z "$faults" ]]; then
    [[ $result = ok ]] && result="FAIL(faults)" || result="$result+FAIL(faults)"
  fi
  [[ $result = ok ]] || failed_rounds=$((failed_rounds + 1))
  rows+=("$(printf '%-6s %-6s %9s %5s %7s %11s %5s %5s %7s  %s' "$round" "$seed" "$requests" "$workers" \
    "${faults:-?}${fault_failures:+/$fault_failures}" "${bad:-?}" "${five:-?}" "${lost:-?}" "${leaked:-?}" "$result")")
done

echo
printf '%-6s %-6s %9s %5s %7s %11s %5s %5s %7s  %s\n' round seed requests load faults "bad inputs" 5xx lost leaked \
  result
printf '%s\n' "${rows[@]}"
echo "load: concurrent fuzzer clients; faults: fault tests run/failed (server_crash_test: kill -9 of the server," \
  "e2e_fencing_test: a frozen agent, e2e_isolation_test: tasks probing what is not theirs)"
echo "$((rounds - failed_rounds)) rounds passed, $failed_rounds failed in $(($(date +%s) - started)) s; logs in $logs"
[[ $failed_rounds -eq 0 ]]
