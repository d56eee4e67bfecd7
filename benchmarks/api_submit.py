"""Starting executions through the REST API against bare ``client.start_workflow`` calls.

    python -m benchmarks.api_submit [--executions 200] [--in-flight 50] [--rounds 3] [--address HOST:PORT]

Two processes of the CLI, as a deployment runs them: ``noetl-temporal worker`` and
``noetl-temporal api`` (no ``--worker``), on a dev server (an embedded one unless
``--address``). This process then starts ``--executions`` runs of ``examples/hello.yaml``,
``--in-flight`` at a time, two ways, round after round, the two sides alternating which
goes first:

- **api**: ``POST /executions`` with the playbook's YAML inline (what a client of the
  service sends), over ``--in-flight`` keep-alive connections opened before each round, by
  a minimal hand-written HTTP/1.1 client (httpx spent more CPU per request than the API);
- **bare**: ``client.start_workflow`` from this process, with the very request the API
  makes (the same workflow input, id scheme, summary, details and memo), built once: the
  floor for a start, without HTTP, parsing or validation.

Both sides' executions run on the same worker, and each round waits until the worker has
finished the previous round's executions, so each side starts its runs against the same
load. Per side: starts per second (executions over the time from the first request to the
last answer, median over rounds) and the p50 and p95 of a start's latency (request to
answer, over every start of every round). Target (issue 30): the API within 1.2 times the
bare starts on rate and on p95.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from .cpu import tree_cpu

ROOT = Path(__file__).resolve().parents[1]
HELLO = ROOT / "examples" / "hello.yaml"
TARGET = 1.2  # issue 30: the API within this factor of bare starts (rate and p95)
SIDES = ("api", "bare")

__all__ = ["run", "measure", "markdown", "main", "TARGET"]


def _percentile(xs: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) by the nearest-rank rule."""
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


class _Child:
    """A CLI process of ours; ``ready`` is a pattern it prints on ``stream`` once it serves."""

    def __init__(self, args: list[str], ready: str, env: dict[str, str], name: str, stream: str) -> None:
        self.args, self.ready, self.env, self.name, self.stream = args, re.compile(ready), env, name, stream
        self.proc: subprocess.Popen | None = None
        self.seen: list[str] = []

    async def start(self, timeout: float = 60.0) -> re.Match:
        pipes = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, self.stream: subprocess.PIPE}
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, env=self.env, cwd=ROOT, text=True, **pipes)
        out = getattr(self.proc, self.stream)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = await asyncio.wait_for(asyncio.to_thread(out.readline), deadline - time.monotonic())
            if not line:
                break
            self.seen.append(line)
            match = self.ready.search(line)
            if match:  # the rest is drained, so a chatty child never blocks on a full pipe
                threading.Thread(target=out.read, daemon=True).start()
                return match
        self.stop()
        raise RuntimeError(f"the {self.name} process did not start (exit code {self.proc.returncode}): "
                           + "".join(self.seen[-5:]))

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()  # our own child, by its pid: SIGTERM stops the CLI cleanly
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def _bare_starter(client: Any, text: str, queue: str, api_url: str):
    """``start(id)``: one ``client.start_workflow`` with exactly the API's request, built once."""
    from datetime import timedelta

    from noetl_temporal.client.control import search_attributes_available
    from noetl_temporal.dsl import load_playbook_text
    from noetl_temporal.dsl.models import playbook_definition
    from noetl_temporal.engine import behaviours
    from noetl_temporal.workflow import labels
    from noetl_temporal.workflow.types import WORKFLOW_NAME, RunInput

    playbook = load_playbook_text(text, "<request>").playbook
    definition = playbook_definition(playbook)
    timeout = playbook.executor.spec.timeout_s
    static = {"static_summary": labels.summary(definition, "inline"), "memo": labels.memo(definition, "inline"),
              "execution_timeout": timedelta(seconds=timeout) if timeout else None}
    if await search_attributes_available(client):  # as the API asks, once
        static["search_attributes"] = labels.search_attributes(definition, "inline")

    async def start(execution_id: str) -> None:
        inp = RunInput(execution_id=execution_id, playbook=definition, payload={}, source="inline",
                       heartbeat_timeout_s=10.0, behaviours=list(behaviours.CURRENT))
        details = labels.details(definition, source="inline", version=None,
                                 api_url=f"{api_url.rstrip('/')}/executions/{execution_id}")
        await client.start_workflow(WORKFLOW_NAME, inp, id=execution_id, task_queue=queue,
                                    static_details=details, **static)

    return start


