#!/usr/bin/env python3
"""The server's /metrics as monitoring tools read it, end to end (docs/api.md, "Metrics").

Starts the real `xpool server` on loopback (--min-runtime 0), gives it a populated state through its REST API —
two simulated nodes with devices, tenants, a running job, a preemption (a scheduler suspension), a suspension by
hand, a job that waits — and scrapes /metrics. Then, by --check:

  promtool    `promtool check metrics` (Debian's `prometheus` package) accepts the scrape: the exposition format
              and Prometheus' naming conventions (base units, `_total` counters). Also checks that the scrape
              shows that state (so the check ran on what it claims), and that a scrape taking gzip (as
              Prometheus's does) is one gzip member, read by Python's gzip, with the same series.
  dashboard   every metric name in every query of deploy/grafana/xpool-dashboard.json (panels and template
              variables) is a family the server exports; histogram series (`_bucket`, `_sum`, `_count`) must
              belong to a histogram.
  prometheus  a real Prometheus scrapes the server; every dashboard query (Grafana's variables replaced)
              evaluates without error through its HTTP API, and the gauge panels return data.

Exits 77 (ctest's SKIP_RETURN_CODE) when the tool a check needs is not installed.
"""
import argparse
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

SKIP = 77


class Server:
    """A running `xpool server` in a temp dir, and requests to it with the admin token."""

    def __init__(self, xpool, tmp):
        self.state_dir = os.path.join(tmp, "state")
        os.makedirs(self.state_dir)
        self.log_path = os.path.join(tmp, "server.log")
        log = open(self.log_path, "wb")
        cmd = [xpool, "server", "--listen", "127.0.0.1:0", "--state-dir", self.state_dir, "--agent-listen", "off",
               "--min-runtime", "0", "--tick-ms", "100"]
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.port = 0
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit("xpool server exited %d at start:\n%s" % (self.proc.returncode, self.log_tail()))
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.log_text())
            if m:
                self.port = int(m.group(1))
                try:
                    if self.request("GET", "/healthz", token=False)[0] == 200:
                        break
                except OSError:
                    pass
            time.sleep(0.1)
        else:
            raise SystemExit("xpool server did not answer /healthz within 60 s:\n" + self.log_tail())
        with open(os.path.join(self.state_dir, "admin.token")) as f:
            self.token = f.read().strip()

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def log_tail(self, lines=40):
        return "\n".join(self.log_text().splitlines()[-lines:])

    def request(self, method, path, body=None, token=True, content_type="application/json"):
        """(status, text) of one request; `body` a dict (JSON) or a str (sent as `content_type`)."""
        data = None
        headers = {}
        if body is not None:
            data = (json.dumps(body) if isinstance(body, dict) else body).encode()
            headers["Content-Type"] = content_type
        if token:
            headers["Authorization"] = "Bearer " + (token if isinstance(token, str) else self.token)
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=data, method=method,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def want(self, status, method, path, body=None, token=True, content_type="application/json"):
        got, text = self.request(method, path, body, token, content_type)
        if got != status:
            raise SystemExit("%s %s: %d, not %d: %s\n%s" % (method, path, got, status, text, self.log_tail()))
        return json.loads(text) if text.startswith(("{", "[")) else text

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def wait_for(what, predicate, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise SystemExit("timed out waiting for " + what)


def populate(server):
    """Nodes with devices, tenants, a running job, a preemption, a suspension by hand, a waiting job."""
    for name, gpus in (("node-a", {"count": 2, "model": "A100-SXM4-80GB", "memory": "80Gi"}),
                       ("node-b", {"count": 1, "model": "T4", "memory": "16Gi"})):
        server.want(201, "POST", "/api/v1/nodes", {"name": name, "cpu": 32, "memory": "128Gi", "gpus": gpus})
    server.want(201, "POST", "/api/v1/tenants", {"name": "alice"})
    server.want(201, "POST", "/api/v1/tenants", {"name": "bob"})
    alice = server.want(201, "POST", "/api/v1/tenants/alice/tokens", {})["token"]

    def submit(token, yaml):
        return server.want(201, "POST", "/api/v1/jobs", yaml, token=token, content_type="application/yaml")["id"]

    def state(job):
        return server.want(200, "GET", "/api/v1/jobs/%d" % job)["state"]

    # Low-priority preemptible work on every device, then a high-priority job that needs a whole A100.
    low = [submit(alice, "name: low-%d\ncommand: [sleep, '600']\nresources: {gpu: 1, gpucores: 50, gpumem: %s}\n"
                         "priority: low\npreemptible: true\n" % (i, mem))
           for i, mem in enumerate(("40Gi", "40Gi", "8Gi"))]
    wait_for("the low jobs to run", lambda: all(state(j) == "running" for j in low))
    high = submit(server.token, "name: high\ncommand: [sleep, '600']\nresources: {gpu: 1, gpumem: 80Gi}\n"
                                "priority: high\n")
    wait_for("the high job to run (a preemption)", lambda: state(high) == "running")
    # A suspension by hand, and a job that waits in alice's queue (no device has 200 GiB).
    running_low = [j for j in low if state(j) == "running"]
    server.want(200, "POST", "/api/v1/jobs/%d/suspend" % running_low[0])
    submit(alice, "name: huge\ncommand: [sleep, '1']\nresources: {gpu: 1, gpumem: 200Gi}\n")
    # The victim went back to the queue and runs again beside the other A100 job: only `huge` stays queued.
    wait_for("the preempted job to run again",
             lambda: all(state(j) in ("running", "suspended") for j in low) and state(high) == "running")


def families(text):
    """{family name: type} from the # TYPE lines of an exposition."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[:2] == ["#", "TYPE"]:
            out[parts[2]] = parts[3]
    return out


def series_lines(text):
    """The sample lines of an exposition (no comments), sorted, without the series that count the scrapes."""
    return sorted(l for l in text.splitlines() if l and not l.startswith("#") and 'route="/metrics"' not in l)


def check_gzip_scrape(server, plain):
    """A scrape with Accept-Encoding: gzip is answered gzip, and reads back as the plain scrape's series (the device
    series may lag by the server's refresh: retried for a few seconds)."""
    req = urllib.request.Request("http://127.0.0.1:%d/metrics" % server.port,
                                 headers={"Accept-Encoding": "gzip, deflate"})
    deadline = time.time() + 10
    while True:
        with urllib.request.urlopen(req, timeout=20) as r:
            encoding, vary, body = r.headers.get("Content-Encoding"), r.headers.get("Vary"), r.read()
        if encoding != "gzip" or vary != "Accept-Encoding":
            print("FAIL: a gzip scrape came with Content-Encoding %r, Vary %r" % (encoding, vary))
            return None
        text = gzip.decompress(body).decode()
        if series_lines(text) == series_lines(plain) or time.time() > deadline:
            break
        time.sleep(0.2)
        plain = server.want(200, "GET", "/metrics", token=False)
    if series_lines(text) != series_lines(plain):
        print("FAIL: the gzip scrape's series differ from the plain scrape's:\n%s\n---\n%s" % (text, plain))
        return None
    print("gzip scrape: %d bytes for %d bytes of text" % (len(body), len(text)))
    return text


def check_promtool(text):
    promtool = shutil.which("promtool")
    if promtool is None:
        print("SKIP: promtool is not installed (Debian package `prometheus`, scripts/debian-packages.txt)")
        return SKIP
    expected = ["xpool_preemptions_total 1", 'xpool_suspensions_total{cause="scheduler"} 1',
                'xpool_suspensions_total{cause="user"} 1', 'xpool_queue_length{tenant="alice"} 1',
                'xpool_queue_length{tenant="bob"} 0', 'UUID="', 'device="nvidia0"']
    missing = [e for e in expected if e not in text]
    if missing:
        print("FAIL: the scrape lacks the populated state: %s\n%s" % (missing, text))
        return 1
    r = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60)
    report = (r.stdout + r.stderr).decode()
    print("promtool check metrics: exit %d, %d bytes scraped, %d families\n%s" %
          (r.returncode, len(text), len(families(text)), report))
    return 0 if r.returncode == 0 and not report.strip() else 1


