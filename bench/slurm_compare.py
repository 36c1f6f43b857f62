#!/usr/bin/env python3
"""The measuring half of bench/slurm_compare.sh (docs/PERFORMANCE.md, "Slurm side by side").

  slurm_compare.py slurm --dir OUT --log slurmctld.log --out slurm.json [--gpus 4] [--jobs 8] [--repeat 3]
                         [--latency-jobs 20] [--rounds 5]
      against the Slurm cluster that SLURM_CONF names (the shell script starts it): `sbatch --version` start-up;
      submissions/s with 1, 8 and 32 concurrent clients, each starting one `sbatch --hold` after another (--jobs
      each, --repeat runs), with slurmctld's own time per submit RPC from its log; submit -> running on the idle
      node: from the client's send time (just before it starts sbatch) to the job's own `date +%s%N`;
      preemption: --gpus low-partition jobs hold the GPUs, a high-partition job arrives: its send time -> its own
      start, and the first victim's SIGTERM trap -> the high job's start.
  slurm_compare.py xpool --xpool build/bin/xpool --out xpool.json [--jobs 8] [--repeat 3] [--seconds 3]
                         [--latency-jobs 20] [--rounds 5]
      the same rows for xpool: bench/cli_startup.py; the submit rows' harness with `xpool submit` against an
      `xpool server` without nodes; xpool_server_load --mode submit --clients 1/8/32 (when built beside --xpool);
      bench/e2e_latency.py.
  slurm_compare.py table --slurm slurm.json [--xpool xpool.json]
      one Markdown table of both: medians, p99 (nearest rank) or p90, in ms.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

CLIENTS = (1, 8, 32)
HERE = os.path.dirname(os.path.abspath(__file__))


def percentile(values, p):
    """Nearest rank, as bench/e2e_latency.py reports it."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, -(-len(s) * p // 100) - 1))]


def summary(values_ms):
    return {"n": len(values_ms), "p50": percentile(values_ms, 50), "p99": percentile(values_ms, 99),
            "min": min(values_ms), "max": max(values_ms)}


