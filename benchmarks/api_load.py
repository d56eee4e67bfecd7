"""A thousand concurrent requests at the served API, of the kinds users make.

    python -m benchmarks.api_load [--requests 1000] [--address HOST:PORT] [--rounds 1]

Two processes of the CLI, as a deployment runs them: ``noetl-temporal worker`` and
``noetl-temporal api`` (no ``--worker``), on a dev server (an embedded one unless
``--address``). Before the burst a few executions are started and a playbook registered,
so the reads have something to read. Then ``--requests`` requests are sent at once, each
on its own connection, a quarter of each kind:

- ``POST /executions`` of a one-step noop playbook, inline;
- ``GET /executions/{id}`` of one of the executions started before (some finished, some not);
- ``GET /executions`` (the first page);
- ``GET /catalog``.

Reported: the answers by status (and whether a 429/503 said ``Retry-After``), p50, p99 and
the largest latency (connect to the answer's last byte) per kind and overall, the slowest
error, and the load average. docs/performance.md ("The API under a burst") has the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from .api_submit import _Child, _percentile
from .cpu import tree_cpu

SMALL = """\
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: tiny, path: bench/tiny}
workflow:
  - step: start
    tool: {kind: noop, result: "{{ workload.n | default(1) }}"}
"""

#: half of the detail reads are of executions still running (a task sleeping), which the
#: worker answers by query; the other half of closed ones, read from their output
SLOW = """\
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: slow, path: bench/slow}
workflow:
  - step: start
    tool: {kind: shell, cmd: "sleep 120"}
"""

KINDS = ("start", "detail", "list", "catalog")

__all__ = ["burst", "measure", "markdown", "main", "request", "SMALL", "KINDS"]


async def request(host: str, port: int, method: str, path: str, body: bytes | None = None,
                  timeout: float = 120.0) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 request on its own connection: (status, headers, body).

    Hand-written on asyncio streams, like ``api_submit``'s client: a thousand httpx requests
    cost this process more CPU than the API spends on them, and the point is the API's time."""
    async def go() -> tuple[int, dict[str, str], bytes]:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            head = f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n"
            if body is not None:
                head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            writer.write(head.encode() + b"\r\n" + (body or b""))
            status = int((await reader.readline()).split()[1])
            headers: dict[str, str] = {}
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            if "content-length" in headers:
                answer = await reader.readexactly(int(headers["content-length"]))
            else:
                answer = await reader.read()
            return status, headers, answer
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    return await asyncio.wait_for(go(), timeout)


async def burst(url: str, ids: list[str], n: int, timeout: float = 120.0,
                kinds: tuple[str, ...] = KINDS, page_size: int = 20) -> list[dict[str, Any]]:
    """``n`` requests at once, the kinds in turn; one record per request."""
    host, _, port = url.removeprefix("http://").rstrip("/").partition(":")
    start_body = json.dumps({"playbook": SMALL, "payload": {"n": 2}}).encode()
    gate = asyncio.Event()

    async def one(i: int) -> dict[str, Any]:
        kind = kinds[i % len(kinds)]
        method, path, body = {
            "start": ("POST", "/executions", start_body),
            "detail": ("GET", f"/executions/{ids[i % len(ids)]}", None),
            "list": ("GET", f"/executions?page_size={page_size}", None),
            "catalog": ("GET", "/catalog", None),
        }[kind]
        await gate.wait()
        t0 = time.perf_counter()
        try:
            status, headers, answer = await request(host, int(port), method, path, body, timeout)
            error = None if status < 400 else answer[:300].decode("utf-8", "replace")
        except Exception as exc:   # no answer at all: counted as such, never dropped
            status, headers, error = 0, {}, f"{type(exc).__name__}: {exc}"[:300]
        return {"kind": kind, "status": status, "seconds": time.perf_counter() - t0,
                "retry_after": headers.get("retry-after"), "error": error}

    tasks = [asyncio.create_task(one(i)) for i in range(n)]
    await asyncio.sleep(0.1)
    gate.set()
    return list(await asyncio.gather(*tasks))


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"statuses": dict(collections.Counter(r["status"] for r in records)), "kinds": {}}
    for kind in (*KINDS, "all"):
        rows = [r for r in records if kind in ("all", r["kind"])]
        if not rows:
            continue
        lat = [r["seconds"] for r in rows]
        out["kinds"][kind] = {"n": len(rows), "p50": _percentile(lat, 0.5), "p99": _percentile(lat, 0.99),
                              "max": max(lat), "statuses": dict(collections.Counter(r["status"] for r in rows))}
    bad = [r for r in records if r["status"] >= 500 or r["status"] in (0, 429)]
    out["refused_with_retry_after"] = sum(1 for r in bad if r["retry_after"])
    out["slowest_error"] = max(bad, key=lambda r: r["seconds"]) if bad else None
    out["errors"] = collections.Counter(r["error"][:160] for r in bad if r["error"]).most_common(5)
    return out


