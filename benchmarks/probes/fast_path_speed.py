"""20 sequential python steps as normal activities vs on the fast path (``spec.local:
true``), on a stock Temporal dev server (no dynamic config), interleaved round by round.

    python -m benchmarks.probes.fast_path_speed [--rounds 5] [--steps 20]

Prints the median wall time of one execution each way (start to result, one worker
running throughout) and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid

from temporalio.testing import WorkflowEnvironment

from noetl_temporal.client.devserver import temporal_cli_path
from noetl_temporal.client.end_to_end import run_with_client
from noetl_temporal.conversion.converter import data_converter
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.hosting.worker import build_worker
from noetl_temporal.tools import aclose_clients


def chain(steps: int, local: bool, in_worker: bool = False) -> str:
    spec = f"local: {str(local).lower()}" + (", python: {in_worker: true}" if in_worker else "")
    lines = [f"executor: {{spec: {{{spec}}}}}", "workflow:"]
    for i in range(steps):
        lines.append(f"  - step: s{i}")
        lines.append("    tool: {kind: python, code: \"def main(n):\\n    return n + 1\", args: {n: %s}}"
                     % ("0" if i == 0 else f"'{{{{ s{i - 1} }}}}'"))
        if i + 1 < steps:
            lines.append(f"    next: {{arcs: [{{step: s{i + 1}}}]}}")
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--in-worker", action="store_true", help="python tasks in_worker (no process) both ways")
    args = parser.parse_args()
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=temporal_cli_path(),
                                                data_converter=data_converter(),
                                                dev_server_extra_args=["--headless"])
    try:
        books = {mode: load_playbook_text(chain(args.steps, mode == "local", args.in_worker), source="<bench>").playbook
                 for mode in ("normal", "local")}
        times: dict[str, list[float]] = {"normal": [], "local": []}
        queue = f"fp-{uuid.uuid4().hex[:8]}"
        async with build_worker(env.client, task_queue=queue):  # one worker: time executions only
            for r in range(args.rounds + 1):  # round 0 warms up
                for mode, book in books.items():
                    t0 = time.perf_counter()
                    report = await run_with_client(env.client, book, task_queue=queue, worker=False,
                                                   execution_timeout_s=120)
                    assert report.state == "COMPLETED", report.error
                    if r:
                        times[mode].append(time.perf_counter() - t0)
        normal, local = (statistics.median(times[m]) for m in ("normal", "local"))
        print(f"{args.steps} sequential python steps, stock dev server, median of {args.rounds}:")
        print(f"  normal activities {normal:.3f} s  {[round(t, 3) for t in times['normal']]}")
        print(f"  fast path (local) {local:.3f} s  {[round(t, 3) for t in times['local']]}")
        print(f"  speed-up {normal / local:.2f}x")
    finally:
        await aclose_clients()
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
