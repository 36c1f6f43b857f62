"""The REST campaign's client side: the route table and the error codes each status may carry, the probe names, a
raw HTTP/1.1 client (requests go out byte for byte), the error-shape check, and CampaignClient, the campaign's
state and bookkeeping with its plain requests (call, want, submit), token and tenant setup and job snapshots."""
import json
import re
import socket
import threading
import time

PUBLIC, TENANT, NODE, ADMIN = "public", "tenant", "node", "admin"

# Mirrors the route table in src/server/api.cc (checked against openapi.json at the start of every run).
ROUTES = [
    ("GET", "/healthz", PUBLIC),
    ("GET", "/readyz", PUBLIC),
    ("GET", "/metrics", PUBLIC),
    ("GET", "/api/v1/openapi.json", PUBLIC),
    ("GET", "/api/v1/whoami", TENANT),
    ("POST", "/api/v1/jobs", TENANT),
    ("POST", "/api/v1/jobs:batch", TENANT),
    ("POST", "/api/v1/jobs:validate", TENANT),
    ("GET", "/api/v1/jobs", TENANT),
    ("GET", "/api/v1/jobs/{id}", TENANT),
    ("DELETE", "/api/v1/jobs/{id}", TENANT),
    ("PATCH", "/api/v1/jobs/{id}", ADMIN),
    ("POST", "/api/v1/jobs/{id}/cancel", TENANT),
    ("POST", "/api/v1/jobs/{id}/suspend", TENANT),
    ("POST", "/api/v1/jobs/{id}/resume", TENANT),
    ("GET", "/api/v1/jobs/{id}/events", TENANT),
    ("GET", "/api/v1/jobs/{id}/logs", TENANT),
    ("POST", "/api/v1/jobs/{id}/proxy-session", TENANT),
    ("GET", "/api/v1/nodes", TENANT),
    ("POST", "/api/v1/nodes", NODE),
    ("GET", "/api/v1/nodes/{name}", TENANT),
    ("POST", "/api/v1/nodes/{name}/heartbeat", NODE),
    ("POST", "/api/v1/nodes/{name}/tokens", ADMIN),
    ("POST", "/api/v1/nodes/{name}/cordon", ADMIN),
    ("POST", "/api/v1/nodes/{name}/uncordon", ADMIN),
    ("GET", "/api/v1/tenants", ADMIN),
    ("POST", "/api/v1/tenants", ADMIN),
    ("GET", "/api/v1/tenants/{name}", TENANT),
    ("PATCH", "/api/v1/tenants/{name}", ADMIN),
    ("POST", "/api/v1/tenants/{name}/tokens", ADMIN),
    ("GET", "/api/v1/usage/history", TENANT),
    ("GET", "/api/v1/usage", TENANT),
]

# The error code each status may carry (server/http_status.cc; the transport's own answers: docs/api.md).
CODES_FOR_STATUS = {
    400: {"INVALID_ARGUMENT"},
    401: {"UNAUTHENTICATED"},
    403: {"PERMISSION_DENIED"},
    404: {"NOT_FOUND"},
    408: {"INVALID_ARGUMENT"},
    409: {"ALREADY_EXISTS", "FAILED_PRECONDITION", "ABORTED"},
    413: {"RESOURCE_EXHAUSTED"},
    414: {"RESOURCE_EXHAUSTED"},
    417: {"INVALID_ARGUMENT"},
    431: {"RESOURCE_EXHAUSTED"},
    501: {"INVALID_ARGUMENT"},
    502: {"UNAVAILABLE"},  # the interactive proxy: the task does not answer
    505: {"INVALID_ARGUMENT"},
}

TENANT_A, TENANT_B = "campaign-a", "campaign-b"
NODE_1, NODE_2 = "campaign-n1", "campaign-n2"
SIM_NODE = "campaign-sim"
MISSING_JOB = 987654321


# ----------------------------------------------------------------------------------------------------------------
# A raw HTTP/1.1 client: the request goes out byte for byte as built (no normalisation of paths or headers).


class NoAnswer(Exception):
    pass


class Reply:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def header(self, name):
        return self.headers.get(name.lower(), "")

    def json(self):
        try:
            return json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None


