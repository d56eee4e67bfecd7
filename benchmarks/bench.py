"""Benchmarks: noetl-temporal against a naive hand-written Temporal workflow.

    python -m benchmarks.bench [--quick]

Prints, per scenario, wall time for each and the ratio (naive / noetl; above 1 means
noetl-temporal is faster), plus the process's peak RSS. Both sides run on the same
embedded dev server, with a worker in this process, against a loopback HTTP server.
These are figures to compare, not pass/fail tests.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import sys
import tempfile
import time
import uuid

from temporalio.worker import Worker

from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.runner import run_with_client
from noetl_temporal.temporal.devserver import EmbeddedTemporal
from tests.support.http_server import HTTPTestServer

from .naive import NaiveChain, http_get, noop


def chain_playbook(n: int, kind: str, url: str) -> str:
    tool = f'{{kind: http, url: "{url}"}}' if kind == "http" else "{kind: noop}"
    steps = []
    for i in range(n):
        nxt = f"\n    next: {{arcs: [{{step: s{i + 1}}}]}}" if i + 1 < n else ""
        steps.append(f"  - step: s{i}\n    tool: {tool}{nxt}")
    return "workflow:\n" + "\n".join(steps)


def fanout_playbook(n: int, max_in_flight: int, url: str) -> str:
    return f"""
workflow:
  - step: fan
    loop: {{in: "{{{{ range({n}) | list }}}}", iterator: i, spec: {{mode: parallel, max_in_flight: {max_in_flight}}}}}
    tool: {{kind: http, url: "{url}"}}
"""


async def timed(coro) -> float:
    t0 = time.perf_counter()
    await coro
    return time.perf_counter() - t0


async def main(quick: bool) -> None:
    os.environ.setdefault("NOETL_EVENT_STORE", os.path.join(tempfile.mkdtemp(), "events.db"))
    n_chain = 20 if quick else 50
    n_noop = 50 if quick else 200
    n_fan = 50 if quick else 200
    with HTTPTestServer() as srv:
        url = srv.url("/json")
        async with EmbeddedTemporal() as env:
            client = env.client
            queue = f"bench-{uuid.uuid4().hex[:6]}"
            naive_queue = queue + "-naive"
            rows = []
            async with Worker(client, task_queue=naive_queue, workflows=[NaiveChain], activities=[http_get, noop]):
                scenarios = [
                    ("sequential http steps", n_chain, chain_playbook(n_chain, "http", url),
                     {"kind": "http", "n": n_chain, "url": url}),
                    ("sequential noop steps", n_noop, chain_playbook(n_noop, "noop", url),
                     {"kind": "noop", "n": n_noop}),
                    ("parallel http loop (50 in flight)", n_fan, fanout_playbook(n_fan, 50, url),
                     {"kind": "fanout", "n": n_fan, "url": url, "max_in_flight": 50}),
                ]
                for name, n, text, spec in scenarios:
                    playbook = load_playbook_text(text).playbook
                    # warm both paths once (sandbox import, connection setup)
                    await run_with_client(client, playbook, task_queue=queue)
                    await client.execute_workflow("NaiveChain", spec, id=f"w-{uuid.uuid4().hex}", task_queue=naive_queue)
                    ours = await timed(run_with_client(client, playbook, task_queue=queue))
                    naive = await timed(client.execute_workflow("NaiveChain", spec, id=f"n-{uuid.uuid4().hex}",
                                                                task_queue=naive_queue))
                    rows.append((name, n, ours, naive))
    print(f"{'scenario':<36} {'n':>5} {'noetl s':>9} {'naive s':>9} {'ms/step noetl':>14} {'ratio':>7}")
    for name, n, ours, naive in rows:
        print(f"{name:<36} {n:>5} {ours:>9.3f} {naive:>9.3f} {ours / n * 1000:>14.1f} {naive / ours:>6.2f}x")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process (dev server excluded): {peak:.0f} MiB")
    gc.collect()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    asyncio.run(main(parser.parse_args().quick))
    sys.exit(0)
