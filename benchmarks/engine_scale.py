"""Engine cost against playbook and loop size, and worker memory on big loops.

    python -m benchmarks.engine_scale            # pure engine: 100 / 1,000 / 10,000 steps, loops
    python -m benchmarks.engine_scale --temporal # plus dev-server runs of 1k / 10k / 100k-item loops

Prints, per size, the engine's cost per input and the longest single input (what one
workflow activation spends in the engine; Temporal's deadlock detector fires at 2 s), and
with ``--temporal`` the wall time, peak RSS of this process (worker included) and history
length of parallel noop loops. Figures to compare, not pass/fail tests.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import tempfile
import threading
import time
import uuid
from typing import Any

from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.engine.envelopes import Outcome, TaskResult
from noetl_temporal.engine.machine import new_state, step
from noetl_temporal.engine.messages import Finish, Proceed, RunTask, Start, TaskFinished, Yield

NOW = "2026-01-01T00:00:00Z"


def chain(n: int, kind: str = "noop") -> str:
    tool = "{kind: noop, result: 1}" if kind == "noop" else "{kind: python, code: 'result = 1'}"
    lines = ["apiVersion: noetl.io/v2", "kind: Playbook", f"metadata: {{name: chain_{n}}}", "workflow:"]
    for i in range(n):
        nxt = f"\n    next: {{arcs: [{{step: s{i + 1}}}]}}" if i < n - 1 else ""
        lines.append(f"  - step: s{i}\n    tool: {tool}{nxt}")
    return "\n".join(lines) + "\n"


def fanout(n: int, kind: str = "python") -> str:
    """``n`` steps: one, an inclusive fan-out from it to ``n - 2`` steps, and the join they
    meet at, whose result is how many arrived (``n`` step runs:
    ``executor.spec.max_step_runs`` allows 10,000)."""
    n -= 2
    tool = "{kind: noop, result: 1}" if kind == "noop" else "{kind: python, code: 'result = 1'}"
    lines = ["apiVersion: noetl.io/v2", "kind: Playbook", f"metadata: {{name: fanout_{n}}}", "workflow:",
             "  - step: start", "    tool: {kind: noop}",
             "    next: {spec: {mode: inclusive}, arcs: [" + ", ".join(f"{{step: b{i}}}" for i in range(n)) + "]}"]
    lines += [f"  - step: b{i}\n    tool: {tool}\n    next: {{arcs: [{{step: join}}]}}" for i in range(n)]
    lines.append('  - step: join\n    tool: {kind: noop, result: "{{ args._upstreams | length }}"}')
    return "\n".join(lines) + "\n"


def loop(n: int, kind: str = "noop", max_in_flight: int = 50) -> str:
    tool = "{kind: noop, result: '{{ i }}'}" if kind == "noop" else \
        "{kind: python, code: 'result = i * 2', args: {i: '{{ i }}'}}"
    return f"""
apiVersion: noetl.io/v2
kind: Playbook
metadata: {{name: loop_{n}}}
workflow:
  - step: each
    loop: {{in: "{{{{ range({n}) | list }}}}", iterator: i, spec: {{mode: parallel, max_in_flight: {max_in_flight}}}}}
    tool: {tool}
    next: {{arcs: [{{step: total}}]}}
  - step: total
    tool: {{kind: noop, result: "{{{{ each.results | length }}}}"}}