class _Http:
    """A pool of keep-alive HTTP/1.1 connections that POST one JSON body and read the answer.

    Hand-written on asyncio streams on purpose: httpx spent about 4 ms of this process's
    CPU per request (more than the API itself), so the benchmark measured its own client.
    A load generator (wrk, hey) costs next to nothing per request; so does this."""

    def __init__(self, url: str, size: int) -> None:
        host, _, port = url.removeprefix("http://").rstrip("/").partition(":")
        self.host, self.port, self.size = host, int(port), size
        self.idle: asyncio.Queue = asyncio.Queue()
        self.made = 0

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.idle.empty() and self.made < self.size:
            self.made += 1
            self.idle.put_nowait(await asyncio.open_connection(self.host, self.port))
        reader, writer = await self.idle.get()
        try:
            writer.write(f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: application/json"
                         f"\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
            status = int((await reader.readline()).split()[1])
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            answer = await reader.readexactly(length)
        except BaseException:
            writer.close()
            self.made -= 1
            raise
        self.idle.put_nowait((reader, writer))
        return status, answer

    async def reopen(self) -> None:
        """Fresh connections, all ``size`` of them, before a timed round: the API closes a
        connection idle for 5 s (uvicorn's keep-alive timeout), as between rounds."""
        await self.aclose()
        for _ in range(self.size):
            self.idle.put_nowait(await asyncio.open_connection(self.host, self.port))
        self.made = self.size

    async def aclose(self) -> None:
        while not self.idle.empty():
            _, writer = self.idle.get_nowait()
            writer.close()
        self.made = 0


async def _side_round(side: str, n: int, in_flight: int, api: _Http, bare: Any,
                      text: str) -> tuple[float, list[float], list[str]]:
    """(seconds, latencies, execution ids) of ``n`` starts, ``in_flight`` at a time."""
    from noetl_temporal.workflow.naming import new_execution_id

    gate = asyncio.Semaphore(in_flight)
    body = json.dumps({"playbook": text}).encode()
    latencies: list[float] = []
    ids: list[str] = []

    async def one() -> None:
        async with gate:
            t0 = time.perf_counter()
            if side == "api":
                status, answer = await api.post("/executions", body)
                if status != 202:
                    raise RuntimeError(f"POST /executions answered {status}: {answer[:300]!r}")
                execution_id = json.loads(answer)["execution_id"]
            else:
                execution_id = new_execution_id("hello")
                await bare(execution_id)
            latencies.append(time.perf_counter() - t0)
            ids.append(execution_id)

    t0 = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    return time.perf_counter() - t0, latencies, ids


async def _wait_closed(client: Any, ids: list[str], timeout: float = 600.0) -> None:
    """Until every execution has closed (a failed one is an error: the worker must run them)."""
    from temporalio.client import WorkflowExecutionStatus

    gate = asyncio.Semaphore(50)

    async def one(execution_id: str) -> None:
        async with gate:
            handle = client.get_workflow_handle(execution_id)
            deadline = time.monotonic() + timeout
            while True:
                desc = await handle.describe()
                if desc.status not in (None, WorkflowExecutionStatus.RUNNING):
                    if desc.status != WorkflowExecutionStatus.COMPLETED:
                        raise RuntimeError(f"execution {execution_id} ended {desc.status.name}")
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"execution {execution_id} still running after {timeout:.0f} s")
                await asyncio.sleep(0.5)

    await asyncio.gather(*(one(i) for i in ids))


