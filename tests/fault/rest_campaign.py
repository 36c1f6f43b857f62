#!/usr/bin/env python3
"""A seeded fault and abuse campaign against a real `xpool server` on loopback (docs/security.md is the threat model
it probes). It starts the server with a throwaway state dir and Studio bundle, creates two tenants and two node
tokens, then runs, in order:
  routes        the route table (campaign_client.py) agrees with GET /api/v1/openapi.json (add new routes there)
  cross-tenant  tenant B on every job route for tenant A's jobs: 404 exactly like a missing job, nothing changes
  auth          no/bad token 401; a node token on tenant and admin routes 403; a tenant token on admin routes 403
  cross-node    node n2 registering or heartbeating as n1 403; n2 reporting n1's task: refused, nothing changes
  static        traversal paths for Studio's files never return a file outside the bundle
  fuzz          N seeded random requests over every route: mutated paths, queries, headers, tokens and bodies
                (job specs as YAML and JSON, node, tenant and heartbeat bodies), and malformed HTTP. No 5xx
                (but the transport's documented 501 and 505 for the framing and version that call for them),
                the server stays up, every error is {"error": {"code", "message"}} with the code of its status,
                no answer holds a token, a tenant's answers hold only its own jobs
  accounting    the jobs the campaign got 201 for are exactly the jobs the server lists (lost / leaked)
  liveness      /healthz, /readyz after it all; no 5xx in /metrics; no sanitizer report; a clean exit on SIGTERM
Usage: rest_campaign.py --xpool BUILD/bin/xpool [--seed 42] [--requests 1500] [--workers 1] [--keep] [--verbose]
With one worker a seed replays: the fuzzer sends the same requests in the same order (the probes differ only in
how often they poll and in the throwaway paths). More workers share the requests as concurrent clients (load).
Prints one line per category (requests, failures), the fuzzer's answers by status, a `summary` line for
scripts/soak.sh, and `N passed, M failed`; exits 1 on any failure. ctest runs it short
(fault_rest_campaign_test); scripts/soak.sh runs it long.
The parts, run by path (not as a package), each beside this entry point: campaign_client.py (HTTP plumbing, state,
setup), campaign_probes.py (the fixed probes), campaign_fuzz.py (the fuzzer and the accounting) and
campaign_mutate.py (the fuzzer's body mutations); this file starts and stops the server, runs the categories in
order and prints the table."""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling modules below

from campaign_client import CampaignClient, NoAnswer, build_head, exchange  # noqa: E402
from campaign_fuzz import FuzzSteps  # noqa: E402
from campaign_probes import ProbeSteps  # noqa: E402


class Campaign(ProbeSteps, FuzzSteps, CampaignClient):
    """The whole campaign: CampaignClient's state and requests, the probes, the fuzzer and the accounting, and here
    the server it runs against."""

    # -- the server
    def start_server(self, tmp):
        self.state_dir = os.path.join(tmp, "state")
        self.web_dir = os.path.join(tmp, "web")
        os.makedirs(self.state_dir)
        make_bundle(self.web_dir, self.state_dir)
        self.log_path = os.path.join(tmp, "server.log")
        log = open(self.log_path, "wb")
        cmd = [self.args.xpool, "server", "--listen", "127.0.0.1:0", "--state-dir", self.state_dir,
               "--agent-listen", "off", "--web-dir", self.web_dir]
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit("xpool server exited %d at start:\n%s" % (self.proc.returncode, self.log_tail()))
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.log_text())
            if m and self.port == 0:
                self.port = int(m.group(1))
            if self.port:
                try:
                    if exchange(self.port, build_head(b"GET", b"/healthz", [(b"Host", b"x")]), timeout=2).status == 200:
                        break
                except NoAnswer:
                    pass
            time.sleep(0.1)
        else:
            raise SystemExit("xpool server did not answer /healthz within 60 s:\n" + self.log_tail())
        token_path = os.path.join(self.state_dir, "admin.token")
        with open(token_path) as f:
            self.tokens["admin"] = f.read().strip()
        self.tenant_of["admin"] = "admin"

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def log_tail(self, lines=40):
        return "\n".join(self.log_text().splitlines()[-lines:])

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    # -- liveness and shutdown
    def liveness(self):
        self.cat = self.cats["liveness"]
        if not self.alive():
            self.fail("the server is not running (exit %s):\n%s" % (self.proc.returncode, self.log_tail()))
            return
        self.want(200, "GET", "/healthz")
        self.want(200, "GET", "/readyz")
        metrics = self.want(200, "GET", "/metrics").body.decode("utf-8", "replace")
        bad = [line for line in metrics.splitlines()
               if line.startswith("xpool_api_requests_total") and re.search(r'code="5\d\d"', line)]
        self.expect(not bad, "the server counted 5xx answers: %s" % bad[:5])

    def stop(self):
        self.cat = self.cats["liveness"]
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.fail("the server did not stop within 60 s of SIGTERM")
                self.proc.kill()
                self.proc.wait()
        log = self.log_text()
        self.expect(self.proc.returncode == 0, "the server exited %d on SIGTERM:\n%s" %
                    (self.proc.returncode, self.log_tail()))
        for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:", "-> 5"):
            if marker in log:
                at = log.index(marker)
                self.fail("the server's log has %r:\n%s" % (marker, log[max(0, at - 400): at + 1600]))


