#!/usr/bin/env bash
# Slurm side by side with xpool on one machine (docs/PERFORMANCE.md, "Slurm side by side").
#
#   bench/slurm_compare.sh [--xpool build/bin/xpool] [--jobs 8] [--repeat 3] [--latency-jobs 20] [--rounds 5]
#                        [--nodes 1] [--sched-params batch_sched_delay=0] [--keep]
#
# On Debian bookworm, as root (apt-get, and slurmd starts jobs as their users):
#   1. installs slurmctld, slurmd, slurm-client and munge through apt-get when they are missing (Debian's
#      packages only; nothing else is downloaded);
#   2. in a fresh temp dir: generates a munge key and starts munged on its own socket; writes a throw-away
#      slurm.conf and gres.conf (free ports; --nodes slurmd on this host, n1..nN, each with fake GPUs, Gres=gpu:4;
#      select/cons_tres; partitions "low" and "high" with preemption by partition priority, PreemptMode=REQUEUE;
#      Slurm's scheduler defaults unless --sched-params) and starts slurmctld and the slurmd as the current user,
#      waiting until every node is idle;
#   3. measures (bench/slurm_compare.py slurm): `sbatch --version` start-up; sbatch submissions/s with 1, 8 and
#      32 concurrent clients (--jobs each, --repeat times, held so none runs), with slurmctld's own time per
#      submit from its log; submit -> running on the idle node (--latency-jobs, one at a time: the client's send
#      time to the job's own `date +%s%N`); preemption (--rounds: 4 low jobs hold the 4 GPUs, a high job arrives:
#      its send time -> its own start, and the first victim's SIGTERM trap -> the high job's start; with
#      --nodes N, 4N low jobs);
#   4. stops every daemon and removes the temp dir (on exit, an error or Ctrl-C; --keep leaves the dir with its
#      configs and logs); with --xpool, then measures xpool for the same rows (bench/cli_startup.py; the submit
#      rows' harness with `xpool submit` against an `xpool server` without nodes; xpool_server_load --mode submit
#      beside --xpool; bench/e2e_latency.py) and prints one table of both, medians and p99 in ms.
# A full run takes about 4 minutes. Not part of `make test` (CI installs no Slurm): ctest's slurm_compare_syntax
# checks only the syntax of this script and of slurm_compare.py.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
xpool="" keep=0 sched="" nodes=1 jobs=8 repeat=3 latency_jobs=20 rounds=5
usage() { sed -n '4,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --xpool) xpool=${2:?--xpool needs a path}; shift 2 ;;
    --nodes) nodes=${2:?--nodes needs a count}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a count}; shift 2 ;;
    --repeat) repeat=${2:?--repeat needs a count}; shift 2 ;;
    --latency-jobs) latency_jobs=${2:?--latency-jobs needs a count}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a count}; shift 2 ;;
    --sched-params) sched=${2:?--sched-params needs a value}; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) usage ;;
    *) echo "error: unknown argument '$1'" >&2; usage ;;
  esac
done
for flag in nodes jobs repeat latency_jobs rounds; do
  [[ "${!flag}" =~ ^[1-9][0-9]*$ ]] ||
    { echo "error: --${flag//_/-} must be a positive integer, got '${!flag}'" >&2; exit 2; }
done
((nodes <= 64)) || { echo "error: --nodes must be at most 64, got $nodes" >&2; exit 2; }
if [[ -n "$xpool" && ! -x "$xpool" ]]; then
  echo "error: --xpool '$xpool' is not an executable" >&2; exit 2
fi
[[ $(id -u) -eq 0 ]] || { echo "error: run as root (apt-get, munged and slurmd need it)" >&2; exit 2; }