class _Reader:
    def __init__(self, sock):
        self.sock, self.buf = sock, bytearray()

    def _fill(self):
        try:
            chunk = self.sock.recv(1 << 16)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            raise NoAnswer("connection closed mid-answer" if self.buf else "connection closed without an answer")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        at = self.buf.index(b"\r\n")
        line = bytes(self.buf[:at])
        del self.buf[: at + 2]
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            self._fill()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def _to_eof(self):
        while True:
            try:
                self._fill()
            except NoAnswer:
                out = bytes(self.buf)
                self.buf.clear()
                return out

    def response(self, head_request, return_interim=False):
        while True:
            status_line = self._line()
            m = re.match(rb"HTTP/1\.[01] (\d{3})", status_line)
            if not m:
                raise NoAnswer("bad status line %r" % status_line[:80])
            status = int(m.group(1))
            headers = {}
            while True:
                line = self._line()
                if not line:
                    break
                name, _, value = line.partition(b":")
                headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
            if 100 <= status < 200:
                if return_interim:
                    return Reply(status, headers, b"")
                continue
            if head_request or status in (204, 304):
                body = b""
            elif "content-length" in headers:
                body = self._exact(int(headers["content-length"]))
            elif headers.get("transfer-encoding", "").lower() == "chunked":
                body = b""
                while True:
                    size = int(self._line().split(b";")[0], 16)
                    if size == 0:
                        while self._line():
                            pass
                        break
                    body += self._exact(size)
                    self._exact(2)
            else:
                body = self._to_eof()
            return Reply(status, headers, body)


def _send(sock, data):
    try:
        sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server may answer (and close) before it reads everything: the answer is still read


