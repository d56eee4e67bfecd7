"""A loopback stand-in for NoETL's paginated test server (corpus INDEX.md,
"External services used by this corpus"), written from the contract described there.

Standard library only (``ThreadingHTTPServer`` in a daemon thread), HTTP/1.1 with
keep-alive, like ``tests.support.http_server``::

    with PaginatedAPIServer() as api:
        api.base_url            # http://127.0.0.1:<port>; playbooks get it as ``api_url``

The data set is 35 items; pages hold 10 items unless the request says otherwise; pages
are 1-based.

=================================================  =========================================================
``GET /api/v1/assessments?page&pageSize``          ``{data: [{id, name, score}], paging: {hasMore, page,
                                                   pageSize, total}}``
``GET /api/v1/users?offset&limit``                 ``{users: [{id, name, email}], has_more, offset, limit,
                                                   total}``
``GET /api/v1/events?cursor&limit``                ``{events: [{id, type, name}], next_cursor}``; the cursor
                                                   is base64 of the next page number (an empty or missing
                                                   cursor is page 1), ``null`` on the last page
``GET /api/v1/flaky?page&pageSize&fail_on=1,2``    500 on the *first* request for each page listed in
                                                   ``fail_on``, then ``{data, paging: {hasMore, page,
                                                   pageSize}}``; the attempt counters are server-global
``POST /api/v1/flaky/reset``                       clears the flaky counters
``GET /api/v1/rate-limited?page&pageSize``         **Choice:** the first request for each ``page`` gets 429
                                                   with ``Retry-After: 1``, later ones the assessments page,
                                                   so a retry policy gets through on its second attempt
``POST /api/v1/rate-limited/reset``                clears the rate-limit counters
``GET /api/v1/errors?error_type=T``                ``auth`` 401, ``forbidden`` 403, ``not_found`` 404,
                                                   ``bad_request``/``validation`` 400, ``server`` 500,
                                                   ``unavailable`` 503, ``rate_limit`` 429; anything else 400
``GET /api/v1/heavy?page&pageSize&payload_kb``     the assessments page, each item with a ``category`` and a
                                                   ``payload`` string of ``payload_kb`` KiB (default 10),
                                                   plus ``meta: {payload_kb, page_bytes}``
``GET /api/v1/concurrency/probe?delay_seconds``    sleeps ``delay_seconds`` (at most 30) and answers
                                                   ``{status: ok, delay_seconds, label}``; the server counts
                                                   probes started, completed, active and the most active at
                                                   once
``GET /api/v1/concurrency/stats``                  ``{started, completed, active, max_active}``
``POST /api/v1/concurrency/reset``                 clears those counters: ``{status: reset}``
``GET /api/v1/patient-records?patientId&page...``  NoETL's FHIR-like patient records, and its reference-chain
``GET /api/v1/reference-chain/items?page...``      items, written from NoETL's own server
                                                   (``tests/support/noetl_load_api.py``)
``GET /api/v1/patient/<type>?patientId&page``      NoETL's PFT patient endpoints (``assessments``,
``GET /api/v1/patient/demographics?patientId``     ``conditions``, ``medications``, ``vital_signs``,
``GET /api/v1/pft/mds/details?assessmentId``       demographics, MDS details): one record a request, written
``GET /api/v1/mds/assessment/<id>``                from NoETL's own server (``tests/support/pft_patients.py``),
``GET /api/v1/pft/batch/<type>?patientIds``        and its batch of them
=================================================  =========================================================

The heavy and concurrency endpoints are **choices** written from what the e2e fixtures
``pagination/pipeline/test_pipeline_heavy_payload`` and ``pagination/basic`` read.

``hits(path)`` counts requests per path (``/api/v1/flaky``), for assertions.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support import noetl_load_api, pft_patients
from tests.support.loopback import LoopbackServer

TOTAL_ITEMS = 35
DEFAULT_PAGE_SIZE = 10
RETRY_AFTER_S = 1
DEFAULT_PAYLOAD_KB = 10
MAX_PROBE_DELAY_S = 30.0

_ERRORS = {
    "auth": (401, "unauthorized", "authentication required"),
    "forbidden": (403, "forbidden", "access denied"),
    "not_found": (404, "not_found", "resource not found"),
    "bad_request": (400, "bad_request", "invalid request"),
    "validation": (400, "validation_error", "validation failed"),
    "server": (500, "internal_error", "internal server error"),
    "unavailable": (503, "service_unavailable", "service unavailable"),
    "rate_limit": (429, "rate_limited", "too many requests"),
}


class BadRequest(Exception):
    pass


def _int(q: dict[str, str], name: str, default: int, *, minimum: int) -> int:
    raw = q.get(name, "")
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"'{name}' must be an integer, got {raw!r}") from None
    if value < minimum:
        raise BadRequest(f"'{name}' must be >= {minimum}, got {value}")
    return value


def _window(start: int, size: int) -> range:
    """Item ids (1-based) of the slice starting at 0-based ``start``."""
    return range(start + 1, min(start + size, TOTAL_ITEMS) + 1)


def _assessment(i: int) -> dict[str, Any]:
    return {"id": i, "name": f"Assessment {i}", "score": 50 + (i * 7) % 50}


def _page(q: dict[str, str]) -> tuple[int, int]:
    return _int(q, "page", 1, minimum=1), _int(q, "pageSize", DEFAULT_PAGE_SIZE, minimum=1)


def _encode_cursor(page: int) -> str:
    return base64.b64encode(str(page).encode()).decode()


def _decode_cursor(cursor: str) -> int:
    if not cursor:
        return 1
    try:
        page = int(base64.b64decode(cursor.encode(), validate=True).decode())
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise BadRequest(f"invalid cursor {cursor!r}") from None
    if page < 1:
        raise BadRequest(f"invalid cursor {cursor!r}")
    return page


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int]) -> None:
        super().__init__(addr, _Handler)
        self.lock = threading.Lock()
        self.flaky: Counter[int] = Counter()  # page -> requests since the last reset
        self.limited: Counter[int] = Counter()  # page -> requests since the last reset
        self.hits: Counter[str] = Counter()  # path -> requests
        self.probes: Counter[str] = Counter()  # started, completed, active, max_active
        self.pft_rate = pft_patients.RateLimit()  # the patient endpoints' requests a second
        self.records_rate = pft_patients.RateLimit(noetl_load_api.RECORDS_RATE_LIMIT)  # patient-records'


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms delayed-ACK stall
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output clean
        pass

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)

    def _dispatch(self) -> None:
        parts = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)  # keep the connection usable; bodies are not used
        path = parts.path.rstrip("/") or "/"
        with self.server.lock:
            self.server.hits[path] += 1
        route = _ROUTES.get((self.command, path))
        if route is None and self.command == "GET" and path.startswith(_MDS_ASSESSMENT):
            route = _Handler.mds_assessment   # the id is the path's last part
        if route is None and self.command == "GET" and path.startswith(_PFT_BATCH):
            route = _Handler.pft_batch        # the data type is the path's last part
        if route is None:
            allowed = sorted(m for m, p in _ROUTES if p == path)
            if allowed:
                return self._send(405, {"error": "method_not_allowed", "allowed": allowed},
                                  headers={"Allow": ", ".join(allowed)})
            return self._send(404, {"error": "not_found", "path": parts.path})
        try:
            route(self, q)
        except BadRequest as exc:
            self._send(400, {"error": "bad_request", "message": str(exc)})

    # ------------------------------------------------------------------ endpoints

    def assessments(self, q: dict[str, str]) -> None:
        page, size = _page(q)
        start = (page - 1) * size
        self._send(200, {
            "data": [_assessment(i) for i in _window(start, size)],
            "paging": {"hasMore": start + size < TOTAL_ITEMS, "page": page, "pageSize": size,
                       "total": TOTAL_ITEMS},
        })

    def users(self, q: dict[str, str]) -> None:
        offset = _int(q, "offset", 0, minimum=0)
        limit = _int(q, "limit", DEFAULT_PAGE_SIZE, minimum=1)
        self._send(200, {
            "users": [{"id": i, "name": f"User {i}", "email": f"user{i}@example.test"}
                      for i in _window(offset, limit)],
            "has_more": offset + limit < TOTAL_ITEMS,
            "offset": offset,
            "limit": limit,
            "total": TOTAL_ITEMS,
        })

    def events(self, q: dict[str, str]) -> None:
        page = _decode_cursor(q.get("cursor", ""))
        limit = _int(q, "limit", DEFAULT_PAGE_SIZE, minimum=1)
        start = (page - 1) * limit
        more = start + limit < TOTAL_ITEMS
        self._send(200, {
            "events": [{"id": i, "type": ("created", "updated", "deleted")[i % 3], "name": f"Event {i}"}
                       for i in _window(start, limit)],
            "next_cursor": _encode_cursor(page + 1) if more else None,
        })

    def flaky(self, q: dict[str, str]) -> None:
        page, size = _page(q)
        fail_on = set()
        for part in q.get("fail_on", "").split(","):
            if part.strip():
                try:
                    fail_on.add(int(part))
                except ValueError:
                    raise BadRequest(f"'fail_on' must list page numbers, got {q['fail_on']!r}") from None
        with self.server.lock:
            self.server.flaky[page] += 1
            attempt = self.server.flaky[page]
        if page in fail_on and attempt == 1:
            return self._send(500, {"error": "internal_error", "message": f"simulated failure on page {page}",
                                    "page": page, "attempt": attempt})
        start = (page - 1) * size
        self._send(200, {
            "data": [_assessment(i) for i in _window(start, size)],
            "paging": {"hasMore": start + size < TOTAL_ITEMS, "page": page, "pageSize": size},
        })

    def flaky_reset(self, q: dict[str, str]) -> None:
        with self.server.lock:
            self.server.flaky.clear()
        self._send(200, {"status": "reset"})

    def rate_limited(self, q: dict[str, str]) -> None:
        page, _size = _page(q)
        with self.server.lock:
            self.server.limited[page] += 1
            attempt = self.server.limited[page]
        if attempt == 1:
            return self._send(429, {"error": "rate_limited", "message": "too many requests",
                                    "retry_after": RETRY_AFTER_S},
                              headers={"Retry-After": str(RETRY_AFTER_S)})
        self.assessments(q)

    def rate_limited_reset(self, q: dict[str, str]) -> None:
        with self.server.lock:
            self.server.limited.clear()
        self._send(200, {"status": "reset"})

    def errors(self, q: dict[str, str]) -> None:
        kind = q.get("error_type", "")
        status, code, message = _ERRORS.get(kind, (400, "bad_request", f"unknown error_type {kind!r}"))
        headers = {"Retry-After": str(RETRY_AFTER_S)} if status == 429 else None
        if status == 401:
            headers = {"WWW-Authenticate": 'Bearer realm="test"'}
        self._send(status, {"error": code, "message": message, "error_type": kind}, headers=headers)

    def heavy(self, q: dict[str, str]) -> None:
        page, size = _page(q)
        kb = _int(q, "payload_kb", DEFAULT_PAYLOAD_KB, minimum=0)
        start = (page - 1) * size
        items = [{**_assessment(i), "category": ("a", "b", "c")[i % 3], "payload": "x" * (kb * 1024)}
                 for i in _window(start, size)]
        self._send(200, {
            "data": items,
            "paging": {"hasMore": start + size < TOTAL_ITEMS, "page": page, "pageSize": size},
            "meta": {"payload_kb": kb, "page_bytes": kb * 1024 * len(items)},
        })

    def probe(self, q: dict[str, str]) -> None:
        try:
            delay = min(max(float(q.get("delay_seconds") or 0), 0.0), MAX_PROBE_DELAY_S)
        except ValueError:
            raise BadRequest(f"'delay_seconds' must be a number, got {q['delay_seconds']!r}") from None
        probes = self.server.probes
        with self.server.lock:
            probes["started"] += 1
            probes["active"] += 1
            probes["max_active"] = max(probes["max_active"], probes["active"])
        try:
            time.sleep(delay)
        finally:
            with self.server.lock:
                probes["active"] -= 1
                probes["completed"] += 1
        self._send(200, {"status": "ok", "delay_seconds": delay, "label": q.get("label", "")})

    def probe_stats(self, q: dict[str, str]) -> None:
        with self.server.lock:
            stats = {k: self.server.probes[k] for k in ("started", "completed", "active", "max_active")}
        self._send(200, stats)

    def probe_reset(self, q: dict[str, str]) -> None:
        with self.server.lock:
            self.server.probes.clear()
        self._send(200, {"status": "reset"})

    # ------------------------------------------------------------------ NoETL's PFT patient endpoints

    def _pft_admitted(self) -> bool:
        if self.server.pft_rate.admit():
            return True
        self._send(429, {"detail": "Too Many Requests"}, headers={"Retry-After": str(RETRY_AFTER_S)})
        return False

    def _patient_id(self, q: dict[str, str]) -> str:
        patient = q.get("patientId", "")
        if not patient:
            raise BadRequest("'patientId' is required")
        return patient

    def _patient_pages(self, q: dict[str, str]) -> None:
        if not self._pft_admitted():
            return
        data_type = urlsplit(self.path).path.rstrip("/").rsplit("/", 1)[1]
        body = pft_patients.patient_page(data_type, self._patient_id(q), _int(q, "page", 1, minimum=1))
        if body is None:
            return self._send(404, {"error": "page not found"})
        self._send(200, body)

    def patient_demographics(self, q: dict[str, str]) -> None:
        if self._pft_admitted():
            self._send(200, pft_patients.demographics(self._patient_id(q)))

    def mds_assessment(self, q: dict[str, str]) -> None:
        if self._pft_admitted():
            self._send(200, pft_patients.mds_assessment(urlsplit(self.path).path.rstrip("/")[len(_MDS_ASSESSMENT):]))

    def pft_batch(self, q: dict[str, str]) -> None:
        try:
            ids = pft_patients.batch_patient_ids(q.get("patientIds", ""))
            answer = pft_patients.batch(urlsplit(self.path).path.rstrip("/")[len(_PFT_BATCH):], ids,
                                        _int(q, "pageSize", 10, minimum=1), _int(q, "patientsPerFacility", 1000, minimum=1))
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        self._send(200, answer)

    def pft_mds_details(self, q: dict[str, str]) -> None:
        if not self._pft_admitted():
            return
        assessment = q.get("assessmentId", "").strip()
        if not assessment or "," in assessment:
            raise BadRequest("assessmentId must contain exactly one assessment id")
        self._send(200, pft_patients.mds_details(assessment))


_MDS_ASSESSMENT = "/api/v1/mds/assessment/"
_PFT_BATCH = "/api/v1/pft/batch/"

def _seconds(q: dict[str, str], name: str, default: float) -> float:
    raw = q.get(name, "")
    try:
        return default if raw == "" else float(raw)
    except ValueError:
        raise BadRequest(f"'{name}' must be a number of seconds, got {raw!r}") from None


def _patient_records(handler: _Handler, q: dict[str, str]) -> None:
    patient = q.get("patientId", "")
    if not patient:
        raise BadRequest("'patientId' is required")
    if not handler.server.records_rate.admit(_int(q, "rate_limit", noetl_load_api.RECORDS_RATE_LIMIT, minimum=0)):
        return handler._send(429, {"error": "Too Many Requests", "message": "Rate limit exceeded"},
                             headers={"Retry-After": str(RETRY_AFTER_S)})
    low_default, high_default = noetl_load_api.RECORDS_DELAY_S
    low, high = _seconds(q, "min_delay", low_default), _seconds(q, "max_delay", high_default)
    delay = random.uniform(low, high)
    time.sleep(delay)
    page, size = _int(q, "page", 1, minimum=1), _int(q, "pageSize", 10, minimum=1)
    kb = _int(q, "payload_kb", -1, minimum=-1)
    host = f"http://{handler.headers.get('Host') or '127.0.0.1'}"
    handler._send(*noetl_load_api.patient_records(host, patient, page, size, None if kb < 0 else kb, delay))


def _chain_items(handler: _Handler, q: dict[str, str]) -> None:
    def number(name: str, default: int) -> int:  # any integer: NoETL's server clamps them
        return _int(q, name, default, minimum=-(2**63))
    handler._send(200, noetl_load_api.chain_items(
        number("page", 1), number("pageSize", 25), number("total", noetl_load_api.CHAIN_TOTAL_ITEMS),
        number("payload_kb", 1), q.get("ref_mode", "linked"), number("chain_window", 2)))


_ROUTES = {
    ("GET", "/api/v1/patient-records"): _patient_records,
    ("GET", "/api/v1/reference-chain/items"): _chain_items,
    ("GET", "/api/v1/assessments"): _Handler.assessments,
    ("GET", "/api/v1/users"): _Handler.users,
    ("GET", "/api/v1/events"): _Handler.events,
    ("GET", "/api/v1/flaky"): _Handler.flaky,
    ("POST", "/api/v1/flaky/reset"): _Handler.flaky_reset,
    ("GET", "/api/v1/rate-limited"): _Handler.rate_limited,
    ("POST", "/api/v1/rate-limited/reset"): _Handler.rate_limited_reset,
    ("GET", "/api/v1/errors"): _Handler.errors,
    ("GET", "/api/v1/heavy"): _Handler.heavy,
    ("GET", "/api/v1/concurrency/probe"): _Handler.probe,
    ("GET", "/api/v1/concurrency/stats"): _Handler.probe_stats,
    ("POST", "/api/v1/concurrency/reset"): _Handler.probe_reset,
    **{("GET", f"/api/v1/patient/{kind}"): _Handler._patient_pages for kind in pft_patients.PAGE_BOUNDS},
    ("GET", "/api/v1/patient/demographics"): _Handler.patient_demographics,
    ("GET", "/api/v1/pft/mds/details"): _Handler.pft_mds_details,
}


class PaginatedAPIServer(LoopbackServer):
    """Start/stop the paginated test server on a free port of 127.0.0.1 (also a context manager)."""

    server_class = _Server
    name = "paginated-api"

    def hits(self, path: str) -> int:
        assert self._server is not None
        with self._server.lock:
            return self._server.hits[path]

    def reset(self) -> None:
        """Clear the flaky and rate-limit counters (and the hit counts)."""
        assert self._server is not None
        with self._server.lock:
            self._server.flaky.clear()
            self._server.limited.clear()
            self._server.probes.clear()
            self._server.hits.clear()
