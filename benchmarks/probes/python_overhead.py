"""Overhead of a ``kind: python`` task beyond its own code (``result = 1``), measured
through ``run_tool`` as the activity calls it: back to back, and with N in flight.

    python -m benchmarks.probes.python_overhead [--tasks 300] [--in-flight 50]

Prints milliseconds per task (median of rounds) for the fork server (default), the
in-worker mode, and a process per task (``NOETL_PYTHON_FORKSERVER=0``), and the CPU the
whole process tree spent per task with N in flight (this process, the fork server and
every task process it reaped: on a machine with few cores, that is what parallel tasks
compete for). The machine may be shared: run it a few times and report the spread.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from benchmarks.cpu import tree_cpu
from noetl_temporal.tools import ToolCall, aclose_clients, run_tool

CALL = ToolCall(execution_id="bench", step="s", task="t")


async def one(config: dict) -> None:
    out = await run_tool("python", config, CALL)
    assert out["status"] == "ok" and out["result"] == 1, out


async def back_to_back(config: dict, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        await one(config)
    return (time.perf_counter() - t0) / n * 1000


async def in_flight(config: dict, n: int, width: int) -> tuple[float, float]:
    """(wall, CPU of the process tree) in milliseconds per task."""
    gate = asyncio.Semaphore(width)

    async def gated() -> None:
        async with gate:
            await one(config)

    cpu0, t0 = tree_cpu(os.getpid()), time.perf_counter()
    await asyncio.gather(*(gated() for _ in range(n)))
    return (time.perf_counter() - t0) / n * 1000, (tree_cpu(os.getpid()) - cpu0) / n * 1000


async def measure(label: str, config: dict, n: int, width: int, rounds: int) -> None:
    await back_to_back(config, 20)  # warm up (fork server start, imports)
    seq = [await back_to_back(config, n) for _ in range(rounds)]
    runs = [await in_flight(config, n, width) for _ in range(rounds)]
    par, cpu = [r[0] for r in runs], [r[1] for r in runs]
    print(f"{label:<28} back to back {statistics.median(seq):6.2f} ms/task   "
          f"{width} in flight {statistics.median(par):6.2f} ms/task, CPU {statistics.median(cpu):5.2f} ms/task   "
          f"(rounds: {', '.join(f'{s:.2f}' for s in seq)} | {', '.join(f'{p:.2f}' for p in par)})")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--in-flight", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-spawn", action="store_true", help="skip the slow process-per-task mode")
    args = parser.parse_args()
    code = {"code": "result = 1"}
    await measure("fork server (default)", code, args.tasks, args.in_flight, args.rounds)
    await measure("in_worker: true", {**code, "in_worker": True}, args.tasks, args.in_flight, args.rounds)
    if not args.skip_spawn:
        await aclose_clients()
        os.environ["NOETL_PYTHON_FORKSERVER"] = "0"
        n = max(args.tasks // 5, 20)
        await measure("process per task", code, n, args.in_flight, args.rounds)
    await aclose_clients()


if __name__ == "__main__":
    asyncio.run(main())
