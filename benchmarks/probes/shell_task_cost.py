"""Wall time of a ``kind: shell`` task (``true``) through ``run_tool``, as the activity calls it.

    python -m benchmarks.probes.shell_task_cost [--tasks 200] [--rounds 5]

Rows: the fork server's path (the default: the command's process is forked by the python
tool's fork server and reaps what the command leaves), the reaper program's path
(``NOETL_PYTHON_FORKSERVER=0``: an interpreter starts per task to be the subreaper), and
the floor, a bare ``asyncio.create_subprocess_exec('/bin/sh', '-c', 'true')`` with its output
read, which is what a shell task cost before a task owned its processes. Medians of rounds,
back to back (one task at a time). The machine may be shared: run it a few times.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

from noetl_temporal.tools import ToolCall, aclose_clients, run_tool

CALL = ToolCall(execution_id="bench", step="s", task="t")
CONFIG = {"cmd": "true"}


async def tool_task() -> None:
    out = await run_tool("shell", CONFIG, CALL)
    assert out["status"] == "ok", out


async def bare_task() -> None:
    proc = await asyncio.create_subprocess_exec("/bin/sh", "-c", "true", stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE, start_new_session=True)
    await proc.communicate()


async def back_to_back(task, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        await task()
    return (time.perf_counter() - t0) / n * 1000


async def measure(label: str, task, n: int, rounds: int) -> None:
    await back_to_back(task, 10)  # warm up (the fork server's start, imports)
    seq = [await back_to_back(task, n) for _ in range(rounds)]
    print(f"{label:<36} {statistics.median(seq):6.2f} ms/task  (rounds: {', '.join(f'{s:.2f}' for s in seq)})",
          flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", choices=("forkserver", "reaper", "bare"), default=None)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs", flush=True)
    if args.only in (None, "forkserver"):
        await measure("shell task, fork server (default)", tool_task, args.tasks, args.rounds)
    if args.only in (None, "bare"):
        await measure("bare subprocess (the floor)", bare_task, args.tasks, args.rounds)
    await aclose_clients()
    if args.only is None:  # the reaper's path in a process of its own (the switch is read per task)
        env = dict(os.environ, NOETL_PYTHON_FORKSERVER="0")
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", __spec__.name, "--tasks", str(args.tasks), "--rounds",
                                                    str(args.rounds), "--only", "reaper", env=env)
        await proc.wait()
    elif args.only == "reaper":
        await measure("shell task, reaper program", tool_task, args.tasks, args.rounds)


if __name__ == "__main__":
    asyncio.run(main())