"""


def drive(text: str) -> dict[str, Any]:
    """Run a playbook on the pure engine; activities answer ``ok`` at once, and persisted
    events are forgotten as the workflow forgets them."""
    playbook = load_playbook_text(text).playbook
    state = new_state(playbook, "bench")
    queue: list[Any] = [Start(execution_id="bench", now=NOW)]
    inputs, longest, total, status = 0, 0.0, 0.0, None
    while queue:
        event = queue.pop(0)
        started = time.perf_counter()
        _, commands = step(state, event)
        spent = time.perf_counter() - started
        inputs += 1
        total += spent
        state.log.forget(state.log.seq - 2_000)  # as the workflow does once events are persisted
        longest = max(longest, spent)
        for command in commands:
            if isinstance(command, RunTask):
                queue.append(TaskFinished(task_run_id=command.task_run_id, now=NOW,
                                          result=TaskResult(outcome=Outcome.ok(1), action="continue")))
            elif isinstance(command, Yield):
                queue.append(Proceed(now=NOW))
            elif isinstance(command, Finish):
                status = command.status
    return {"inputs": inputs, "total_s": total, "per_input_ms": total / inputs * 1e3,
            "longest_ms": longest * 1e3, "status": status, "events": state.log.seq}


def pure(sizes: list[int]) -> None:
    print("## pure engine: cost per input against size\n")
    print("| workload | size | inputs | per input (ms) | longest input (ms) | events | status |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for label, make in (("noop chain", lambda n: chain(n)), ("activity chain", lambda n: chain(n, "python")),
                        ("activity fan-out + join", fanout),
                        ("noop parallel loop", lambda n: loop(n * 10)),
                        ("activity parallel loop", lambda n: loop(n * 10, "python"))):
        for n in sizes:
            gc.collect()
            size = n * 10 if "loop" in label else n
            r = drive(make(n))
            print(f"| {label} | {size:,} | {r['inputs']:,} | {r['per_input_ms']:.3f} | {r['longest_ms']:.1f} "
                  f"| {r['events']:,} | {r['status']} |")
    print()


class PeakRss:
    """Samples this process's resident set (VmRSS) every 50 ms."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            with open("/proc/self/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        self.peak = max(self.peak, int(line.split()[1]) // 1024)
            self._stop.wait(0.05)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


async def on_temporal(sizes: list[int], kind: str) -> None:
    from noetl_temporal.client.connect import start_execution
    from noetl_temporal.client.devserver import EmbeddedTemporal
    from noetl_temporal.hosting.worker import build_worker

    scratch = tempfile.mkdtemp(prefix="noetl-scale-")
    os.environ.setdefault("NOETL_STORE", scratch)   # its events.db, payloads/, results/
    print(f"## dev server: parallel {kind} loops (50 in flight), worker in this process\n")
    print("| items | wall (s) | items/s | peak RSS (MiB) | history events (last run) | result |")
    print("|---:|---:|---:|---:|---:|---|")
    async with EmbeddedTemporal() as env:
        for n in sizes:
            gc.collect()
            playbook = load_playbook_text(loop(n, kind)).playbook
            queue = f"scale-{uuid.uuid4().hex[:8]}"
            with PeakRss() as rss:
                async with build_worker(env.client, task_queue=queue):
                    started = time.perf_counter()
                    handle = await start_execution(env.client, playbook, task_queue=queue,
                                                   execution_timeout_s=3600)
                    output = await handle.result()
                    wall = time.perf_counter() - started
            history = 0
            async for _ in env.client.get_workflow_handle(handle.id).fetch_history_events():
                history += 1
            total = (output.get("steps") or {}).get("total", {}).get("result")
            print(f"| {n:,} | {wall:.1f} | {n / wall:,.0f} | {rss.peak} | {history:,} | "
                  f"{output['state']} ({total} results) |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="playbook sizes (steps) for the pure engine")
    parser.add_argument("--temporal", action="store_true", help="also run big loops on a dev server")
    parser.add_argument("--loop-sizes", default="1000,10000,100000", help="loop sizes for --temporal")
    parser.add_argument("--kind", default="noop", choices=("noop", "python"), help="loop task kind for --temporal")
    args = parser.parse_args()
    pure([int(s) for s in args.sizes.split(",")])
    if args.temporal:
        asyncio.run(on_temporal([int(s) for s in args.loop_sizes.split(",")], args.kind))
        gc.collect()


if __name__ == "__main__":
    main()
