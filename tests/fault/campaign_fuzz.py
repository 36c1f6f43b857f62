"""The REST campaign's fuzzer and accounting, as FuzzSteps (a part of rest_campaign.Campaign, on CampaignClient):
the workers that send the seeded requests and judge each answer, the lost/leaked accounting of accepted jobs, and
RequestGenerator, which builds every request (route, path, query, token, body, malformed framing) from one seeded
Random. Body and text mutations are in campaign_mutate."""
import json
import os
import random
import threading

from campaign_client import (ADMIN, MISSING_JOB, NODE, NODE_1, NODE_2, PUBLIC, ROUTES, TENANT, TENANT_A, TENANT_B,
                             NoAnswer, b, build_head, error_shape_problem, exchange, studio_handles)
from campaign_mutate import chunked, mutate_text, mutate_value, pct, to_yaml


class FuzzSteps:
    # -- the fuzzer
    def fuzz(self):
        """--workers threads share --requests; worker 0 draws from Random(seed), so one worker replays exactly."""
        self.cat = self.cats["fuzz"]
        workers = max(1, self.args.workers)
        total = self.args.requests
        shares = [total // workers + (1 if w < total % workers else 0) for w in range(workers)]
        rngs = [random.Random(self.args.seed)]
        rngs += [random.Random("%d/%d" % (self.args.seed, w)) for w in range(1, workers)]
        if workers == 1:
            self.fuzz_worker(0, rngs[0], shares[0])
            return
        threads = [threading.Thread(target=self.fuzz_worker, args=(w, rngs[w], shares[w])) for w in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def fuzz_worker(self, worker, rng, count):
        gen = RequestGenerator(rng, self)
        secrets = self.secrets()
        for n in range(count):
            if self.server_dead:
                return
            i = "%d.%d" % (worker, n) if self.args.workers > 1 else str(n)
            req = gen.next()
            with self.lock:
                self.cat.requests += 1
                self.bad_inputs += 1 if req.bad else 0
            try:
                reply = exchange(self.port, req.head, req.body, head_request=req.method == b"HEAD",
                                 wait_for_continue=req.wait_for_continue)
            except NoAnswer as e:
                reply = None
                if self.alive():
                    self.fail("request %s: %s" % (i, e), request=req.as_tuple())
            if not self.alive():
                if not self.server_dead:
                    self.server_dead = True
                    self.fail("request %s: the server died (exit %s)" % (i, self.proc.returncode), reply,
                              req.as_tuple())
                    print(self.log_tail(), flush=True)
                return
            if reply is None:
                continue
            with self.lock:
                self.fuzz_statuses[reply.status] = self.fuzz_statuses.get(reply.status, 0) + 1
            self.judge(i, req, reply, secrets)

    def judge(self, i, req, reply, secrets):
        where = "request %s" % i
        if reply.status >= 500:
            if req.allowed_5xx != reply.status:
                with self.lock:
                    self.five_xx += 1
                self.fail("%s: %d" % (where, reply.status), reply, req.as_tuple())
                return
        if any(s in reply.body for s in secrets):
            self.fail("%s: the answer holds an existing token" % where, reply, req.as_tuple())
        if req.method == b"HEAD":
            return
        studio = studio_handles(req.method, req.target) and not req.malformed
        if reply.status >= 300:
            if studio and reply.status == 404 and reply.body == b"not found\n":
                return
            problem = error_shape_problem(reply)
            if problem:
                self.fail("%s: %s" % (where, problem), reply, req.as_tuple())
            return
        if studio:
            self.expect(reply.body in self.bundle_files(), "%s: Studio answered 200 with a file not in the bundle" %
                        where, reply, req.as_tuple())
            return
        ctype = reply.header("content-type")
        if ctype.startswith("application/json"):
            body = reply.json()
            if body is None:
                self.fail("%s: a %d answer that is not UTF-8 JSON" % (where, reply.status), reply, req.as_tuple())
                return
            self.record_job(reply, req.who)
            tenant = self.tenant_of.get(req.who) if req.who in ("a", "b") else None
            if tenant:
                self.check_scope(where, tenant, body, reply, req)

    def check_scope(self, where, tenant, body, reply, req):
        if not isinstance(body, dict):
            return
        jobs = body.get("jobs") if isinstance(body.get("jobs"), list) else []
        if "spec" in body and "tenant" in body:
            jobs = jobs + [body]
        for job in jobs:
            if isinstance(job, dict) and set(job) <= {"id", "state", "error"}:
                continue  # a batch submit's acknowledgement of the caller's own job, not a job shown
            if isinstance(job, dict) and job.get("tenant") != tenant:
                self.fail("%s: tenant %s was shown job %r of tenant %r" % (where, tenant, job.get("id"),
                                                                           job.get("tenant")), reply, req.as_tuple())
        if "tenants" in body:
            # The tenant list is the admin's; a tenant's own entry (its usage, GET /api/v1/usage) is not a leak.
            entries = body["tenants"] if isinstance(body["tenants"], list) else [body["tenants"]]
            others = [t for t in entries
                      if not (isinstance(t, dict) and tenant in (t.get("tenant"), t.get("name")))]
            if others:
                self.fail("%s: tenant %s was shown other tenants' entries %r" % (where, tenant, others[:3]), reply,
                          req.as_tuple())
        if body.get("name") not in (None, tenant) and "quota" in body and "admin" in body:
            self.fail("%s: tenant %s was shown tenant %r" % (where, tenant, body.get("name")), reply, req.as_tuple())

    def bundle_files(self):
        out = []
        for root, _, files in os.walk(self.web_dir):
            for name in files:
                path = os.path.join(root, name)
                if not os.path.islink(path):
                    with open(path, "rb") as f:
                        out.append(f.read())
        return out

    # -- accounting
    def list_all(self, who):
        ids, cursor, pages = [], None, 0
        while pages < 10000:
            path = "/api/v1/jobs?limit=50" + ("&cursor=%s" % cursor if cursor is not None else "")
            reply = self.want(200, "GET", path, who, what="list jobs")
            body = reply.json() or {}
            jobs = body.get("jobs") or []
            ids += [(j.get("id"), j.get("tenant")) for j in jobs]
            pages += 1
            if "next_cursor" not in body:
                return ids
            cursor = body["next_cursor"]
        self.fail("listing jobs as %s did not end" % who)
        return ids

    def accounting(self):
        self.cat = self.cats["accounting"]
        listed = self.list_all("admin")
        ids = [i for i, _ in listed]
        self.expect(len(ids) == len(set(ids)), "the admin listing repeats ids: %d rows, %d ids" %
                    (len(ids), len(set(ids))))
        tenant_of = dict(listed)
        lost = sorted(set(self.accepted) - set(ids))
        leaked = sorted(set(ids) - set(self.accepted))
        self.lost, self.leaked = len(lost), len(leaked)
        self.expect(not lost, "lost: %d job(s) answered 201 but not listed: %s" % (len(lost), lost[:20]))
        self.expect(not leaked, "leaked: %d job(s) listed that no 201 announced: %s" % (len(leaked), leaked[:20]))
        for job, tenant in self.accepted.items():
            if tenant and job in tenant_of:
                self.expect(tenant_of[job] == tenant, "job %d was submitted by %s but belongs to %s" %
                            (job, tenant, tenant_of[job]))
        for who in ("a", "b"):
            tenant = self.tenant_of[who]
            own = self.list_all(who)
            wrong = [i for i, t in own if t != tenant]
            self.expect(not wrong, "tenant %s lists jobs of other tenants: %s" % (tenant, wrong[:20]))
            theirs = {j for j, t in tenant_of.items() if t == tenant}
            seen = {i for i, _ in own}
            self.expect(seen == theirs, "tenant %s lists %d jobs, the admin %d of its jobs (missing %s, extra %s)" %
                        (tenant, len(seen), len(theirs), sorted(theirs - seen)[:10], sorted(seen - theirs)[:10]))


# ----------------------------------------------------------------------------------------------------------------
# The request generator: every choice comes from one seeded Random.


class FuzzRequest:
    def __init__(self):
        self.method = b"GET"
        self.target = b"/"
        self.headers = []
        self.body = b""
        self.version = b"HTTP/1.1"
        self.who = None
        self.bad = False
        self.malformed = False  # the transport refuses it before any route sees it
        self.allowed_5xx = None
        self.wait_for_continue = False
        self.head = b""
        self.raw_head = None

    def as_tuple(self):
        return (self.method, self.target, self.headers, self.body)


METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "PROPFIND", "get", "Post", "X"]
QUERY_KEYS = {
    "/api/v1/jobs": ["tenant", "state", "limit", "after"],
    "/api/v1/jobs/{id}/logs": ["replica", "offset", "limit"],
    "/api/v1/usage/history": ["since_us"],
    "/api/v1/usage": ["tenant", "since", "by"],
    "/api/v1/nodes": ["agent"],
}
QUERY_VALUES = ["", "0", "1", "2", "-1", "10", "1000", "100000", "100001", "99999999999999999", "999999999999999999999",
                "1e3", "0x10", "abc", "%00", "%ff", "%", "+", "queued", "running,queued", "queued,,running", "QUEUED",
                "suspended,cancelled,failed,succeeded,scheduled,suspending", "7d", "90m", "366d", "job", TENANT_A, TENANT_B, "admin", "xpool-nodes",
                "../..", "%2e%2e", "a=b", "%26", "1 2", "\u00e9", "\U0001f600"]
NAME_VALUES = [TENANT_A, TENANT_B, "admin", "xpool-nodes", NODE_1, NODE_2, "fz-node", "fz-tenant", "..", ".", "%2e%2e",
               "%2F", "a%00b", "A" * 300, "n" * 254, "-", "*", "\u00e9t\u00e9", "%ff%fe", "x.y_z-1", "CAMPAIGN-A",
               "campaign-a%20", "campaign-a;x", "null", "0"]


class RequestGenerator:
    def __init__(self, rng, campaign):
        self.r = rng
        self.c = campaign

    # -- values
    def job_id(self):
        r = self.r
        with self.c.lock:
            known = list(self.c.accepted_ids)
        choice = r.random()
        if known and choice < 0.55:
            return str(r.choice(known))
        if choice < 0.75:
            return str(r.randint(0, 400))
        return r.choice(["0", "-1", "00001", "1.0", "1e2", "abc", "99999999999999999999", "999999999999999999",
                         "%2e%2e", "..", "%00", "%ff", "1%2F2", "1;2", "\uff11", "+1", " 1".replace(" ", "%20"),
                         str(MISSING_JOB), "18446744073709551617"])

    def name(self, pattern):
        r = self.r
        if r.random() < 0.5:
            if "/nodes/" in pattern:
                return r.choice([NODE_1, NODE_2, NODE_1, "fz-node-%d" % r.randint(0, 5)])
            return r.choice([TENANT_A, TENANT_B, "admin", "fz-tenant-%d" % r.randint(0, 5)])
        return r.choice(NAME_VALUES)

    def who(self, access):
        r = self.r
        x = r.random()
        if x < 0.7:  # the token this route is for
            return {PUBLIC: r.choice([None, "a"]), TENANT: r.choice(["a", "b", "a", "b", "admin"]),
                    NODE: r.choice(["n1", "n2", "admin"]), ADMIN: "admin"}[access], False
        return r.choice([None, "admin", "a", "b", "n1", "n2", "bogus"]), True

    def auth_headers(self, who):
        r = self.r
        if who is None:
            return [], None
        if who == "bogus":
            token = r.choice(["xyz", "xpn.%s.forged" % NODE_1, "x" * 513, "", "\u00e9"])
            return [(b"Authorization", b"Bearer " + b(token))], None
        token = b(self.c.tokens[who])
        x = r.random()
        if x < 0.8:
            return [(b"Authorization", b"Bearer " + token)], who
        if x < 0.88:  # the scheme in any case, extra spaces: still this token (server/auth.cc)
            return [(b"Authorization", r.choice([b"bearer ", b"BEARER  ", b"Bearer    "]) + token)], who
        if x < 0.94:
            other = b(self.c.tokens[r.choice(["admin", "a", "b", "n1"])])
            return [(b"Authorization", b"Bearer " + token), (b"Authorization", b"Bearer " + other)], "?"
        return [(b"Authorization", r.choice([b"Basic ", b"Token ", b"Bearer " + token[:-1], b"Bearer " + token + b"!"])
                 + (token if r.random() < 0.5 else b""))], "?"

    def query(self, pattern):
        r = self.r
        keys = QUERY_KEYS.get(pattern, []) + ["x", "limit", "tenant"]
        parts = []
        for _ in range(r.randint(1, 4)):
            key = r.choice(keys)
            value = r.choice(QUERY_VALUES) if r.random() < 0.8 else str(r.randint(-5, 2000))
            if r.random() < 0.1:
                value = "v" * r.randint(1000, 6000)
            parts.append(pct(key, r) + ("" if r.random() < 0.05 else "=" + pct(value, r)))
        return "&".join(parts)

    def path(self, pattern):
        r = self.r
        return pattern.replace("{id}", self.job_id()).replace("{name}", self.name(pattern))

    def mutate_path(self, path):
        r = self.r
        segs = path.split("/")
        op = r.randrange(14)
        if op == 0:
            return "/" + path
        if op == 1:
            return path + "/"
        if op == 2:
            i = r.randrange(1, len(segs) + 1)
            return "/".join(segs[:i] + [".."] + segs[i:])
        if op == 3:
            i = r.randrange(1, len(segs) + 1)
            return "/".join(segs[:i] + ["."] + segs[i:])
        if op == 4:
            i = r.randrange(len(path))
            return path[:i] + "%%%02X" % ord(path[i]) + path[i + 1:] if ord(path[i]) < 128 else path
        if op == 5:
            return path.replace("/", "%2F", r.randint(1, 3))
        if op == 6:
            return path.upper()
        if op == 7:
            return path + "/" + r.choice(["x", "..", "%2e%2e", "events", "logs", "cancel", "1"])
        if op == 8:
            return "/".join(segs[:-1]) or "/"
        if op == 9:
            return path.replace("/api/v1/", r.choice(["/api/v1/../v1/", "/api/v2/", "/api//v1/", "/API/v1/",
                                                      "/api/v1/./", "/api/%76%31/", "/api/v1%2F"]), 1)
        if op == 10:
            return path + r.choice([";jsessionid=1", "#frag", "%", "%2", "%%", "%u002e", "%252F", "%00", "%ff"])
        if op == 11:
            return path.replace("/", "//")
        if op == 12:
            return "/" + "/".join(["x"] * r.randint(20, 400))
        return path + "/" + "A" * r.randint(100, 8000)

    # -- bodies
    def spec(self, who):
        r = self.r
        res = r.choice([
            {"cpu": r.choice([1, 2, "500m", "1500m", 0.5]), "memory": r.choice([256, 1024, "1Gi", "512Mi"])},
            {"gpu": 1, "gpucores": r.choice([10, 50, 100]), "gpumem": r.choice(["4Gi", 2048])},
            {"gpu": r.randint(1, 4), "gpumem-percentage": r.choice([25, 50, 100]), "gpu-type": "A100"},
            {"cpu": 1, "gpu": 1, "gpucores": 30, "vendor": "nvidia", "numa-bind": r.choice([True, False])},
        ])
        spec = {"name": r.choice(["train", "eval", "prep", "fz"]) + "-%d" % r.randint(0, 999), "resources": res,
                "command": r.choice([["sleep", "600"], "echo hi && sleep 1", ["python3", "-c", "print(1)"]])}
        if r.random() < 0.3:
            spec["priority"] = r.choice([0, 10, 50, 100, "low", "normal", "high"])
        if r.random() < 0.2:
            spec["replicas"] = r.randint(1, 3)
        if r.random() < 0.2:
            spec["env"] = {"K%d" % k: "v%d" % k for k in range(r.randint(1, 5))}
        if r.random() < 0.15:
            spec["workdir"] = "/tmp/fz"
        if r.random() < 0.15:
            spec["preemptible"] = r.choice([True, False])
        if r.random() < 0.15:
            spec["retries"] = r.randint(0, 3)
            spec["retry-backoff"] = r.choice(["5s", "1m", 30])
        if r.random() < 0.1:
            spec["checkpoint"] = {"grace": r.choice(["30s", "5m"]), "signal": r.choice(["SIGTERM", "SIGUSR1"])}
        if r.random() < 0.1 and who in ("a", "b"):
            spec["tenant"] = self.c.tenant_of[who]
        return spec

    def json_body(self, pattern, who):
        r = self.r
        if pattern in ("/api/v1/jobs", "/api/v1/jobs:validate"):
            return self.spec(who)
        if pattern == "/api/v1/jobs:batch":
            return {"jobs": [self.spec(who) for _ in range(r.randint(0, 4))]}
        if pattern == "/api/v1/tenants":
            body = {"name": "fz-tenant-%d" % r.randint(0, 40)}
            if r.random() < 0.5:
                body["quota"] = {"devices": r.choice([1, 8, -1, None]), "cpu": r.choice(["64", "500m", 4]),
                                 "device_memory": r.choice(["80Gi", 1024])}
            if r.random() < 0.2:
                body["guaranteed"] = {"devices": r.choice([0, 1, 4])}
            if r.random() < 0.2:
                body["priority_quota"] = [{"min_priority": 80, "max_priority": 100, "quota": {"devices": 2}}]
            if r.random() < 0.1:
                body["admin"] = r.choice([False, True])
            return body
        if pattern == "/api/v1/tenants/{name}":
            return {"quota": {"devices": r.choice([1, 8, -1, None]), "memory": r.choice(["1Ti", 4096])},
                    "guaranteed": {"devices": r.choice([0, 1, 16])}}
        if pattern.endswith("/tokens"):
            return {"label": r.choice(["ci", "", "x" * 200])}
        if pattern == "/api/v1/nodes":
            name = r.choice([NODE_1, NODE_2, "fz-node-%d" % r.randint(0, 5)])
            body = {"name": name, "cpu": r.choice([4, 96, "500m"]), "memory": r.choice(["8Gi", "768Gi", 4096])}
            if r.random() < 0.5:
                body["gpus"] = {"count": r.randint(1, 8), "model": "A100-SXM4-80GB", "memory": "80Gi",
                                "vendor": "nvidia"}
            elif r.random() < 0.5:
                body["devices"] = [{"model": "T4", "memory": "16Gi", "uuid": "GPU-%d" % k, "vendor": "nvidia",
                                    "cores": 100, "numa": k % 2, "max_sharers": 4, "mode": "shared"}
                                   for k in range(r.randint(1, 4))]
            if r.random() < 0.3:
                body["labels"] = {"rack": r.choice(["a", "b"])}
            if r.random() < 0.3:
                body["simulated"] = r.choice([True, False])
            return body
        if pattern == "/api/v1/nodes/{name}/heartbeat":
            tasks = []
            for _ in range(r.randint(0, 3)):
                with self.c.lock:
                    job = r.choice(self.c.accepted_ids or [1])
                tasks.append({"task_id": r.choice(["job%d-r0" % job, "job%d-r1" % job, "x"]), "job_id": job,
                              "replica": r.choice([0, 1]), "restart_count": r.choice([0, 1]),
                              "state": r.choice(["running", "succeeded", "failed", "stopped", "suspended"]),
                              "exit_code": r.choice([0, 1, 137]), "signal": r.choice([0, 9]), "pid": 4242,
                              "started_at": 1, "ended_at": r.choice([0, 2]), "fenced": r.random() < 0.1,
                              "log": {"offset": r.choice([0, 10, 1 << 40]), "data": "fuzz line\n"},
                              "log_end": r.choice([0, 10, 1 << 40])})
            body = {"devices": [{"index": 0, "healthy": r.random() < 0.8}]} if r.random() < 0.3 else {}
            if r.random() < 0.8:
                body["tasks"] = tasks
            return body
        if pattern == "/api/v1/jobs/{id}":
            return {"priority": r.choice([0, 50, 100, "low", "high", 101, -1, "urgent"])}
        return {}

    def body(self, pattern, who):
        """(bytes, content type, mutated)."""
        r = self.r
        value = self.json_body(pattern, who)
        yaml_ok = pattern in ("/api/v1/jobs", "/api/v1/jobs:validate")
        as_yaml = yaml_ok and r.random() < 0.5
        mutated = r.random() < 0.5
        if mutated:
            value = mutate_value(value, r)
        text = to_yaml(value, r) if as_yaml else json.dumps(value, ensure_ascii=r.random() < 0.5,
                                                           allow_nan=True).encode("utf-8", "surrogatepass")
        if mutated and r.random() < 0.6:
            text = mutate_text(text, r, as_yaml)
        ctype = r.choice([b"application/json", b"application/yaml", b"text/yaml", b"text/plain", None,
                          b"application/x-www-form-urlencoded", b"multipart/form-data; boundary=x"])
        return text, ctype, mutated

    # -- one request
    def next(self):
        r = self.r
        req = FuzzRequest()
        weights = [1, 1, 1, 1, 1, 12, 3, 4, 4, 4, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 5, 1, 1, 1, 1, 2, 2, 2, 1, 1, 2]
        method, pattern, access = r.choices(ROUTES, weights=weights)[0]
        if r.random() < 0.08:
            method = r.choice(METHODS)
            req.bad = True
        path = self.path(pattern)
        if r.random() < 0.15:
            path = self.mutate_path(path)
            req.bad = True
        if r.random() < 0.2:
            path += "?" + self.query(pattern)
            req.bad = True
        who, wrong = self.who(access)
        req.bad |= wrong
        auth, req.who = self.auth_headers(who)
        headers = [(b"Host", b"127.0.0.1")] if r.random() < 0.95 else []
        headers += auth
        body = b""
        if method in ("POST", "PATCH", "PUT") or r.random() < 0.04:
            body, ctype, mutated = self.body(pattern, who)
            req.bad |= mutated
            if ctype:
                headers.append((b"Content-Type", ctype))
        if r.random() < 0.15:
            req.bad = True
            headers += r.choice([
                [(b"Accept", b"*/*")], [(b"X-Forwarded-For", b"10.0.0.1")], [(b"Connection", b"keep-alive")],
                [(b"Cookie", b"session=" + b"c" * r.randint(1, 4000))], [(b"X-Tenant", b(TENANT_A))],
                [(b"Accept-Encoding", b"gzip, br")], [(b"Content-Type", b"application/json; charset=latin1")],
                [(b"X-Empty", b"")], [(b"Host", b"evil.example")], [(b"Range", b"bytes=0-10")],
                [(b"Upgrade", b"websocket"), (b"Connection", b"Upgrade")], [(b"Origin", b"http://evil.example")],
            ])
        req.method = b(method)
        req.target = b(path)
        req.body = body
        if r.random() < 0.06:
            self.malform(req, headers)
        else:
            if body or method in ("POST", "PATCH", "PUT"):
                if len(body) > 200000:
                    headers.append((b"Expect", b"100-continue"))
                    req.wait_for_continue = True
                headers.append((b"Content-Length", str(len(body)).encode()))
        if not any(name == b"Connection" for name, _ in headers):
            headers.append((b"Connection", b"close"))
        req.headers = headers
        req.head = req.raw_head if req.raw_head is not None else build_head(req.method, req.target, headers,
                                                                             req.version)
        return req

    def malform(self, req, headers):
        """Malformed HTTP the transport must refuse (or handle) itself."""
        r = self.r
        req.bad = True
        body = req.body or b'{"name": "x"}'
        op = r.randrange(16)
        if op == 0:  # both framings
            headers += [(b"Content-Length", str(len(body)).encode()), (b"Transfer-Encoding", b"chunked")]
            req.body, req.malformed = chunked(body, r), True
        elif op == 1:  # a coding other than chunked: 501
            headers += [(b"Transfer-Encoding", r.choice([b"gzip", b"gzip, chunked", b"identity"]))]
            req.body, req.malformed, req.allowed_5xx = b"", True, 501
        elif op == 2:  # a valid chunked body
            headers += [(b"Transfer-Encoding", b"chunked")]
            req.body = chunked(body, r)
        elif op == 3:  # a broken chunk size
            headers += [(b"Transfer-Encoding", b"chunked")]
            req.body, req.malformed = b"zz\r\n" + body + b"\r\n0\r\n\r\n", True
        elif op == 4:  # differing lengths
            headers += [(b"Content-Length", str(len(body)).encode()), (b"Content-Length", str(len(body) + 1).encode())]
            req.malformed = True
            req.body = body
        elif op == 5:  # a length that is no number
            length = r.choice([b"-1", b"abc", b"1e3", b"", b"0x10", b"+5", b"99999999999999999999999"])
            headers += [(b"Content-Length", length)]
            req.body, req.malformed = b"", True
        elif op == 6:  # folded header
            req.raw_head = build_head(req.method, req.target, headers + [(b"X-A", b"1\r\n folded")])
            req.body, req.malformed = b"", True
        elif op == 7:  # a control byte in a header value
            headers += [(b"X-Ctl", b"a" + bytes([r.choice([1, 8, 0x7f, 0])]) + b"b")]
            req.body, req.malformed = b"", True
        elif op == 8:  # a control byte or space in the target
            req.target = req.target + bytes([r.choice([0, 9, 0x7f, 0x20, 0x0b])]) + b"x"
            req.body, req.malformed = b"", True
        elif op == 9:  # HTTP/2.0 in the request line: 505
            req.version, req.body, req.malformed, req.allowed_5xx = b"HTTP/2.0", b"", True, 505
        elif op == 10:  # HTTP/1.0, or a nonsense version
            req.version = r.choice([b"HTTP/1.0", b"HTTP/1.1x", b"HTTX/1.1", b"http/1.1"])
            req.malformed = req.version != b"HTTP/1.0"
            if req.body:
                headers.append((b"Content-Length", str(len(req.body)).encode()))
        elif op == 11:  # a head over 32 KiB: 431
            headers += [(b"X-Big", b"h" * r.randint(33000, 40000))]
            req.body, req.malformed = b"", True
        elif op == 12:  # a target over 32 KiB: 414
            req.target = b"/api/v1/jobs/" + b"9" * r.randint(33000, 40000)
            req.body, req.malformed = b"", True
        elif op == 13:  # an Expect the server does not know: 417
            headers += [(b"Expect", b"200-ok")]
            req.body, req.malformed = b"", True
        elif op == 14:  # a bad header line
            headers += [(r.choice([b"Bad Header", b"", b"X(y)", b"\xff"]), b"v")]
            req.body, req.malformed = b"", True
        else:  # a body over --max-body (1 MiB): 413 before the body is read
            big = b"x" * ((1 << 20) + r.randint(1, 4096))
            headers += [(b"Content-Length", str(len(big)).encode()), (b"Expect", b"100-continue")]
            req.body, req.wait_for_continue = big, True
