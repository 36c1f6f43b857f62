"""The REST campaign's fixed probes, as ProbeSteps (a part of rest_campaign.Campaign, on CampaignClient): the route
table against openapi.json, cross-tenant (tenant B on tenant A's jobs), auth (missing, bad and wrong-kind tokens),
cross-node (node n2 acting as n1) and static files (traversal around Studio's bundle)."""
import base64
import os
import re
import time

from campaign_client import (ADMIN, MISSING_JOB, NODE, NODE_1, NODE_2, PUBLIC, ROUTES, SIM_NODE, TENANT, TENANT_A,
                             TENANT_B, NoAnswer, b, build_head, exchange, studio_handles)


class ProbeSteps:
    # -- the route table
    def check_routes(self):
        self.cat = self.cats["routes"]
        reply = self.want(200, "GET", "/api/v1/openapi.json")
        doc = reply.json() or {}
        served = set()
        for path, ops in (doc.get("paths") or {}).items():
            for method, op in ops.items():
                served.add((method.upper(), path))
        known = {(m, p) for m, p, _ in ROUTES}
        self.expect(served == known, "route table differs from openapi.json: only served %s; only here %s" %
                    (sorted(served - known), sorted(known - served)))
        for method, path, access in ROUTES:
            op = ((doc.get("paths") or {}).get(path) or {}).get(method.lower()) or {}
            responses = op.get("responses") or {}
            if access == ADMIN:
                self.expect("403" in responses, "openapi: %s %s is admin-only but lists no 403" % (method, path))
            if access == PUBLIC:
                self.expect("security" not in op, "openapi: %s %s is public but asks for a token" % (method, path))

    # -- cross-tenant
    def cross_tenant(self):
        self.cat = self.cats["cross-tenant"]
        gpu_spec = lambda name, gpus: {"name": name, "resources": {"gpu": gpus, "gpucores": 100, "memory": 512},
                                       "command": ["sleep", "3600"]}
        # A simulated node with two GPUs (its jobs run at once and can be suspended at once); cordoned once A's jobs
        # are where the probe wants them: running, suspended, queued (needs 4 GPUs), cancelled.
        self.want(201, "POST", "/api/v1/nodes", "admin", {"name": SIM_NODE, "cpu": 8, "memory": "64Gi", "gpus": {
            "count": 2, "model": "A100-SXM4-80GB", "memory": "80Gi", "vendor": "nvidia"}}, what="simulated node")
        running = self.submit("a", gpu_spec("a-running", 1))
        suspended = self.submit("a", gpu_spec("a-suspended", 1))
        queued = self.submit("a", gpu_spec("a-queued", 4))
        cancelled = self.submit("a", gpu_spec("a-cancelled", 4))
        b_job = self.submit("b", gpu_spec("b-own", 4))
        if None in (running, suspended, queued, cancelled, b_job):
            self.fail("could not submit the probe jobs")
            return
        self.wait_state(running, ("running",))
        self.wait_state(suspended, ("running",))
        self.want(200, "POST", "/api/v1/jobs/%d/suspend" % suspended, "a")
        self.wait_state(suspended, ("suspended",))
        self.want(200, "POST", "/api/v1/jobs/%d/cancel" % cancelled, "a")
        self.want(200, "POST", "/api/v1/nodes/%s/cordon" % SIM_NODE, "admin")
        self.a_jobs = [running, suspended, queued, cancelled]
        for j in self.a_jobs:  # the owner reaches every read route: B's 404 below is not a broken route
            for suffix in ("", "/events", "/logs"):
                self.want(200, "GET", "/api/v1/jobs/%d%s" % (j, suffix), "a", what="owner")
        before = {j: self.snapshot(j) for j in self.a_jobs}
        states = [before[j][0].get("state") for j in self.a_jobs]
        self.expect(states == ["running", "suspended", "queued", "cancelled"], "A's probe jobs are %s" % states)
        routes = [("GET", ""), ("GET", "/events"), ("GET", "/logs"), ("GET", "/logs?replica=0&offset=0&limit=10"),
                  ("DELETE", ""), ("POST", "/cancel"), ("POST", "/suspend"), ("POST", "/resume")]
        # The same id written other ways the server reads as that id: leading zeros, percent-encoded, doubled
        # slashes (a GET of "//api/..." is Studio's, not the API's: it must then be index.html for both ids).
        spellings = lambda j: ["%d" % j, "000%d" % j, "".join("%%%02X" % ord(c) for c in str(j))]
        index = open(os.path.join(self.web_dir, "index.html"), "rb").read()
        for j in self.a_jobs:
            for method, suffix in routes:
                for spelled in spellings(j):
                    for prefix in ("/api/v1/jobs/", "//api//v1/jobs//"):
                        path = prefix + spelled + suffix
                        studio = studio_handles(b(method), b(path))
                        got = self.want(200 if studio else 404, method, path, "b", what="B on A's job")
                        missing = self.call(method, prefix + str(MISSING_JOB) + suffix, "b")
                        if studio:
                            same = got.body == index and missing.body == index
                        else:
                            same = error_message(got, "job ID not found") == error_message(missing, "job ID not found")
                        self.expect(same and got.status == missing.status,
                                    "B's answer for A's job at %s differs from a missing job's: %d %r vs %d %r" %
                                    (path, got.status, got.body[:200], missing.status, missing.body[:200]))
            # PATCH (priority) is admin-only: 403 for any id, A's or missing, so it tells nothing either.
            self.want(403, "PATCH", "/api/v1/jobs/%d" % j, "b", {"priority": 99}, what="B patches A's job")
            self.want(403, "PATCH", "/api/v1/jobs/%d" % MISSING_JOB, "b", {"priority": 99})
            self.want(403, "PATCH", "/api/v1/jobs/%d" % j, "a", {"priority": 99}, what="a tenant patches")
        for j in self.a_jobs:
            after = self.snapshot(j)
            self.expect(after == before[j], "A's job %d changed under B's requests: %r -> %r" % (j, before[j], after))
        # Listing, tenants and submitting as someone else.
        listed = self.want(200, "GET", "/api/v1/jobs?limit=1000", "b")
        ids = [x.get("id") for x in (listed.json() or {}).get("jobs", [])]
        self.expect(ids == [b_job], "B's job list is %r, want only its own job %d" % (ids, b_job))
        for query in ("tenant=%s" % TENANT_A, "tenant=admin", "tenant=%s&state=running,suspended" % TENANT_A):
            listed = self.want(200, "GET", "/api/v1/jobs?" + query, "b")
            self.expect((listed.json() or {}).get("jobs") == [], "B listing ?%s sees %r" % (query, listed.body[:200]))
        self.want(404, "GET", "/api/v1/tenants/%s" % TENANT_A, "b", what="B reads A's tenant")
        self.want(404, "GET", "/api/v1/tenants/admin", "b", what="B reads the admin tenant")
        self.want(200, "GET", "/api/v1/tenants/%s" % TENANT_B, "b", what="B reads its own tenant")
        who = self.want(200, "GET", "/api/v1/whoami", "b")
        self.expect((who.json() or {}).get("name") == TENANT_B, "whoami for B says %r" % who.body[:200])
        spec = gpu_spec("b-as-a", 4)
        spec["tenant"] = TENANT_A
        reply = self.want(403, "POST", "/api/v1/jobs", "b", spec, what="B submits as A")
        self.record_job(reply, "b")
        reply = self.want(403, "POST", "/api/v1/jobs", "b",
                          "name: b-as-a\ntenant: %s\nresources: {cpu: 1}\ncommand: [true]\n" % TENANT_A)
        self.record_job(reply, "b")
        # Validating as A is refused the same way (a verdict, nothing stored), at the `tenant:` line.
        reply = self.want(200, "POST", "/api/v1/jobs:validate", "b",
                          "name: b-as-a\ntenant: %s\nresources: {cpu: 1}\ncommand: [true]\n" % TENANT_A)
        verdict = reply.json() or {}
        self.expect(verdict.get("valid") is False and (verdict.get("error") or {}).get("code") == "PERMISSION_DENIED"
                    and (verdict.get("error") or {}).get("line") == 2, "B validating as A: %r" % reply.body[:200])

    # -- tokens: none, bad, a node's, a tenant's on admin routes
    def auth(self):
        self.cat = self.cats["auth"]
        j = self.a_jobs[0] if getattr(self, "a_jobs", None) else 1
        bodies = {
            "/api/v1/jobs": {"name": "auth-probe", "resources": {"cpu": 1}, "command": ["true"]},
            "/api/v1/jobs:validate": {"name": "auth-probe", "resources": {"cpu": 1}, "command": ["true"]},
            "/api/v1/nodes": {"name": NODE_1, "cpu": 2},
            "/api/v1/tenants": {"name": "auth-probe"},
            "/api/v1/tenants/{name}": {"quota": {"devices": 1}},
            "/api/v1/jobs/{id}": {"priority": 1},
            "/api/v1/nodes/{name}/heartbeat": {"tasks": []},
        }
        admin_before = self.call("GET", "/api/v1/tenants", "admin").body
        job_before = self.snapshot(j)
        for method, pattern, access in ROUTES:
            if access == PUBLIC:
                self.want(200, method, pattern, what="public route without a token")
                continue
            name = NODE_1 if "/nodes/" in pattern else TENANT_A
            path = pattern.replace("{id}", str(j)).replace("{name}", name)
            body = bodies.get(pattern, {} if method in ("POST", "PATCH") else None)
            bad_tokens = ["", "not-a-token", self.tokens["admin"] + "x", self.tokens["admin"][:-1],
                          "xpn.%s.forged" % NODE_1, self.tokens["a"][::-1], "a" * 600]
            self.want(401, method, path, None, body, what="no token")
            for token in bad_tokens:
                self.want(401, method, path, None, body, raw_token=token, what="bad token")
            self.want(401, method, path, None, body, raw_token="Basic " + base64.b64encode(b"admin:x").decode())
            if access in (TENANT, ADMIN):
                self.want(403, method, path, "n1", body, what="node token on a %s route" % access)
            if access in (ADMIN, NODE):
                self.want(403, method, path, "a", body, what="tenant token on an %s route" % access)
                self.want(403, method, path, "b", body, what="tenant token on an %s route" % access)
        self.expect(self.call("GET", "/api/v1/tenants", "admin").body == admin_before,
                    "refused requests changed the tenants")
        self.expect(self.snapshot(j) == job_before, "refused requests changed job %d" % j)
        # The token parser takes the scheme in any case and trims spaces (server/auth.cc): still A, never more.
        for header in ("bearer " + self.tokens["a"], "BEARER   " + self.tokens["a"] + "  "):
            head = build_head(b"GET", b"/api/v1/whoami", [(b"Host", b"x"), (b"Authorization", b(header))])
            self.cat.requests += 1
            try:
                reply = exchange(self.port, head)
                self.expect(reply.status == 200 and (reply.json() or {}).get("name") == TENANT_A,
                            "Authorization %r: want A's whoami" % header.split()[0], reply)
            except NoAnswer as e:
                self.fail("whoami: %s" % e)

    # -- cross-node
    def cross_node(self):
        self.cat = self.cats["cross-node"]
        self.want(201, "POST", "/api/v1/nodes", "n1", {"name": NODE_1, "cpu": 4, "memory": "8Gi"}, what="n1 registers")
        self.want(403, "POST", "/api/v1/nodes", "n2", {"name": NODE_1, "cpu": 64, "memory": "512Gi"},
                  what="n2 registers as n1")
        node = self.want(200, "GET", "/api/v1/nodes/%s" % NODE_1, "admin").json() or {}
        self.expect(node.get("cpu_milli") == 4000 and node.get("name") == NODE_1,
                    "n2's refused registration changed n1: %r" % node)
        job = self.submit("a", {"name": "on-n1", "resources": {"cpu": 1, "memory": 256}, "command": ["sleep", "600"]})
        if job is None:
            return
        task_id = "job%d-r0" % job
        placed = None
        deadline = time.time() + 20
        while time.time() < deadline:
            got = self.call("GET", "/api/v1/jobs/%d" % job, "admin", count=False).json() or {}
            tasks = got.get("tasks") or []
            if got.get("state") != "queued" and tasks and tasks[0].get("node") == NODE_1:
                placed = got
                break
            time.sleep(0.2)
        if not self.expect(placed is not None, "job %d was not placed on %s within 20 s" % (job, NODE_1)):
            return
        beat = self.want(200, "POST", "/api/v1/nodes/%s/heartbeat" % NODE_1, "n1", {"tasks": []}, what="n1 beats")
        assigned = [t.get("task_id") for t in (beat.json() or {}).get("tasks", [])]
        self.expect(task_id in assigned, "n1's heartbeat reply %r does not assign %s" % (assigned, task_id))
        self.want(201, "POST", "/api/v1/nodes", "n2", {"name": NODE_2, "cpu": 1, "memory": "1Gi"}, what="n2 registers")
        before = self.snapshot(job)
        foreign_before = metric_value(self.call("GET", "/metrics").body, "xpool_agent_foreign_reports_total")
        forged = {"task_id": task_id, "job_id": job, "replica": 0, "restart_count": placed.get("restart_count", 0),
                  "state": "failed", "exit_code": 1, "ended_at": 1, "log": {"offset": 0, "data": "FORGED-BY-N2\n"},
                  "log_end": 13}
        for body in ({"tasks": [forged]}, {"tasks": []}, {}, b""):
            self.want(403, "POST", "/api/v1/nodes/%s/heartbeat" % NODE_1, "n2", body, what="n2 beats as n1")
        self.want(403, "POST", "/api/v1/nodes/%s/heartbeat" % NODE_2, "n1", {"tasks": []}, what="n1 beats as n2")
        reply = self.want(200, "POST", "/api/v1/nodes/%s/heartbeat" % NODE_2, "n2", {"tasks": [forged]},
                          what="n2 reports n1's task")
        mine = [t.get("task_id") for t in (reply.json() or {}).get("tasks", [])]
        self.expect(task_id not in mine, "n2 was handed n1's task %s" % task_id, reply)
        self.expect(self.snapshot(job) == before, "n2's forged report changed job %d" % job)
        foreign_after = metric_value(self.call("GET", "/metrics").body, "xpool_agent_foreign_reports_total")
        self.expect(foreign_after is not None and foreign_after >= (foreign_before or 0) + 1,
                    "xpool_agent_foreign_reports_total did not count the forged report (%r -> %r)" %
                    (foreign_before, foreign_after))
        logs = self.want(200, "GET", "/api/v1/jobs/%d/logs" % job, "a")
        self.expect(b"FORGED" not in logs.body, "n2's forged log reached job %d's log" % job, logs)
        for method, path in (("POST", "/api/v1/nodes/%s/cordon" % NODE_1),
                             ("POST", "/api/v1/nodes/%s/uncordon" % NODE_1),
                             ("POST", "/api/v1/nodes/%s/tokens" % NODE_1), ("GET", "/api/v1/jobs/%d" % job),
                             ("GET", "/api/v1/nodes"), ("POST", "/api/v1/tenants/%s/tokens" % TENANT_A)):
            self.want(403, method, path, "n2", {} if method == "POST" else None, what="n2 on a route not its own")
        # A node token names its node inside the authenticated text: n2's secret under n1's name is no token.
        secret = self.tokens["n2"].rsplit(".", 1)[1]
        self.want(401, "POST", "/api/v1/nodes/%s/heartbeat" % NODE_1, None, {"tasks": []},
                  raw_token="xpn.%s.%s" % (NODE_1, secret), what="n2's secret under n1's name")
        node = self.want(200, "GET", "/api/v1/nodes/%s" % NODE_1, "admin").json() or {}
        self.expect(not node.get("cordoned"), "n1 was cordoned by n2's refused request: %r" % node)

    # -- static files
    def static(self):
        self.cat = self.cats["static"]
        secrets = self.secrets() + [b"HIDDEN-BUNDLE-SECRET", b"SQLite format 3"]
        try:
            with open("/etc/passwd", "rb") as f:
                secrets.append(f.read().split(b"\n", 1)[0])
        except OSError:
            pass
        state = b(self.state_dir)
        index = open(os.path.join(self.web_dir, "index.html"), "rb").read()
        app = open(os.path.join(self.web_dir, "assets", "app.js"), "rb").read()
        # Positive controls: the bundle is served, so a 404 below is the allow-list and not a broken Studio.
        for target, want in ((b"/", index), (b"/jobs/1", index), (b"/assets/app.js", app)):
            reply = self.raw_get(target)
            self.expect(reply is not None and reply.status == 200 and reply.body == want,
                        "Studio control %r: want its file" % target, reply)
        targets = [
            b"//etc/passwd", b"/" + state + b"/admin.token", b"//" + state.lstrip(b"/") + b"/admin.token",
            b"/" + state + b"/xpool.db", b"/%2Fetc%2Fpasswd", b"/%2f" + state.lstrip(b"/").replace(b"/", b"%2f") +
            b"%2fadmin.token", b"/..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd", b"/../../../../../etc/passwd",
            b"/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd", b"/%252e%252e/%252e%252e/etc/passwd",
            b"/assets/../../../../etc/passwd", b"/assets/..%2f..%2f..%2f..%2fetc%2fpasswd", b"/leak.txt",
            b"/leak", b"/passwd", b"/etc/passwd", b"/linked/passwd", b"/.secret.txt", b"/%2esecret.txt",
            b"/assets/%2e%2e/.secret.txt", b"/assets/../.secret.txt", b"/..%5c..%5c..%5cetc%5cpasswd",
            b"/%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd", b"/index.html%00.txt", b"/etc/passwd%00",
            b"/proc/self/environ", b"//proc/self/environ", b"/proc/self/cmdline", b"/static/..;/..;/etc/passwd",
            b"http://127.0.0.1/../../../etc/passwd", b"http://127.0.0.1//etc/passwd",
            b"/" + b"../" * 40 + b"etc/passwd",
            b"/" + state + b"/admin.token%00", b"/state/admin.token", b"/admin.token", b"/xpool.db",
            b"/%2E%2E%2F%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", b"/assets/%2e%2e%2f%2e%2e%2fstate%2fadmin.token",
        ]
        for target in targets:
            for method in (b"GET", b"HEAD"):
                reply = self.raw_get(target, method)
                if reply is None:
                    continue
                if any(s and s in reply.body for s in secrets):
                    self.fail("%s %r returned a secret file's content" % (method.decode(), target), reply)
                elif reply.status == 200:
                    same = reply.header("content-length") == str(len(index)) if method == b"HEAD" else \
                        reply.body == index
                    self.expect(same, "%s %r: 200 with something other than index.html" % (method.decode(), target),
                                reply)
                else:
                    self.expect(reply.status == 404,
                                "%s %r: want 404 or index.html, got %d" % (method.decode(), target, reply.status),
                                reply)


# -- reading answers

def metric_value(text, name):
    for line in text.decode("utf-8", "replace").splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{}"):
            try:
                return float(line.rsplit(" ", 1)[1])
            except ValueError:
                return None
    return None


def error_message(reply, id_as=None):
    """The error message of an answer; with id_as, "job N not found" written with the id replaced."""
    body = reply.json()
    message = body.get("error", {}).get("message", "") if isinstance(body, dict) else ""
    if not isinstance(message, str):
        return ""
    return re.sub(r"job \S+ not found", id_as, message) if id_as else message
