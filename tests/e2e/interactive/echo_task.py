#!/usr/bin/env python3
"""A small interactive task for the end-to-end tests (stdlib only): an HTTP page and a WebSocket echo.

Listens on 0.0.0.0:$XPOOL_INTERACTIVE_PORT. Any GET answers an HTML page ("xpool echo task", the path it was
asked for and XPOOL_PROXY_BASE) whose script opens a WebSocket to the same path + "ws", sends "hello from the
page" and shows the echo in #ws. A GET of a path ending in "/ws" with "Upgrade: websocket" is a WebSocket
(RFC 6455, framed by hand) that echoes every text or binary message back and answers ping and close.
"""
import base64
import hashlib
import html
import http.server
import os
import socketserver
import struct

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

PAGE = """<!doctype html>
<html><head><title>xpool echo task</title></head>
<body>
<h1 id="title">xpool echo task</h1>
<p>path: <code id="path">{path}</code></p>
<p>proxy base: <code id="base">{base}</code></p>
<p>websocket: <span id="ws">connecting</span></p>
<script>
const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host +
  location.pathname.replace(/[^/]*$/, "") + "ws";
const ws = new WebSocket(url);
ws.onopen = () => ws.send("hello from the page");
ws.onmessage = (e) => {{ document.getElementById("ws").textContent = "echo: " + e.data; }};
ws.onerror = () => {{ document.getElementById("ws").textContent = "error"; }};
</script>
</body></html>
"""


def read_exact(f, n):
    data = b""
    while len(data) < n:
        chunk = f.read(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def read_frame(f):
    b0, b1 = read_exact(f, 2)
    opcode = b0 & 0x0F
    length = b1 & 0x7F
    if length == 126:
        length = struct.unpack("!H", read_exact(f, 2))[0]
    elif length == 127:
        length = struct.unpack("!Q", read_exact(f, 8))[0]
    mask = read_exact(f, 4) if b1 & 0x80 else b"\0\0\0\0"
    payload = bytearray(read_exact(f, length))
    for i in range(length):
        payload[i] ^= mask[i % 4]
    return opcode, bytes(payload)


def frame(opcode, payload):
    head = bytes([0x80 | opcode])
    if len(payload) < 126:
        head += bytes([len(payload)])
    elif len(payload) < 65536:
        head += bytes([126]) + struct.pack("!H", len(payload))
    else:
        head += bytes([127]) + struct.pack("!Q", len(payload))
    return head + payload


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        print("echo task:", fmt % args, flush=True)

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path.endswith("/ws") and self.headers.get("Upgrade", "").lower() == "websocket":
            return self.websocket()
        body = PAGE.format(path=html.escape(self.path), base=html.escape(os.environ.get("XPOOL_PROXY_BASE", "")))
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data) + 6))
        self.end_headers()
        self.wfile.write(b"echo: " + data)

    def websocket(self):
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        try:
            while True:
                opcode, payload = read_frame(self.rfile)
                if opcode in (1, 2):
                    self.wfile.write(frame(opcode, payload))
                elif opcode == 9:
                    self.wfile.write(frame(10, payload))
                elif opcode == 8:
                    self.wfile.write(frame(8, payload))
                    break
                self.wfile.flush()
        except (EOFError, ConnectionError):
            pass
        self.close_connection = True


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    port = int(os.environ.get("XPOOL_INTERACTIVE_PORT", "8888"))
    print("echo task: listening on port", port, "base", os.environ.get("XPOOL_PROXY_BASE", ""), flush=True)
    Server(("0.0.0.0", port), Handler).serve_forever()
