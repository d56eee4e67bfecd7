"""What the first workflow activation of a big playbook costs, and a rebuild of it.

    python -m benchmarks.first_activation                  # chains and fan-outs of 1,000 and 10,000 steps
    python -m benchmarks.first_activation --sizes 1000,10000,20000

A workflow's first activation (and every rebuild of it: a query to an evicted or closed
workflow, a worker restart, a cache eviction) decodes the input, rebuilds the validated
playbook, analyses its step graph (joins, back-edges) and runs the engine's first input up
to its work budget. Temporal's deadlock detector fails an activation after 2 s. This runs
exactly that code path (``PlaybookWorkflow.run`` up to its first wait, without the SDK) in a
process whose heap holds what a CLI run's holds (the loaded playbook, the other cached
workflow), and reports wall time, the garbage collector's share of it, and how long the
graph analysis alone takes. Figures to compare, not pass/fail tests: on a loaded 2-core
machine multiply by about 2.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from typing import Any

from benchmarks.engine_scale import chain, fanout
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.dsl.models import playbook_definition, playbook_from_definition
from noetl_temporal.engine import progress
from noetl_temporal.engine.graph import StepGraph
from noetl_temporal.engine.machine import new_state, step
from noetl_temporal.engine.messages import Start
from noetl_temporal.workflow.definitions import prepare_playbook

NOW = "2026-01-01T00:00:00Z"


class GcClock:
    """Time spent in the garbage collector, and full (oldest generation) collections."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full = 0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.full += info["generation"] == 2

    def __enter__(self) -> GcClock:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        gc.callbacks.remove(self)


def _unprepared(definition: dict[str, Any]) -> tuple[Any, None]:
    """The shell before ``prepare_playbook``: validate, analyse lazily in the first input."""
    return playbook_from_definition(definition), None


PREPARE = prepare_playbook


def activation(encoded: bytes) -> tuple[float, GcClock, Any]:
    """One first activation: the input as the SDK's JSON converter hands it over, the
    playbook and its analysed graph, the engine's first input, the UI's current details."""
    with GcClock() as clock:
        started = time.perf_counter()
        playbook, graph = PREPARE(json.loads(encoded))
        state = new_state(playbook, "bench", graph=graph)
        step(state, Start(execution_id="bench", now=NOW))
        progress.describe(state)
        wall = time.perf_counter() - started
    return wall, clock, state


def analysis_only(text: str) -> float:
    playbook = load_playbook_text(text).playbook
    entry = playbook.workflow[0].step
    gc.disable()
    try:
        started = time.perf_counter()
        StepGraph(playbook, entry).analyse()
        return time.perf_counter() - started
    finally:
        gc.enable()


async def rebuild_on_temporal(n: int) -> None:
    """A noop chain of ``n`` steps on a dev server, then a query to the closed workflow: the
    worker rebuilds its last run from that run's history (every activation of the run again,
    the first one included) before it answers. Workflow tasks are counted over all runs."""
    import os
    import tempfile
    import uuid

    from noetl_temporal.client.devserver import EmbeddedTemporal
    from noetl_temporal.client.end_to_end import run_with_client
    from noetl_temporal.hosting.worker import build_worker

    from .task_durations import ActivationClock, describe, task_durations

    scratch = tempfile.mkdtemp(prefix="noetl-first-activation-")
    os.environ.setdefault("NOETL_STORE", scratch)
    playbook = load_playbook_text(chain(n)).playbook
    print(f"## dev server: {n:,}-step noop chain, then a query that rebuilds the closed workflow\n")
    print("| steps | run (s) | runs, history events | workflow tasks | failed tasks | activations | load (1 min) "
          "| rebuild by query (s) | answer |")
    print("|---:|---:|---:|---|---:|---|---:|---:|---|")
    async with EmbeddedTemporal() as env:
        queue = f"first-{uuid.uuid4().hex[:8]}"
        started = time.perf_counter()
        with ActivationClock() as clock:
            report = await run_with_client(env.client, playbook, task_queue=queue, execution_timeout_s=600,
                                           events_limit=0)
        wall = time.perf_counter() - started
        handle = env.client.get_workflow_handle(report.execution_id)
        spans, history, failed, runs = await task_durations(env.client, report.execution_id)
        load = os.getloadavg()[0]
        async with build_worker(env.client, task_queue=queue):
            started = time.perf_counter()
            try:
                answer = (await handle.query("status"))["state"]
            except Exception as exc:  # what a deadlocked rebuild answers
                answer = f"{type(exc).__name__}: {exc}"[:80]
            rebuild = time.perf_counter() - started
    print(f"| {n:,} | {wall:.1f} | {runs}, {history:,} | {describe(spans)} | {failed} | {clock.describe()} | {load:.1f} "
          f"| {rebuild:.1f} | {answer} |\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="playbook sizes (steps)")
    parser.add_argument("--unprepared", action="store_true",
                        help="the shell as it was: no cache, the graph analysed inside the first input")
    parser.add_argument("--temporal", type=int, metavar="STEPS",
                        help="also run a chain of STEPS on a dev server and rebuild it by a query")
    args = parser.parse_args()
    global PREPARE
    if args.unprepared:
        PREPARE = _unprepared
    print("## first activation and rebuild of big playbooks\n")
    print("| workload | steps | definition (KiB) | graph analysis (ms) | first activation (ms) | of it GC (ms) "
          "| rebuild (ms) | of it GC (ms) | full GCs |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, make in (("noop chain", chain), ("fan-out + join", lambda n: fanout(n, "noop"))):
        for n in (int(s) for s in args.sizes.split(",")):
            text = make(n)
            loaded = load_playbook_text(text).playbook   # a CLI run holds it for error locations
            encoded = json.dumps(playbook_definition(loaded)).encode()
            gc.collect()
            first, clock1, state = activation(encoded)
            rebuild, clock2, _ = activation(encoded)     # beside the first, as a worker's cache holds it
            print(f"| {label} | {n:,} | {len(encoded) // 1024:,} | {analysis_only(text) * 1e3:.0f} "
                  f"| {first * 1e3:.0f} | {clock1.seconds * 1e3:.0f} | {rebuild * 1e3:.0f} "
                  f"| {clock2.seconds * 1e3:.0f} | {clock1.full + clock2.full} |")
            del loaded, state
    print()
    if args.temporal:
        import asyncio
        asyncio.run(rebuild_on_temporal(args.temporal))


if __name__ == "__main__":
    main()
