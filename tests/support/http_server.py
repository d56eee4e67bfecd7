"""A small real HTTP server on 127.0.0.1 for tool and workflow tests.

Standard library only (``ThreadingHTTPServer`` in a daemon thread), HTTP/1.1 with
keep-alive so client connection pooling is exercised. Start it on a free port::

    with HTTPTestServer() as srv:
        srv.url("/json")            # http://127.0.0.1:<port>/json

Endpoints (any method unless noted; query parameters in brackets):

====================================  ==================================================
``/json``                             ``{"hello": "world", "query": {...}}``
``/text``                             ``text/plain`` "hello text"
``/echo``                             method, path, query, headers, body text, parsed json
``/status/<code>``                    that status with ``{"status": code}`` (with a request
                                      body: that body back, as text)
``/rate-limited[?retry_after=N]``     429 with ``Retry-After: N`` (default 2)
``/flaky?key=K&fail_times=N``         fails N times per key (``status``, default 500), then
                                      200 ``{"ok": true, "key", "hits"}``
``/count?key=K``                      ``{"key": K, "hits": n}``: hits of any keyed endpoint
``/reset``                            clears all counters
``/paged?page=&size=&total=``         ``{"data": [{id, name}], "paging": {hasMore, page,
                                      pageSize, total}}`` (1-based pages, defaults 1/10/35)
``/big?bytes=N[&json=1]``             N bytes of text (or ``{"blob": "..."}``)
``/slow?s=S``                         sleeps S seconds, then ``{"slept": S}``
``/redirect?to=/json``                302 to ``to``
``/html-error``                       502 with a multi-line HTML page (a proxy's error page)
====================================  ==================================================

Every request with a ``key`` query parameter (except ``/count``) is counted under that key.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.loopback import LoopbackServer

HTML_ERROR_PAGE = """<!DOCTYPE html>
<html>
<head><title>502 Bad Gateway</title>
<style>body { font-family: sans-serif; }</style></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx/1.25.3</center>
</body>
</html>
"""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a /slow handler must not hold up stop()
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int]) -> None:
        super().__init__(addr, _Handler)
        self.hits: Counter[str] = Counter()
        self.lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms delayed-ACK stall
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output clean
        pass

    # every method goes through one dispatcher
    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def _send(self, status: int, body: Any, *, content_type: str | None = None,
              headers: dict[str, str] | None = None) -> None:
        if isinstance(body, (dict, list)) or body is None:
            raw = json.dumps(body).encode()
            content_type = content_type or "application/json"
        else:
            raw = body.encode() if isinstance(body, str) else body
            content_type = content_type or "text/plain; charset=utf-8"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(raw)

    def _dispatch(self) -> None:
        parts = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        key = q.get("key")
        path = parts.path.rstrip("/") or "/"
        hits = 0
        if key is not None and path != "/count":  # reading a counter is not a hit
            with self.server.lock:
                self.server.hits[key] += 1
                hits = self.server.hits[key]

        if path == "/json":
            return self._send(200, {"hello": "world", "query": q})
        if path == "/html-error":
            return self._send(502, HTML_ERROR_PAGE, content_type="text/html; charset=utf-8")
        if path == "/text":
            return self._send(200, "hello text")
        if path == "/echo":
            text = body.decode("utf-8", "replace")
            try:
                parsed = json.loads(text) if text else None
            except ValueError:
                parsed = None
            return self._send(200, {"method": self.command, "path": parts.path, "query": q,
                                    "headers": {k.lower(): v for k, v in self.headers.items()},
                                    "body": text, "json": parsed})
        if path.startswith("/status/"):
            code = int(path.rsplit("/", 1)[1])
            if body:  # an error page that quotes the request, as many servers' do
                return self._send(code, body.decode("utf-8", "replace"), content_type="text/plain")
            return self._send(code, {"status": code})
        if path == "/rate-limited":
            return self._send(429, {"error": "rate limited"},
                              headers={"Retry-After": q.get("retry_after", "2")})
        if path == "/flaky":
            if hits <= int(q.get("fail_times", "1")):
                return self._send(int(q.get("status", "500")), {"error": "flaky", "key": key, "hits": hits})
            return self._send(200, {"ok": True, "key": key, "hits": hits})
        if path == "/count":
            with self.server.lock:
                n = self.server.hits[key] if key is not None else 0
            return self._send(200, {"key": key, "hits": n})
        if path == "/reset":
            with self.server.lock:
                self.server.hits.clear()
            return self._send(200, {"reset": True})
        if path == "/paged":
            page, size, total = int(q.get("page", 1)), int(q.get("size", 10)), int(q.get("total", 35))
            start = (page - 1) * size
            items = [{"id": i + 1, "name": f"item-{i + 1}"} for i in range(start, min(start + size, total))]
            return self._send(200, {"data": items, "paging": {"hasMore": start + size < total, "page": page,
                                                              "pageSize": size, "total": total}})
        if path == "/big":
            n = int(q.get("bytes", 1024))
            if q.get("json"):
                return self._send(200, {"blob": "x" * n})
            return self._send(200, b"x" * n)
        if path == "/slow":
            seconds = float(q.get("s", 1))
            time.sleep(seconds)
            return self._send(200, {"slept": seconds})
        if path == "/redirect":
            return self._send(302, "", headers={"Location": q.get("to", "/json")})
        return self._send(404, {"error": "no such endpoint", "path": parts.path})


class HTTPTestServer(LoopbackServer):
    """Start/stop a test server on a free port of 127.0.0.1 (also a context manager)."""

    server_class = _Server
    name = "http-test-server"

    def hits(self, key: str) -> int:
        assert self._server is not None
        with self._server.lock:
            return self._server.hits[key]

    def reset(self) -> None:
        assert self._server is not None
        with self._server.lock:
            self._server.hits.clear()