async def measure(address: str, *, executions: int = 200, in_flight: int = 50, rounds: int = 3,
                  warmup: int = 10, scratch: Path | None = None, profile: Path | None = None) -> dict[str, Any]:
    """Start the worker and the API as CLI processes on ``address``, and time both sides."""
    from noetl_temporal.client.connect import Target, connect

    scratch = scratch or Path(tempfile.mkdtemp(prefix="noetl-api-bench-"))
    scratch.mkdir(parents=True, exist_ok=True)
    queue = f"bench-api-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, NOETL_STORE=scratch.as_uri(),
               NOETL_CATALOG_PATH=str(scratch / "catalog.db"))
    env.pop("NOETL_API_TOKEN", None)
    cli = [sys.executable, "-m", "noetl_temporal.cli"]
    worker = _Child([*cli, "worker", "--address", address, "--task-queue", queue], r"worker polling", env,
                    "worker", "stderr")
    api = _Child([*cli, "api", "--address", address, "--task-queue", queue, "--port", "0"],
                 r"API: (http://\S+)", env, "api", "stdout")
    text = HELLO.read_text(encoding="utf-8")
    samples: dict[str, dict[str, list]] = {s: {"seconds": [], "latencies": [], "cpu": [], "client_cpu": []}
                                           for s in SIDES}
    spy: subprocess.Popen | None = None
    try:
        await worker.start()
        url = (await api.start()).group(1)
        if profile:  # py-spy samples the API process (a diagnostic: it costs the API some CPU)
            spy = subprocess.Popen(["py-spy", "record", "--format", "raw", "--rate", "250", "-o", str(profile),
                                    "--pid", str(api.proc.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = await connect(Target(address=address, task_queue=queue))
        bare = await _bare_starter(client, text, queue, url)
        http = _Http(url, in_flight)
        try:
            for side in SIDES:  # warm-up: connections, first-request imports, the worker's first runs
                await http.reopen()
                _, _, ids = await _side_round(side, warmup, in_flight, http, bare, text)
                await _wait_closed(client, ids)
            load0 = os.getloadavg()
            for r in range(rounds):
                for side in SIDES if r % 2 == 0 else SIDES[::-1]:
                    await http.reopen()
                    # CPU of the API process, and of this one (the HTTP client, or the bare starts)
                    api0, own0 = tree_cpu(api.proc.pid), time.process_time()
                    seconds, latencies, ids = await _side_round(side, executions, in_flight, http, bare, text)
                    samples[side]["cpu"].append(tree_cpu(api.proc.pid) - api0)
                    samples[side]["client_cpu"].append(time.process_time() - own0)
                    samples[side]["seconds"].append(seconds)
                    samples[side]["latencies"].extend(latencies)
                    await _wait_closed(client, ids)
        finally:
            await http.aclose()
    finally:
        api.stop()
        worker.stop()
        if spy is not None:
            spy.wait(timeout=60)  # it writes its samples once the API has exited
    out: dict[str, Any] = {"executions": executions, "in_flight": in_flight, "rounds": rounds,
                           "load_average": [load0, os.getloadavg()], "cpus": os.cpu_count()}
    for side, got in samples.items():
        lat = got["latencies"]
        out[side] = {"seconds": got["seconds"], "rate": statistics.median(executions / s for s in got["seconds"]),
                     "p50": _percentile(lat, 0.50), "p95": _percentile(lat, 0.95), "max": max(lat),
                     "api_cpu_per_start": sum(got["cpu"]) / (executions * rounds),
                     "client_cpu_per_start": sum(got["client_cpu"]) / (executions * rounds)}
    out["rate_ratio"] = out["bare"]["rate"] / out["api"]["rate"]  # above 1: the API starts fewer per second
    out["p95_ratio"] = out["api"]["p95"] / out["bare"]["p95"]
    return out


def markdown(result: dict[str, Any]) -> str:
    if result.get("error"):
        return f"API submission (`benchmarks.api_submit`): error: {result['error'][:300]}\n"
    load = ", ".join(f"{x:.1f}" for x in result["load_average"][-1])
    lines = [f"Starting {result['executions']} executions of `examples/hello.yaml`, {result['in_flight']} in "
             f"flight, {result['rounds']} round(s) per side (load average at the end {load}):", "",
             "| side | starts/s (median) | p50 | p95 | max | CPU ms per start: API / client |",
             "|---|---|---|---|---|---|"]
    for side, title in (("api", "`POST /executions` (API process)"), ("bare", "bare `client.start_workflow`")):
        s = result[side]
        lines.append(f"| {title} | {s['rate']:.0f} | {s['p50'] * 1000:.0f} ms | {s['p95'] * 1000:.0f} ms | "
                     f"{s['max'] * 1000:.0f} ms | {s['api_cpu_per_start'] * 1000:.1f} / "
                     f"{s['client_cpu_per_start'] * 1000:.1f} |")
    ok = result["rate_ratio"] <= TARGET and result["p95_ratio"] <= TARGET
    lines += ["", f"API / bare: rate {result['rate_ratio']:.2f}× slower, p95 {result['p95_ratio']:.2f}× "
              f"(target ≤ {TARGET}×: {'met' if ok else 'missed'}). CPU per start: of the API process, and of "
              "the benchmark's process (the HTTP client for the API, the Temporal client for the bare starts)."]
    return "\n".join(lines) + "\n"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.address:
        return await measure(args.address, executions=args.executions, in_flight=args.in_flight, rounds=args.rounds,
                             profile=args.profile_api)
    from noetl_temporal.client.devserver import EmbeddedTemporal

    async with EmbeddedTemporal() as server:
        return await measure(server.address, executions=args.executions, in_flight=args.in_flight,
                             rounds=args.rounds, profile=args.profile_api)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.api_submit", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--executions", type=int, default=200, help="starts per side and round (default 200)")
    parser.add_argument("--in-flight", type=int, default=50, help="starts outstanding at once (default 50)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side (default 3)")
    parser.add_argument("--address", default=None, help="a running Temporal frontend (default: an embedded dev server)")
    parser.add_argument("--profile-api", type=Path, default=None, metavar="FILE",
                        help="run the API under py-spy (must be installed) and write its samples to FILE "
                             "(collapsed stacks, for a flame graph); the figures are then not comparable")
    args = parser.parse_args(argv)
    for name in ("executions", "in_flight", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    from noetl_temporal.hosting.runtime import install_runtime

    install_runtime()
    result = asyncio.run(run(args))
    print(markdown(result))
    sys.stdout.flush()
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    os._exit(0)  # skip interpreter finalization: the SDK runtime's threads may still run


if __name__ == "__main__":
    main()
