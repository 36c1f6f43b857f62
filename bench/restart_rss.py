#!/usr/bin/env python3
"""Resident memory of `xpool server` holding N jobs, before and after a restart (docs/PERFORMANCE.md).

Starts `xpool server` on a fresh state directory (SQLite), submits N pending jobs through
POST /api/v1/jobs:batch (no nodes: they stay in the queue), lets it settle and reads VmRSS; then stops it,
starts it again on the same state directory (the job cache loads every job from the store) and reads VmRSS again
once it answers and has settled. Prints both and their ratio.

  bench/restart_rss.py --xpool build/bin/xpool [--jobs 100000] [--settle 5]
"""
import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

JOB = {"name": "bench", "command": ["true"], "resources": {"gpu": 1, "gpumem": "4Gi", "gpucores": 10}}


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) / 1024


def start(xpool, state, log_path):
    log = open(log_path, "w")
    p = subprocess.Popen([xpool, "server", "--listen", "127.0.0.1:0", "--agent-listen", "off", "--state-dir", state,
                          "--max-body", str(4 << 20)], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(1200):
        with open(log_path) as f:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", f.read())
        if m:
            return p, int(m.group(1))
        if p.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError("xpool server did not start: " + open(log_path).read())


def call(port, token, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = conn.getresponse()
    text = r.read()
    if r.status >= 300:
        raise RuntimeError(f"{method} {path}: {r.status} {text[:300]!r}")
    return json.loads(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xpool", default="build/bin/xpool")
    ap.add_argument("--jobs", type=int, default=100000)
    ap.add_argument("--settle", type=float, default=5, help="seconds to wait before reading VmRSS")
    args = ap.parse_args()
    xpool = os.path.abspath(args.xpool)
    tmp = tempfile.mkdtemp(prefix="xpool-rss-")
    state = os.path.join(tmp, "var")
    try:
        p, port = start(xpool, state, os.path.join(tmp, "server1.log"))
        token = open(os.path.join(state, "admin.token")).read().strip()
        left = args.jobs
        while left > 0:
            n = min(left, 10000)
            call(port, token, "POST", "/api/v1/jobs:batch", {"jobs": [JOB] * n})
            left -= n
        time.sleep(args.settle)
        before = rss_mib(p.pid)
        p.terminate()
        p.wait(60)
        loaded = time.monotonic()
        p, port = start(xpool, state, os.path.join(tmp, "server2.log"))
        listed = call(port, token, "GET", "/api/v1/jobs?state=queued&limit=1")
        load_s = time.monotonic() - loaded
        time.sleep(args.settle)
        after = rss_mib(p.pid)
        p.terminate()
        p.wait(60)
        print(f"{args.jobs} jobs: VmRSS {before:.0f} MiB after submitting, {after:.0f} MiB after a restart "
              f"({after / before:.2f}x; restart to first answer {load_s:.1f} s; {len(listed['jobs'])} job listed)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
