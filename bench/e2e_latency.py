#!/usr/bin/env python3
"""End-to-end latency of `xpool up` as a user waits for it (docs/PERFORMANCE.md, "End-to-end latency").

Starts `xpool up` on a simulated 4xA100-80GB node and measures:
  - submit -> running: N jobs one after another on an idle pool: from sending the POST until a GET (every
    1 ms) shows it running, which the agent's report of its start causes; and from the job's "submitted" event to
    the start the agent stamped on its "running" transition;
  - preemption, from the server's event times: 4 low-priority preemptible jobs fill the node, each exiting 0 on
    its suspend signal; a high-priority job arrives: its "preempt" decision -> the victim's signal (the time its
    handler wrote) -> the victim's "suspended" (the task exited, the exit reported) -> the high job's "running".
    R rounds.
Prints medians and p99 (nearest rank) in milliseconds.

  bench/e2e_latency.py --xpool build/bin/xpool [--jobs 50] [--rounds 10]
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time


class Api:
    def __init__(self, port, token):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.token = token

    def call(self, method, path, body=None):
        headers = {"Authorization": "Bearer " + self.token}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        r = self.conn.getresponse()
        text = r.read()
        if r.status >= 300:
            raise RuntimeError(f"{method} {path}: {r.status} {text[:300]!r}")
        return json.loads(text) if text else None

    def submit(self, spec):
        return self.call("POST", "/api/v1/jobs", spec)["id"]

    def state(self, job):
        return self.call("GET", f"/api/v1/jobs/{job}")["state"]

    def events(self, job):
        return self.call("GET", f"/api/v1/jobs/{job}/events")["events"]

    def wait(self, job, states, seconds=60, poll=0.005):
        deadline = time.time() + seconds
        while time.time() < deadline:
            s = self.state(job)
            if s in states:
                return s
            time.sleep(poll)
        raise RuntimeError(f"job {job} never reached {states}")


def event_time(events, kind=None, to=None):
    for e in events:
        if (kind is None or e["kind"] == kind) and (to is None or e.get("to") == to):
            return e["time_us"]
    raise RuntimeError(f"no event kind={kind} to={to} in {events}")


def percentile(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, -(-len(s) * p // 100) - 1))]


def report(name, values_us):
    ms = [v / 1000 for v in values_us]
    print(f"{name:36s} n={len(ms):3d}  p50 {percentile(ms, 50):8.1f} ms  p99 {percentile(ms, 99):8.1f} ms  "
          f"min {min(ms):7.1f}  max {max(ms):7.1f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xpool", default="build/bin/xpool")
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop `xpool up` and remove its dir (finally)
    tmp = tempfile.mkdtemp(prefix="xpool-latency-")
    os.chmod(tmp, 0o755)  # as root, tasks run as their tenant's uid and must reach their directories
    state = os.path.join(tmp, "var")
    log = open(os.path.join(tmp, "up.log"), "w")
    up = subprocess.Popen([os.path.abspath(args.xpool), "up", "--listen", "127.0.0.1:0", "--state-dir", state,
                           "--simulate", "4xA100-80GB", "--node-name", "bench", "--min-runtime", "0",
                           "--agent-listen", "off"], cwd=tmp, stdout=log, stderr=subprocess.STDOUT)
    try:
        port = None
        for _ in range(600):
            with open(os.path.join(tmp, "up.log")) as f:
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", f.read())
            if m:
                port = int(m.group(1))
                break
            time.sleep(0.05)
        if port is None:
            raise RuntimeError("xpool up did not start: " + open(os.path.join(tmp, "up.log")).read())
        token = open(os.path.join(state, "admin.token")).read().strip()
        api = Api(port, token)
        for _ in range(600):
            try:
                if api.call("GET", "/api/v1/nodes")["nodes"]:
                    break
            except Exception:
                pass
            time.sleep(0.05)

        starts, server_side = [], []
        for i in range(args.jobs):
            sent = time.monotonic()
            job = api.submit({"name": f"lat{i}", "resources": {"cpu": "100m"}, "command": "sleep 0.2"})
            api.wait(job, ("running", "succeeded", "failed"), poll=0.001)
            starts.append((time.monotonic() - sent) * 1e6)
            api.wait(job, ("succeeded", "failed"))
            ev = api.events(job)
            server_side.append(event_time(ev, to="running") - event_time(ev, kind="submitted"))
            time.sleep(0.05)  # an idle pool: the previous job's release is not part of the next start
        report("submit -> running (client sees it)", starts)
        report("submit -> agent started it (events)", server_side)

        decide_to_signalled, decide_to_victim_out, victim_out_to_high_running, submit_to_high_running = [], [], [], []
        # The victim stamps the moment its suspend signal arrives (a Python handler runs at once; a shell trap only
        # after its current command) in its working directory, then exits 0.
        victim = ("/usr/bin/python3 -c \"import os, signal, time\n"
                  "def out(*_):\n"
                  "    open('signalled', 'w').write(str(time.time_ns() // 1000))\n"
                  "    os._exit(0)\n"
                  "signal.signal(signal.SIGUSR1, out)\n"
                  "open('ready', 'w').write('1')\n"
                  "while True: time.sleep(1)\"")
        work = lambda job, name: os.path.join(state + "-tasks", f"job{job}-r0", "work", name)
        for r in range(args.rounds):
            lows = [api.submit({"name": f"low{r}-{i}", "priority": 10, "preemptible": True,
                                "resources": {"gpu": 1}, "checkpoint": {"grace": 30}, "command": victim})
                    for i in range(4)]
            for j in lows:
                api.wait(j, ("running",))
            for j in lows:  # the handlers are installed
                deadline = time.time() + 30
                while not os.path.exists(work(j, "ready")) and time.time() < deadline:
                    time.sleep(0.01)
            high = api.submit({"name": f"high{r}", "priority": 90, "resources": {"gpu": 1}, "command": "sleep 0.2"})
            api.wait(high, ("running", "succeeded"))
            hev = api.events(high)
            decided = event_time(hev, kind="preempt")
            high_running = event_time(hev, to="running")
            victim_out = None
            for j in lows:
                for e in api.events(j):
                    if e.get("to") == "suspended" and e["time_us"] >= decided:
                        victim_out = e["time_us"] if victim_out is None else min(victim_out, e["time_us"])
            signalled = [int(open(work(j, "signalled")).read()) for j in lows if os.path.exists(work(j, "signalled"))]
            decide_to_signalled.append(min(signalled) - decided)
            decide_to_victim_out.append(victim_out - decided)
            victim_out_to_high_running.append(high_running - victim_out)
            submit_to_high_running.append(high_running - event_time(hev, kind="submitted"))
            api.wait(high, ("succeeded",))
            for j in lows:
                api.call("POST", f"/api/v1/jobs/{j}/cancel")
            for j in lows:
                api.wait(j, ("cancelled", "succeeded", "failed"))
        report("preempt decision -> victim signalled", decide_to_signalled)
        report("preempt decision -> victim suspended", decide_to_victim_out)
        report("victim suspended -> high running", victim_out_to_high_running)
        report("high submit -> high running", submit_to_high_running)
    finally:
        up.send_signal(signal.SIGTERM)
        try:
            up.wait(timeout=20)
        except subprocess.TimeoutExpired:
            up.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