def run(argv, check=True):
    r = subprocess.run(argv, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def sbatch(*args):
    return int(run(["sbatch", "--parsable", "--output=/dev/null", *args]).strip().split(";")[0])


def my_jobs():
    """{job id: state} of this user's jobs in the queue (pending, running, completing)."""
    lines = run(["squeue", "--noheader", "--me", "--format=%i %T"]).splitlines()
    return dict(line.split() for line in lines if line.strip())


def cancel_all_and_wait(seconds=60):
    run(["scancel", "--quiet", "--me"], check=False)
    deadline = time.time() + seconds
    while my_jobs():
        if time.time() > deadline:
            raise RuntimeError(f"jobs still queued {seconds} s after scancel: {my_jobs()}")
        time.sleep(0.05)


def wait_for_file(path, seconds=120, poll=0.001):
    """The integer a job wrote to `path` (atomically, by rename); polls every `poll` s."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with open(path) as f:
                return int(f.read())
        except FileNotFoundError:
            time.sleep(poll)
    raise RuntimeError(f"{path} not written within {seconds} s")


def stamp(path):
    """Shell that writes the job's start time (ns since the epoch) to `path` atomically."""
    return f"date +%s%N > {path}.tmp && mv {path}.tmp {path}"


def startup(runs):
    """`sbatch --version` wall time: median and p90 as bench/cli_startup.py computes them for xpool."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(["sbatch", "--version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {"p50": statistics.median(times), "p90": times[int(len(times) * 0.9) - 1]}


def submit_load(clients, jobs, submit):
    """`clients` threads, each calling `submit` `jobs` times one after another; (submissions/s, latencies ms)."""
    latencies, errors = [], []
    lock = threading.Lock()

    def client():
        mine = []
        try:
            for _ in range(jobs):
                t = time.perf_counter()
                submit()
                mine.append((time.perf_counter() - t) * 1000)
        except Exception as e:  # reported below: a failed submit makes the row invalid
            errors.append(str(e))
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"{len(errors)} submit(s) failed, first: {errors[0]}")
    return len(latencies) / elapsed, latencies


def ctld_submit_times(log, offset):
    """slurmctld's own time (ms) for each submit RPC in its log's whole lines after byte `offset`, and the offset
    after the last of them."""
    with open(log, "rb") as f:
        f.seek(offset)
        data = f.read()
    data = data[:data.rfind(b"\n") + 1]
    text = data.decode(errors="replace")
    times = [int(m) / 1000 for m in re.findall(r"_slurm_rpc_submit_batch_job: .* usec=(\d+)", text)]
    return times, offset + len(data)


def submit_rows(name, jobs, repeat, submit, after_run, server_times=None):
    """Submissions/s with 1, 8 and 32 clients (`jobs` each, `repeat` runs; `after_run` clears the queue)."""
    rows = {}
    for clients in CLIENTS:
        rates, latencies = [], []
        for _ in range(repeat):
            rate, lat = submit_load(clients, jobs, submit)
            rates.append(rate)
            latencies.extend(lat)
            after_run()
        row = rows[str(clients)] = {"rate": statistics.median(rates), "runs": rates, **summary(latencies)}
        line = (f"{name}, {clients:2d} clients: {row['rate']:6.0f} submissions/s (runs "
                f"{', '.join(f'{r:.0f}' for r in rates)}), one submit p50 {row['p50']:.1f} ms p99 {row['p99']:.1f} ms")
        if server_times:
            server = server_times()
            if len(server) == len(latencies):
                row["server"] = summary(server)
                line += f"; slurmctld's own time p50 {row['server']['p50']:.2f} ms p99 {row['server']['p99']:.2f} ms"
        print(line, flush=True)
    return rows


def slurm_submits(jobs, repeat, log):
    offset = os.path.getsize(log)

    def server_times():
        nonlocal offset
        times, offset = ctld_submit_times(log, offset)
        return times

    return submit_rows("sbatch", jobs, repeat, lambda: sbatch("--hold", "--job-name=load", "--wrap=true"),
                       cancel_all_and_wait, server_times)


def start_latency(out, jobs):
    values = []
    for i in range(jobs):
        path = os.path.join(out, f"start.{i}")
        sent = time.time_ns()
        sbatch("--partition=low", f"--job-name=lat{i}", "--wrap=" + stamp(path))
        values.append((wait_for_file(path) - sent) / 1e6)
        while my_jobs():  # an idle node: the previous job's release is not part of the next start
            time.sleep(0.02)
        time.sleep(0.05)
    print(f"sbatch submit -> job started: p50 {percentile(values, 50):.1f} ms p99 {percentile(values, 99):.1f} ms",
          flush=True)
    return summary(values)


def preemption(out, rounds, gpus):
    to_high, victim_to_high = [], []
    for r in range(rounds):
        for i in range(gpus):
            trap = f"trap '{stamp(os.path.join(out, f'term.{r}.{i}'))}; exit 0' TERM"
            sbatch("--partition=low", "--gres=gpu:1", f"--job-name=low{r}-{i}",
                   f"--wrap={trap}; {stamp(os.path.join(out, f'low.{r}.{i}'))}; while :; do sleep 0.01; done")
        for i in range(gpus):  # running, with the trap installed
            wait_for_file(os.path.join(out, f"low.{r}.{i}"), poll=0.01)
        time.sleep(0.1)
        path = os.path.join(out, f"high.{r}")
        sent = time.time_ns()
        sbatch("--partition=high", "--gres=gpu:1", f"--job-name=high{r}", "--wrap=" + stamp(path))
        high = wait_for_file(path)
        terms = []
        for i in range(gpus):
            try:
                with open(os.path.join(out, f"term.{r}.{i}")) as f:
                    terms.append(int(f.read()))
            except FileNotFoundError:
                pass
        if not terms:
            raise RuntimeError(f"round {r}: the high job ran but no low job was signalled")
        to_high.append((high - sent) / 1e6)
        victim_to_high.append((high - min(terms)) / 1e6)
        cancel_all_and_wait()
    print(f"preemption: high submit -> high started p50 {percentile(to_high, 50):.1f} ms; "
          f"victim's SIGTERM -> high started p50 {percentile(victim_to_high, 50):.1f} ms", flush=True)
    return summary(to_high), summary(victim_to_high)


def measure_slurm(args):
    os.makedirs(args.dir, exist_ok=True)
    result = {"system": run(["sbatch", "--version"]).strip(), "startup": startup(200)}
    print(f"sbatch --version: p50 {result['startup']['p50']:.1f} ms", flush=True)
    result["cli_submit"] = slurm_submits(args.jobs, args.repeat, args.log)
    result["start"] = start_latency(args.dir, args.latency_jobs)
    result["preempt"], result["victim"] = preemption(args.dir, args.rounds, args.gpus)
    return result


def parse_e2e(text, label):
    m = re.search(re.escape(label) + r"\s+n=\s*(\d+)\s+p50\s+([\d.]+) ms\s+p99\s+([\d.]+) ms\s+min\s+([\d.]+)"
                  r"\s+max\s+([\d.]+)", text)
    if not m:
        raise RuntimeError(f"no '{label}' line in bench/e2e_latency.py's output:\n{text}")
    n, p50, p99, lo, hi = m.groups()
    return {"n": int(n), "p50": float(p50), "p99": float(p99), "min": float(lo), "max": float(hi)}


class XpoolServer:
    """`xpool server` on a free port and a fresh state dir, no nodes (so submitted jobs wait), as
    xpool_server_load starts it; stopped (SIGTERM) and its dir removed on exit of the `with` block."""

    def __init__(self, xpool):
        self.dir = tempfile.mkdtemp(prefix="xpool-compare-")
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()
        self.url = f"http://127.0.0.1:{port}"
        state = os.path.join(self.dir, "var")
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.proc = subprocess.Popen([xpool, "server", "--listen", f"127.0.0.1:{port}", "--state-dir", state,
                                      "--agent-listen", "off"], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2):
                    break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    self.close()
                    raise RuntimeError("xpool server did not become healthy (see its log)")
                time.sleep(0.05)
        with open(os.path.join(state, "admin.token")) as f:
            self.token = f.read().strip()

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def xpool_cli_submits(xpool, jobs, repeat):
    """The sbatch rows' harness with `xpool submit` (one process per submission) against `xpool server`."""
    with XpoolServer(xpool) as server:
        spec = os.path.join(server.dir, "job.json")
        with open(spec, "w") as f:
            json.dump({"name": "load", "command": ["true"], "resources": {"gpu": 1}}, f)
        argv = [xpool, "submit", "-f", spec, "--server", server.url, "--token", server.token]
        return submit_rows("xpool submit", jobs, repeat, lambda: run(argv), lambda: None)


def xpool_server_load(xpool, seconds, repeat):
    """xpool_server_load --mode submit (keep-alive HTTP clients) per client count; None when it is not built."""
    load = os.path.join(os.path.dirname(xpool), "xpool_server_load")
    if not os.access(load, os.X_OK):
        print(f"note: {load} is missing (cmake --build build --target xpool_server_load): no server rows", flush=True)
        return None
    rows = {}
    for clients in CLIENTS:
        text = run([load, "--xpool", xpool, "--mode", "submit", "--seconds", str(seconds), "--clients", str(clients),
                    "--transports", "epoll", "--runs", str(repeat)])
        runs = [re.search(r"([\d.]+) durable submissions/s; latency p50 ([\d.]+) ms p99 ([\d.]+) ms", line)
                for line in text.splitlines() if line.startswith("submit:")]
        if len(runs) != repeat or not all(runs):
            raise RuntimeError("unexpected xpool_server_load output:\n" + text)
        rates = [float(m.group(1)) for m in runs]
        rows[str(clients)] = {"rate": statistics.median(rates), "runs": rates,
                              "p50": statistics.median(float(m.group(2)) for m in runs),
                              "p99": statistics.median(float(m.group(3)) for m in runs)}
        print(f"xpool_server_load, {clients:2d} clients: {rows[str(clients)]['rate']:6.0f} durable submissions/s "
              f"(runs {', '.join(f'{r:.0f}' for r in rates)})", flush=True)
    return rows


def measure_xpool(args):
    xpool = os.path.abspath(args.xpool)
    result = {"system": run([xpool, "--version"]).strip()}
    text = run([sys.executable, os.path.join(HERE, "cli_startup.py"), "--xpool", xpool, "--runs", "200"])
    m = re.search(r"xpool --version\s+median\s+([\d.]+) ms\s+p90\s+([\d.]+) ms", text)
    if not m:
        raise RuntimeError("unexpected bench/cli_startup.py output:\n" + text)
    result["startup"] = {"p50": float(m.group(1)), "p90": float(m.group(2))}
    print(f"xpool --version: p50 {result['startup']['p50']:.1f} ms p90 {result['startup']['p90']:.1f} ms", flush=True)
    result["cli_submit"] = xpool_cli_submits(xpool, args.jobs, args.repeat)
    server = xpool_server_load(xpool, args.seconds, args.repeat)
    if server:
        result["server_submit"] = server
    text = run([sys.executable, os.path.join(HERE, "e2e_latency.py"), "--xpool", xpool, "--jobs",
                str(args.latency_jobs), "--rounds", str(args.rounds)])
    print(text, end="", flush=True)
    result["start"] = parse_e2e(text, "submit -> running (client sees it)")
    result["preempt"] = parse_e2e(text, "high submit -> high running")
    result["victim"] = parse_e2e(text, "victim suspended -> high running")
    return result


def plural(n):
    return f"{n} client{'s' if n > 1 else ''}"


# (label, the result's value for the row); the doc's "Slurm side by side" defines each row.
ROWS = [
    ("CLI start-up (`sbatch --version` / `xpool --version`), ms p50 / p90", lambda r: r.get("startup")),
    *[(f"submissions/s, {plural(c)}, a CLI process per submission (`sbatch` / `xpool submit`); one, ms p50 / p99",
       lambda r, c=c: r.get("cli_submit", {}).get(str(c))) for c in CLIENTS],
    *[(f"server, {plural(c)}: slurmctld's own time per submit RPC, ms p50 / p99 vs `xpool_server_load --mode "
       "submit`, submissions/s (one, ms p50 / p99)",
       lambda r, c=c: r.get("cli_submit", {}).get(str(c), {}).get("server") or r.get("server_submit", {}).get(str(c)))
      for c in CLIENTS],
    ("submit -> running on an idle node, ms p50 / p99", lambda r: r.get("start")),
    ("preemption: high submit -> high running, ms p50 / p99", lambda r: r.get("preempt")),
    ("preemption: victim out -> high running, ms p50 / p99", lambda r: r.get("victim")),
]


def cell(v):
    if not v:
        return "-"
    if "rate" in v:
        return f"{v['rate']:.0f}/s ({v['p50']:.1f} / {v['p99']:.1f})"
    high = v.get("p99", v.get("p90"))
    digits = 2 if high < 10 else 1
    return f"{v['p50']:.{digits}f} / {high:.{digits}f}"


def table(args):
    with open(args.slurm) as f:
        slurm = json.load(f)
    xpool = {}
    if args.xpool:
        with open(args.xpool) as f:
            xpool = json.load(f)
    print()
    print(f"| row | {slurm['system']} | {xpool.get('system', 'xpool: not run (--xpool)')} |")
    print("|---|---|---|")
    for label, get in ROWS:
        print(f"| {label} | {cell(get(slurm))} | {cell(get(xpool))} |")


def main():
    # slurm_compare.sh stops this process group with SIGTERM: exit through the `with` blocks and `finally`s.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("slurm")
    s.add_argument("--dir", required=True, help="a directory the jobs can write their start times to")
    s.add_argument("--gpus", type=int, default=4, help="the cluster's GPUs: low jobs that fill it")
    s.add_argument("--log", required=True, help="slurmctld's log file (SlurmctldDebug=info or more)")
    x = sub.add_parser("xpool")
    x.add_argument("--xpool", required=True)
    x.add_argument("--seconds", type=int, default=3, help="xpool_server_load --seconds per run")
    for p in (s, x):
        p.add_argument("--out", required=True, help="where to write the results (JSON)")
        p.add_argument("--jobs", type=int, default=8, help="submissions per client")
        p.add_argument("--repeat", type=int, default=3, help="runs per submit row (the median is reported)")
        p.add_argument("--latency-jobs", type=int, default=20, help="jobs for submit -> running")
        p.add_argument("--rounds", type=int, default=5, help="preemption rounds")
    t = sub.add_parser("table")
    t.add_argument("--slurm", required=True)
    t.add_argument("--xpool")
    args = ap.parse_args()
    if args.mode == "table":
        table(args)
        return 0
    result = measure_slurm(args) if args.mode == "slurm" else measure_xpool(args)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