# 1. Debian's packages only.
missing=()
for pkg in slurmctld slurmd slurm-client munge; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "== installing ${missing[*]} (apt-get)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. A throw-away cluster.
dir=$(mktemp -d /tmp/xpool-slurm.XXXXXX)
chmod 0755 "$dir"
export SLURM_CONF=$dir/slurm.conf
# Each child runs in its own session (setsid), so that Ctrl-C reaches only this script, whose trap then stops
# them in order: the measuring process group, the jobs (while slurmctld can still cancel them), the daemons.
daemons=() ctld="" py=""
stop_all() {
  if [[ -n "$py" ]]; then
    kill -TERM -- "-$py" 2>/dev/null || true
    wait "$py" 2>/dev/null || true
    py=""
  fi
  if [[ -n "$ctld" ]] && kill -0 "$ctld" 2>/dev/null; then
    timeout 10 scancel --quiet --me 2>/dev/null || true
    for _ in $(seq 50); do
      [[ -z $(timeout 5 squeue --noheader --me 2>/dev/null) ]] && break
      sleep 0.2
    done
  fi
  for ((i = ${#daemons[@]} - 1; i >= 0; i--)); do
    kill "${daemons[i]}" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "${daemons[i]}" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "${daemons[i]}" 2>/dev/null || true
  done
  daemons=() ctld=""
}
cleanup() {
  stop_all
  if [[ $keep -eq 1 ]]; then echo "== kept $dir" >&2; else rm -rf "$dir"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# Runs bench/slurm_compare.py in the background and waits for it: a trapped signal interrupts `wait`.
measure() {
  setsid python3 "$here/slurm_compare.py" "$@" &
  py=$!
  wait "$py"
  py=""
}

mkdir -p "$dir"/{munge,state,spool,log,out}
chmod 0700 "$dir/munge"
mungekey --create --keyfile="$dir/munge/munge.key"
setsid munged --foreground --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" \
  >"$dir/log/munged.out" 2>&1 &
daemons+=($!)
for _ in $(seq 100); do [[ -S "$dir/munge/munge.socket" ]] && break; sleep 0.05; done
[[ -S "$dir/munge/munge.socket" ]] || { echo "error: munged did not start:" >&2; cat "$dir"/log/munged.* >&2; exit 1; }

read -r ctld_port slurmd_ports < <(python3 -c '
import socket, sys
s = [socket.socket() for _ in range(1 + int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
ports = [x.getsockname()[1] for x in s]
print(ports[0], ",".join(map(str, ports[1:])))' "$nodes")
host=$(hostname -s)
names="n[1-$nodes]"
cat >"$SLURM_CONF" <<EOF
ClusterName=xpoolbench
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
KillWait=1
MaxJobCount=100000
MinJobAge=2
SchedulerType=sched/backfill
${sched:+SchedulerParameters=$sched
}SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
SlurmdParameters=config_overrides
NodeName=$names NodeHostname=$host NodeAddr=127.0.0.1 Port=$slurmd_ports CPUs=16 Gres=gpu:4 State=UNKNOWN
PartitionName=low Nodes=$names Default=YES PriorityTier=1 PreemptMode=REQUEUE MaxTime=INFINITE State=UP
PartitionName=high Nodes=$names PriorityTier=10 PreemptMode=OFF MaxTime=INFINITE State=UP
EOF
# gres/gpu drops a GPU without File= ("Removing file-less GPU"): four empty regular files stand in (slurmd
# logs that they are not devices; with task/none nothing opens or constrains them).
touch "$dir"/gpu{0..3}
echo "Name=gpu File=$dir/gpu[0-3]" >"$dir/gres.conf"

setsid slurmctld -D -i -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
ctld=$!
daemons+=($!)
for ((i = 1; i <= nodes; i++)); do
  setsid slurmd -D -N "n$i" -f "$SLURM_CONF" >"$dir/log/slurmd.n$i.out" 2>&1 &
  daemons+=($!)
done
state=""
for _ in $(seq 300); do
  state=$(sinfo --noheader --Node --format=%T 2>/dev/null | sort -u | paste -sd, || true)
  [[ "$state" == idle ]] && break
  sleep 0.1
done
if [[ "$state" != idle ]]; then
  echo "error: the Slurm nodes are '${state:-unknown}', not idle, after 30 s" >&2
  tail -n 20 "$dir"/log/*.log "$dir"/log/*.out >&2 || true
  exit 1
fi
echo "== $(sinfo --version): $nodes slurmd ($names on $host) idle, gpu:4 each (partitions low < high," \
  "PreemptMode=REQUEUE, SchedulerParameters=${sched:-Slurm defaults})"

# 3. Slurm's rows, then 4. xpool's.
measure slurm --dir "$dir/out" --log "$dir/log/slurmctld.log" --gpus $((4 * nodes)) --jobs "$jobs" \
  --repeat "$repeat" --latency-jobs "$latency_jobs" --rounds "$rounds" --out "$dir/slurm.json"
stop_all
args=(table --slurm "$dir/slurm.json")
if [[ -n "$xpool" ]]; then
  measure xpool --xpool "$xpool" --jobs "$jobs" --repeat "$repeat" --latency-jobs "$latency_jobs" \
    --rounds "$rounds" --out "$dir/xpool.json"
  args+=(--xpool "$dir/xpool.json")
fi
python3 "$here/slurm_compare.py" "${args[@]}"
