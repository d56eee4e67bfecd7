"""Load on the API: 200 concurrent ``POST /executions`` of a small playbook against
``noetl-temporal dev`` (a real subprocess on loopback) while a stream of status and events
reads runs beside them; no 5xx, and the latency and throughput figures are printed
(``docs/durability.md`` records them). And two ``noetl-temporal run`` at once on the same
data directory both succeed (they share its SQLite stores)."""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time

import httpx
import pytest

from .workers import REPO, DevProcess

pytestmark = [pytest.mark.temporal, pytest.mark.chaos]

CONCURRENT = 200
SMALL = """
workflow:
  - step: start
    tool: {kind: noop, result: "{{ workload.n * 2 }}"}
    next: {arcs: [{step: done}]}
  - step: done
    tool: {kind: noop, result: "{{ start + 1 }}"}
"""


def _percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


async def _reader(client: httpx.AsyncClient, ids: list[str], stop: asyncio.Event, codes: list[int]) -> int:
    """Status and events reads of the executions started so far, until told to stop."""
    reads = 0
    while not stop.is_set():
        for execution_id in list(ids[-20:]):
            for path in ("status", "events"):
                response = await client.get(f"/executions/{execution_id}/{path}")
                codes.append(response.status_code)
                reads += 1
        await asyncio.sleep(0.01)
    return reads


async def _load(url: str) -> dict:
    limits = httpx.Limits(max_connections=CONCURRENT, max_keepalive_connections=CONCURRENT)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        ids: list[str] = []
        codes: list[int] = []
        latencies: list[float] = []
        stop = asyncio.Event()
        reader = asyncio.ensure_future(_reader(client, ids, stop, codes))

        async def post(n: int) -> None:
            started = time.perf_counter()
            response = await client.post("/executions", json={"playbook": SMALL, "payload": {"n": n}})
            latencies.append(time.perf_counter() - started)
            codes.append(response.status_code)
            if response.status_code == 202:
                ids.append(response.json()["execution_id"])

        began = time.perf_counter()
        await asyncio.gather(*(post(n) for n in range(CONCURRENT)))
        accepted = time.perf_counter() - began
        pending = set(ids)
        deadline = time.monotonic() + 150
        while pending and time.monotonic() < deadline:
            for execution_id in list(pending):
                status = await client.get(f"/executions/{execution_id}/status")
                codes.append(status.status_code)
                if status.status_code == 200 and status.json()["state"] not in ("PENDING", "RUNNING"):
                    pending.discard(execution_id)
            await asyncio.sleep(0.2)
        finished = time.perf_counter() - began
        stop.set()
        reads = await reader
        sample = await client.get(f"/executions/{ids[0]}")
        return {"ids": ids, "codes": codes, "latencies": latencies, "accepted_s": accepted,
                "finished_s": finished, "pending": pending, "reads": reads, "sample": sample.json()}


def test_200_concurrent_starts_and_reads_get_no_5xx(tmp_path):
    with DevProcess(tmp_path) as dev:
        out = asyncio.run(_load(dev.url))
    server_errors = [c for c in out["codes"] if c >= 500]
    assert server_errors == []
    assert len(out["ids"]) == CONCURRENT and not out["pending"]
    assert out["sample"]["state"] == "COMPLETED" and out["sample"]["steps"]["done"]["status"] == "COMPLETED"
    p50, p95 = _percentile(out["latencies"], 50), _percentile(out["latencies"], 95)
    print(f"\nAPI load: {CONCURRENT} concurrent POST /executions: p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms; "
          f"all accepted in {out['accepted_s']:.1f}s ({CONCURRENT / out['accepted_s']:.0f} starts/s); "
          f"all COMPLETED in {out['finished_s']:.1f}s ({CONCURRENT / out['finished_s']:.1f} executions/s); "
          f"{out['reads']} status/events reads beside them; no 5xx")


def test_two_runs_at_once_share_the_default_data_directory(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NOETL_") and k not in ("TEMPORAL_ADDRESS", "TEMPORAL_PROFILE")}
    env.update(PYTHONPATH=str(REPO), XDG_DATA_HOME=str(tmp_path))
    argv = [sys.executable, "-m", "noetl_temporal.cli", "run", str(REPO / "examples" / "hello.yaml"), "--json"]
    runs = [subprocess.Popen([*argv, "--set", f"name=run{i}"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for i in range(2)]
    outputs = [run.communicate(timeout=180) for run in runs]
    for run, (stdout, stderr) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, stderr[-2000:]
        assert '"state": "COMPLETED"' in stdout
    assert (tmp_path / "noetl-temporal" / "events.db").exists()   # both wrote the one shared store