def make_bundle(web_dir, state_dir):
    """A tiny Studio bundle, with traps: a symlink to the admin token and one to /etc/passwd, a hidden file, a
    symlinked directory. None of them may ever be served."""
    os.makedirs(os.path.join(web_dir, "assets"))
    with open(os.path.join(web_dir, "index.html"), "w") as f:
        f.write("<!doctype html><title>campaign</title><p>campaign index</p>\n")
    with open(os.path.join(web_dir, "assets", "app.js"), "w") as f:
        f.write("console.log('campaign bundle');\n")
    with open(os.path.join(web_dir, ".secret.txt"), "w") as f:
        f.write("HIDDEN-BUNDLE-SECRET\n")
    os.symlink(os.path.join(state_dir, "admin.token"), os.path.join(web_dir, "leak.txt"))
    os.symlink(os.path.join(state_dir, "admin.token"), os.path.join(web_dir, "leak"))
    os.symlink("/etc/passwd", os.path.join(web_dir, "passwd"))
    os.symlink("/etc", os.path.join(web_dir, "linked"))


# ----------------------------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description="Seeded fault and abuse campaign against xpool server (loopback).")
    parser.add_argument("--xpool", required=True, help="the xpool binary")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--requests", type=int, default=1500, help="fuzzer requests")
    parser.add_argument("--workers", type=int, default=1,
                        help="fuzzer threads sharing the requests (load); one worker replays a seed exactly")
    parser.add_argument("--keep", action="store_true", help="keep the state dir and server log")
    parser.add_argument("--verbose", action="store_true", help="print every failure as it happens")
    args = parser.parse_args()
    if not os.access(args.xpool, os.X_OK):
        print("xpool binary not found: %s" % args.xpool)
        return 2
    print("seed %d, %d fuzz requests, %d worker(s), %s" % (args.seed, args.requests, args.workers, args.xpool),
          flush=True)
    sys.setrecursionlimit(20000)  # bodies nest ~200 levels, a few more through the mutations, each a few frames
    started = time.time()
    tmp = tempfile.mkdtemp(prefix="xpool_rest_campaign_")
    campaign = Campaign(args)
    try:
        campaign.start_server(tmp)
        campaign.setup()
        for step in (campaign.check_routes, campaign.cross_tenant, campaign.auth, campaign.cross_node, campaign.static,
                     campaign.fuzz, campaign.accounting):
            if not campaign.alive():
                break
            try:
                step()
            except Exception:  # a bug in this script: counted against the step, never a silent pass
                campaign.fail("the campaign itself failed:\n" + traceback.format_exc())
        campaign.liveness()
    finally:
        campaign.stop()
    print()
    print("%-14s %9s %9s" % ("category", "requests", "failures"))
    passed = failed = 0
    for name in Campaign.CATEGORIES:
        cat = campaign.cats[name]
        print("%-14s %9d %9d" % (name, cat.requests, len(cat.failures)))
        if cat.failures:
            failed += 1
        else:
            passed += 1
    for name in Campaign.CATEGORIES:
        for text in campaign.cats[name].failures[3:20] if not args.verbose else []:
            print("FAIL [%s] %s" % (name, text))
        more = len(campaign.cats[name].failures) - 20
        if more > 0 and not args.verbose:
            print("FAIL [%s] ... and %d more" % (name, more))
    print("fuzz answers: " + " ".join("%d:%d" % kv for kv in sorted(campaign.fuzz_statuses.items())))
    print("summary seed=%d requests=%d workers=%d bad_inputs=%d 5xx=%d accepted=%d lost=%d leaked=%d seconds=%.1f" %
          (args.seed, args.requests, args.workers, campaign.bad_inputs, campaign.five_xx, len(campaign.accepted),
           campaign.lost, campaign.leaked, time.time() - started))
    print("%d passed, %d failed" % (passed, failed))
    if args.keep or failed:
        print("state dir and server log kept in %s" % tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