async def prepare(url: str, n_ids: int = 20) -> list[str]:
    """Executions for the detail reads (started, some left to finish) and a catalog entry."""
    host, _, port = url.removeprefix("http://").rstrip("/").partition(":")
    status, _, answer = await request(host, int(port), "POST", "/catalog", json.dumps({"content": SMALL}).encode())
    if status not in (200, 201):
        raise RuntimeError(f"POST /catalog answered {status}: {answer[:300]!r}")
    ids = []
    for i in range(n_ids):
        status, _, answer = await request(host, int(port), "POST", "/executions",
                                          json.dumps({"playbook": SLOW if i % 2 else SMALL}).encode())
        if status != 202:
            raise RuntimeError(f"POST /executions answered {status}: {answer[:300]!r}")
        ids.append(json.loads(answer)["execution_id"])
    return ids


async def measure(address: str, *, requests: int = 1000, rounds: int = 1, worker_in_api: bool = False,
                  kinds: tuple[str, ...] = KINDS, executions: int = 20, page_size: int = 20) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="noetl-api-load-"))
    queue = f"bench-load-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, NOETL_STORE=scratch.as_uri(),
               NOETL_CATALOG_PATH=str(scratch / "catalog.db"))
    env.pop("NOETL_API_TOKEN", None)
    cli = [sys.executable, "-m", "noetl_temporal.cli"]
    worker = _Child([*cli, "worker", "--address", address, "--task-queue", queue], r"worker polling", env,
                    "worker", "stderr")
    api = _Child([*cli, "api", "--address", address, "--task-queue", queue, "--port", "0",
                  *(["--worker"] if worker_in_api else [])],
                 r"API: (http://\S+)", env, "api", "stdout")
    results = []
    try:
        if not worker_in_api:
            await worker.start()
        url = (await api.start()).group(1)
        ids = await prepare(url, executions)
        for _ in range(rounds):
            load0 = os.getloadavg()
            t0, cpu0 = time.perf_counter(), tree_cpu(api.proc.pid)
            records = await burst(url, ids, requests, kinds=kinds, page_size=page_size)
            summary = summarize(records)
            summary.update(seconds=time.perf_counter() - t0, load_average=[load0, os.getloadavg()],
                           api_cpu_s=tree_cpu(api.proc.pid) - cpu0)
            results.append(summary)
            await asyncio.sleep(5)
    finally:
        api.stop()
        worker.stop()
    return {"requests": requests, "rounds": results, "cpus": os.cpu_count(), "worker_in_api": worker_in_api}


def markdown(result: dict[str, Any]) -> str:
    lines = []
    for i, r in enumerate(result["rounds"], 1):
        load = ", ".join(f"{x:.1f}" for x in r["load_average"][0])
        lines += [f"Round {i}: {result['requests']} requests at once, {r['seconds']:.1f} s in all, the API process's "
                  f"CPU {r['api_cpu_s']:.1f} s, load average before {load}; statuses {r['statuses']}", "",
                  "| request | n | p50 | p99 | max | statuses |", "|---|---|---|---|---|---|"]
        for kind, s in r["kinds"].items():
            lines.append(f"| {kind} | {s['n']} | {s['p50'] * 1000:.0f} ms | {s['p99'] * 1000:.0f} ms | "
                         f"{s['max'] * 1000:.0f} ms | {s['statuses']} |")
        if r["slowest_error"]:
            e = r["slowest_error"]
            lines += ["", f"refused or failed: {sum(v for k, v in r['statuses'].items() if k >= 500 or k in (0, 429))}"
                      f", {r['refused_with_retry_after']} with Retry-After; slowest {e['kind']} {e['status']} after "
                      f"{e['seconds']:.1f} s: {e['error']}", "", "most common: " + "; ".join(
                          f"{n}× {msg}" for msg, n in r["errors"])]
        lines.append("")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.address:
        return await measure(args.address, requests=args.requests, rounds=args.rounds,
                             worker_in_api=args.worker_in_api, kinds=tuple(args.kinds.split(",")),
                             executions=args.executions, page_size=args.page_size)
    from noetl_temporal.client.devserver import EmbeddedTemporal

    async with EmbeddedTemporal() as server:
        return await measure(server.address, requests=args.requests, rounds=args.rounds,
                             worker_in_api=args.worker_in_api, kinds=tuple(args.kinds.split(",")),
                             executions=args.executions, page_size=args.page_size)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.api_load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1000, help="requests sent at once (default 1000)")
    parser.add_argument("--rounds", type=int, default=1, help="bursts, 5 s apart (default 1)")
    parser.add_argument("--address", default=None, help="a running Temporal frontend (default: an embedded dev server)")
    parser.add_argument("--worker-in-api", action="store_true",
                        help="run the worker in the API's process (`api --worker`) instead of its own")
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help=f"the kinds of request, sent in turn (default {','.join(KINDS)})")
    parser.add_argument("--executions", type=int, default=20,
                        help="executions started before the burst, half of them left running (default 20)")
    parser.add_argument("--page-size", type=int, default=20, help="the list's page size (default 20)")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON too")
    args = parser.parse_args(argv)
    from noetl_temporal.hosting.runtime import install_runtime

    install_runtime()
    result = asyncio.run(run(args))
    print(markdown(result))
    if args.json:
        print(json.dumps(result, default=str))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter finalization: the SDK runtime's threads may still run


if __name__ == "__main__":
    main()