# PromQL words that are not metric names: aggregations and their modifiers, operators, keywords.
PROMQL_WORDS = {
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile",
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset",
    "inf", "nan", "atan2",
}


def metric_names(expr):
    """The metric names an expression (PromQL, or a Grafana label_values() query) reads."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)  # string literals
    e = re.sub(r"\{[^}]*\}", " ", e)                                                 # label matchers
    e = re.sub(r"\[[^\]]*\]", " ", e)                                                # ranges, subqueries
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)  # label lists
    e = re.sub(r"\$\{[^}]*\}|\$\w+", " ", e)                                          # Grafana variables
    e = re.sub(r"label_values\s*\(\s*([a-zA-Z_:][\w:]*)\s*,\s*\w+\s*\)", r" \1 ", e)  # label_values(metric, label)
    names = set()
    for m in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)(\s*\()?", e):
        word, call = m.group(1), m.group(2)
        if call or word.lower() in PROMQL_WORDS or re.fullmatch(r"\d+[smhdwy]", word):
            continue
        names.add(word)
    return names


def self_test():
    """metric_names on known expressions: a wrong name must be found, and functions and labels ignored."""
    cases = {
        'histogram_quantile(0.99, sum by (le, route) (rate(xpool_api_request_duration_seconds_bucket'
        '{route=~"$route"}[$__rate_interval])))': {"xpool_api_request_duration_seconds_bucket"},
        'sum(xpool_device_memory_allocated_bytes) / sum(xpool_nope_bytes{node="a"})':
            {"xpool_device_memory_allocated_bytes", "xpool_nope_bytes"},
        "label_values(xpool_device_memory_capacity_bytes, node)": {"xpool_device_memory_capacity_bytes"},
        'sum by (cause) (increase(xpool_suspensions_total[1h])) or vector(0)': {"xpool_suspensions_total"},
    }
    for expr, want in cases.items():
        got = metric_names(expr)
        assert got == want, "metric_names(%r) = %r, not %r" % (expr, got, want)


def dashboard_queries(dashboard):
    """(where, expr) for every panel target (rows' nested panels too) and every query variable."""
    out = []

    def visit(panels):
        for p in panels:
            visit(p.get("panels", []))
            for t in p.get("targets", []):
                out.append(("panel %r" % p.get("title"), t.get("expr", "")))
    visit(dashboard.get("panels", []))
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            out.append(("variable %r" % v.get("name"), q.get("query", "") if isinstance(q, dict) else q or ""))
    return out


def check_dashboard(text, dashboard):
    self_test()
    exported = families(text)
    queries = dashboard_queries(dashboard)
    errors = []
    if len(queries) < 10:
        errors.append("only %d queries in the dashboard" % len(queries))
    for where, expr in queries:
        names = metric_names(expr)
        if not names:
            errors.append("%s: no metric in %r" % (where, expr))
        for name in sorted(names):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            if name in exported:
                continue
            if base != name and exported.get(base) == "histogram":
                continue
            errors.append("%s: %s is not exported by the server (in %r)" % (where, name, expr))
    print("%d dashboard queries, %d distinct metrics, checked against %d exported families" %
          (len(queries), len({n for _, e in queries for n in metric_names(e)}), len(exported)))
    for e in errors:
        print("FAIL: " + e)
    return 1 if errors else 0


def grafana_to_promql(expr):
    """A dashboard query as Prometheus reads it: Grafana's variables replaced with values that match all."""
    e = expr.replace("$__rate_interval", "1m").replace("$__interval", "15s").replace("$__range", "1h")
    return re.sub(r"\$\{?\w+\}?", ".*", e)


def check_prometheus(server, dashboard, tmp):
    prometheus = shutil.which("prometheus")  # main() skipped the test without it
    config = os.path.join(tmp, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n"
                "  - job_name: xpool\n    static_configs: [{targets: ['127.0.0.1:%d']}]\n" % server.port)
    log = open(os.path.join(tmp, "prometheus.log"), "wb")
    proc = subprocess.Popen([prometheus, "--config.file=" + config, "--storage.tsdb.path=" + os.path.join(tmp, "tsdb"),
                             "--web.listen-address=127.0.0.1:0"], stdout=log, stderr=subprocess.STDOUT)
    try:
        return query_prometheus(proc, os.path.join(tmp, "prometheus.log"), dashboard)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def query_prometheus(proc, log_path, dashboard):
    def log_text():
        with open(log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    port = 0

    def listening():
        nonlocal port
        m = re.search(r'msg="Listening on" address=127\.0\.0\.1:(\d+)', log_text())
        port = int(m.group(1)) if m else 0
        return port != 0 or proc.poll() is not None
    wait_for("Prometheus to listen", listening, 30)
    if proc.poll() is not None:
        print("FAIL: prometheus exited %d:\n%s" % (proc.returncode, log_text()))
        return 1

    def get(path):
        """(status, body) of a GET; (0, b"") when Prometheus does not answer."""
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except OSError:
            return 0, b""

    def query(q):
        """The API's JSON answer (a 400 carries the parse error); {} while Prometheus is not ready."""
        status, body = get("/api/v1/query?" + urllib.parse.urlencode({"query": q}))
        try:
            return json.loads(body) if status in (200, 400, 422) else {}
        except ValueError:
            return {}
    wait_for("Prometheus to be ready", lambda: get("/-/ready")[0] == 200, 30)
    def scrapes():
        r = query('count_over_time(up{job="xpool"}[1m])').get("data", {}).get("result", [])
        return bool(r) and float(r[0]["value"][1]) >= 2
    wait_for("two scrapes of the server (rate() needs two points)", scrapes, 30)
    up = query('up{job="xpool"}')["data"]["result"]
    if not up or up[0]["value"][1] != "1":
        print("FAIL: Prometheus does not see the server up: %s" % up)
        return 1
    errors = []
    for where, expr in dashboard_queries(dashboard):
        if expr.startswith("label_values("):
            expr = metric_names(expr).pop()
        r = query(grafana_to_promql(expr))
        if r.get("status") != "success":
            errors.append("%s: %r: %s" % (where, expr, r.get("error", r)))
        elif not r["data"]["result"] and "rate(" not in expr and "increase(" not in expr:
            errors.append("%s: %r returned no data" % (where, expr))
    print("Prometheus evaluated %d dashboard queries" % len(dashboard_queries(dashboard)))
    for e in errors:
        print("FAIL: " + e)
    return 1 if errors else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xpool", required=True)
    ap.add_argument("--check", required=True, choices=["promtool", "dashboard", "prometheus"])
    ap.add_argument("--dashboard", help="deploy/grafana/xpool-dashboard.json")
    args = ap.parse_args()
    dashboard = None
    if args.check != "promtool":
        with open(args.dashboard) as f:
            dashboard = json.load(f)
    if args.check == "prometheus" and shutil.which("prometheus") is None:
        print("SKIP: prometheus is not installed (Debian package `prometheus`, scripts/debian-packages.txt)")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="xpool_metrics_")
    server = Server(args.xpool, tmp)
    try:
        populate(server)
        text = server.want(200, "GET", "/metrics", token=False)
        if args.check == "promtool":
            rc = check_promtool(text)
            unzipped = check_gzip_scrape(server, text)
            rc = 1 if unzipped is None else max(rc, check_promtool(unzipped))
        elif args.check == "dashboard":
            rc = check_dashboard(text, dashboard)
        else:
            rc = check_prometheus(server, dashboard, tmp)
    finally:
        server.stop()
    log = server.log_text()
    for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
        if marker in log:
            print("FAIL: the server's log has %r:\n%s" % (marker, log))
            rc = 1
    if rc != 1:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print("kept " + tmp)
    return rc


if __name__ == "__main__":
    sys.exit(main())