def exchange(port, head, body=b"", head_request=False, wait_for_continue=False, timeout=20.0):
    """Sends one request (head bytes + body bytes) on a new connection; returns the final Reply or raises NoAnswer."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    except OSError as e:
        raise NoAnswer("cannot connect: %s" % e)
    try:
        reader = _Reader(sock)
        if wait_for_continue and body:
            _send(sock, head)
            first = reader.response(head_request, return_interim=True)
            if first.status != 100:
                return first
            _send(sock, body)
            return reader.response(head_request)
        _send(sock, head + body)
        return reader.response(head_request)
    except socket.timeout:
        raise NoAnswer("no answer within %.0f s" % timeout)
    except OSError as e:
        raise NoAnswer("socket error: %s" % e)
    finally:
        sock.close()


def build_head(method, target, headers, version=b"HTTP/1.1"):
    lines = [method + b" " + target + b" " + version]
    lines += [name + b": " + value for name, value in headers]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def b(text):
    return text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")


def percent_decode(data):
    """The server's PercentDecode (src/http/http_message.cc) on a path."""
    hexd = b"0123456789abcdefABCDEF"
    out, i = bytearray(), 0
    while i < len(data):
        c = data[i]
        if c == 0x25 and i + 2 < len(data) and data[i + 1] in hexd and data[i + 2] in hexd:
            out.append(int(data[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(c)
            i += 1
    return bytes(out)


def studio_handles(method, target):
    """Whether the server gives this request to Studio (server/studio.cc Studio::Handles) rather than the API."""
    if method not in (b"GET", b"HEAD"):
        return False
    path = target
    low = path.lower()
    if len(path) > 8 and (low.startswith(b"http://") or low.startswith(b"https://")):
        slash = path.find(b"/", path.find(b"//") + 2)
        path = b"/" if slash < 0 else path[slash:]
    path = percent_decode(path.split(b"?", 1)[0])
    if path == b"/api" or path.startswith(b"/api/"):
        return False
    return path not in (b"/metrics", b"/healthz", b"/readyz")


# ----------------------------------------------------------------------------------------------------------------
# What every error answer must look like, and how a failure shows the request behind it.


def error_shape_problem(reply):
    """None when a non-2xx answer is {"error": {"code": C, "message": M}} with C right for its status."""
    body = reply.json()
    if not isinstance(body, dict) or not isinstance(body.get("error"), dict):
        return "a %d answer without a JSON error object: %r" % (reply.status, reply.body[:200])
    err = body["error"]
    if not isinstance(err.get("code"), str) or not isinstance(err.get("message"), str):
        return "a %d error without string code and message: %r" % (reply.status, reply.body[:200])
    allowed = CODES_FOR_STATUS.get(reply.status)
    if allowed is None:
        return "status %d is not one the API answers" % reply.status
    if err["code"] not in allowed:
        return "status %d with code %s (want %s)" % (reply.status, err["code"], "/".join(sorted(allowed)))
    if not reply.header("content-type").startswith("application/json"):
        return "a JSON error sent as %r" % reply.header("content-type")
    return None


def describe_request(req):
    method, target, headers, body = req
    shown = [(n.decode("latin-1"), v[:60].decode("latin-1") + ("..." if len(v) > 60 else "")) for n, v in headers
             if n.lower() != b"authorization"]
    auth = [v.split(b" ", 1)[0].decode("latin-1") for n, v in headers if n.lower() == b"authorization"]
    return "%r %r headers=%r auth=%r body(%d)=%r" % (method, target[:300], shown[:8], auth, len(body), body[:300])


# ----------------------------------------------------------------------------------------------------------------
# Bookkeeping: check categories, each with its request count and failures.


class Category:
    def __init__(self, name):
        self.name, self.requests, self.failures = name, 0, []


class CampaignClient:
    """The campaign's state and its plain requests; the probes (campaign_probes.ProbeSteps), the fuzzer and the
    accounting (campaign_fuzz.FuzzSteps) and the server's start and stop (rest_campaign.Campaign) build on it."""

    CATEGORIES = ["routes", "cross-tenant", "auth", "cross-node", "static", "fuzz", "accounting", "liveness"]

    def __init__(self, args):
        self.args = args
        self.cats = {name: Category(name) for name in self.CATEGORIES}
        self.cat = self.cats["routes"]
        self.port = 0
        self.proc = None
        self.tokens = {}  # who -> token: admin, a, b, n1, n2
        self.tenant_of = {}  # who -> tenant name
        self.accepted = {}  # job id -> tenant name of the submitting token ("" when admin or unknown)
        self.bad_inputs = 0
        self.five_xx = 0
        self.lost = self.leaked = 0
        self.server_dead = False
        self.fuzz_statuses = {}  # status -> count of the fuzzer's answers
        self.accepted_ids = []  # the keys of accepted, in the order the 201s came
        self.lock = threading.Lock()  # for the fuzzer's workers

    # -- reporting
    def fail(self, message, reply=None, request=None):
        text = message
        if request is not None:
            text += "\n      request: %s" % describe_request(request)
        if reply is not None:
            text += "\n      answer:  %d %r" % (reply.status, reply.body[:300])
        self.cat.failures.append(text)
        if self.args.verbose or len(self.cat.failures) <= 3:
            print("FAIL [%s] %s" % (self.cat.name, text), flush=True)

    def expect(self, ok, message, reply=None, request=None):
        if not ok:
            self.fail(message, reply, request)
        return ok

    # -- plain requests for setup and probes
    def call(self, method, path, who=None, body=None, raw_token=None, count=True):
        """A well-formed request; `who` names a token (admin, a, b, n1, n2); body: dict/list (JSON) or bytes."""
        if isinstance(body, (dict, list)):
            data = json.dumps(body).encode()
        else:
            data = b(body) if body is not None else b""
        headers = [(b"Host", b"127.0.0.1"), (b"Connection", b"close")]
        token = raw_token if raw_token is not None else (self.tokens.get(who) if who else None)
        if token is not None:
            headers.append((b"Authorization", b"Bearer " + b(token)))
        if data or method in ("POST", "PATCH", "PUT"):
            headers.append((b"Content-Type", b"application/json"))
            headers.append((b"Content-Length", str(len(data)).encode()))
        head = build_head(b(method), b(path), headers)
        if count:
            self.cat.requests += 1
        request = (b(method), b(path), headers, data)
        try:
            reply = exchange(self.port, head, data, head_request=method == "HEAD")
        except NoAnswer as e:
            self.fail("%s %s: %s" % (method, path, e))
            return Reply(0, {}, b"")
        if reply.status >= 500:
            self.five_xx += 1
            self.fail("%s %s answered %d" % (method, path, reply.status), reply)
        elif reply.status >= 300 and method != "HEAD":
            problem = error_shape_problem(reply)
            if problem:
                self.fail("%s %s: %s" % (method, path, problem), reply, request)
        return reply

    def want(self, status, method, path, who=None, body=None, raw_token=None, what=""):
        reply = self.call(method, path, who, body, raw_token)
        statuses = status if isinstance(status, (tuple, list, set)) else (status,)
        if reply.status and reply.status not in statuses:
            self.fail("%s%s %s as %s: want %s, got %d" % (what and what + ": ", method, path,
                                                          who or ("raw token" if raw_token is not None else "nobody"),
                                                          "/".join(map(str, statuses)), reply.status), reply)
        return reply

    def record_job(self, reply, who):
        body = reply.json()
        if reply.status != 201 or not isinstance(body, dict):
            return None
        # One job ({id, state}), or a batch ({jobs: [{id, state} | {error}]}).
        items = [body] if set(body) == {"id", "state"} else body.get("jobs") if set(body) == {"jobs"} else []
        first = None
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict) or set(item) != {"id", "state"}:
                continue
            with self.lock:
                self.accepted[item["id"]] = self.tenant_of.get(who, "") if who in ("a", "b") else ""
                self.accepted_ids.append(item["id"])
            first = item["id"] if first is None else first
        return first

    def submit(self, who, spec):
        reply = self.want(201, "POST", "/api/v1/jobs", who, spec, what="submit")
        return self.record_job(reply, who)

    # -- setup
    def setup(self):
        self.cat = self.cats["routes"]
        for who, name in (("a", TENANT_A), ("b", TENANT_B)):
            self.want(201, "POST", "/api/v1/tenants", "admin", {"name": name}, what="create tenant")
            reply = self.want(201, "POST", "/api/v1/tenants/%s/tokens" % name, "admin", {"label": "campaign"})
            token = (reply.json() or {}).get("token")
            if not token:
                raise SystemExit("could not create a token for tenant %s: %d %r" % (name, reply.status, reply.body))
            self.tokens[who], self.tenant_of[who] = token, name
        for who, node in (("n1", NODE_1), ("n2", NODE_2)):
            reply = self.want(201, "POST", "/api/v1/nodes/%s/tokens" % node, "admin", {})
            token = (reply.json() or {}).get("token")
            if not token:
                raise SystemExit("could not create a node token for %s: %d %r" % (node, reply.status, reply.body))
            self.tokens[who], self.tenant_of[who] = token, "xpool-nodes"

    # -- job snapshots (as admin), to show a probe changed nothing
    def snapshot(self, job_id):
        reply = self.call("GET", "/api/v1/jobs/%d" % job_id, "admin")
        events = self.call("GET", "/api/v1/jobs/%d/events" % job_id, "admin")
        job = reply.json() or {}
        keep = {k: job.get(k) for k in ("state", "priority", "restart_count", "state_reason", "updated_at", "tasks",
                                        "placement")}
        return keep, (events.json() or {}).get("events")

    def wait_state(self, job_id, states, seconds=20):
        deadline = time.time() + seconds
        while time.time() < deadline:
            got = self.call("GET", "/api/v1/jobs/%d" % job_id, "admin", count=False).json() or {}
            if got.get("state") in states:
                return got
            time.sleep(0.1)
        self.fail("job %d did not reach %s within %d s (last: %r)" % (job_id, "/".join(states), seconds,
                                                                      got.get("state")))
        return None

    # -- requests sent exactly as given, and the secrets no answer may hold
    def raw_get(self, target, method=b"GET"):
        self.cat.requests += 1
        try:
            return exchange(self.port, build_head(method, target, [(b"Host", b"127.0.0.1"), (b"Connection", b"close")]),
                            head_request=method == b"HEAD")
        except NoAnswer as e:
            self.fail("%s %r: %s" % (method.decode(), target, e))
            return None

    def secrets(self):
        return [b(t) for t in self.tokens.values()]

