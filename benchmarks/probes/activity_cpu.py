"""The task activity's own CPU per call (issue 30), without a server: ``noetl.run_task``
and the fast path's local activity called in a loop through the SDK's
``ActivityEnvironment``, with the RunTask the engine builds for a step of the benchmark's
``fast_path`` chain (an in-worker python task), beside a hand-written activity that calls
the same function directly.

    python -m benchmarks.probes.activity_cpu [--calls 2000] [--rounds 7] [--profile]

Per side, microseconds per call (median of rounds) of the event loop's thread
(``time.thread_time`` over the calls; the loop waits for the in-worker thread idle) and
of the whole process (``time.process_time``: the in-worker thread's hop and code too).
``--inline`` runs the in-worker code on the loop itself (the thread hop's cost varies with
the machine's load). ``--profile [tottime|cumulative]`` prints the top of a cProfile run of the local activity.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import pstats
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import activity
from temporalio.testing import ActivityEnvironment

from benchmarks import bodies
from benchmarks.workloads import IN_WORKER_OPT_IN, chain, with_opt_in
from noetl_temporal.engine.messages import RunTask
from noetl_temporal.workflow.activities import run_task, run_task_local


def _run_task_of_the_chain() -> RunTask:
    """The RunTask of the chain's second step as the engine builds it (fast path, in-worker)."""
    import yaml

    from noetl_temporal.dsl import load_playbook_text
    from tests.engine.harness import ok, run

    playbook = with_opt_in(with_opt_in(chain(2, "fast"), ("executor.spec.local", True)), IN_WORKER_OPT_IN)
    pb = load_playbook_text(yaml.safe_dump(playbook)).playbook
    ran = run(pb, lambda cmd: ok({"i": 1})).ran
    return ran[-1]


_MAIN = bodies.compile_body(bodies.STEP)


@activity.defn(name="handwritten")
async def handwritten(i: int) -> dict[str, Any]:
    """The expert's activity: the body's ``main`` called in the worker itself."""
    return _MAIN(i=i)


async def _per_call(call: Callable[[], Awaitable[Any]], n: int) -> tuple[float, float]:
    loop0, proc0 = time.thread_time(), time.process_time()
    for _ in range(n):
        await call()
    return (time.thread_time() - loop0) / n * 1e6, (time.process_time() - proc0) / n * 1e6


def sides(cmd: RunTask) -> dict[str, Callable[[], Awaitable[Any]]]:
    env = ActivityEnvironment()
    local_env = ActivityEnvironment()
    local_env.info = dataclasses.replace(local_env.info, is_local=True, heartbeat_timeout=None)
    local = {"attempt": 1, "history": []}

    def remote() -> Awaitable[Any]:
        return env.run(run_task, cmd)

    def fast() -> Awaitable[Any]:
        return local_env.run(run_task_local, cmd, local)

    def expert() -> Awaitable[Any]:
        return env.run(handwritten, 1)

    return {"run_task": remote, "run_task_local": fast, "handwritten": expert}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--inline", action="store_true",
                        help="run the in-worker code on the loop (no thread hop): the activity's own CPU, "
                             "steadier on a busy machine")
    parser.add_argument("--profile", nargs="?", const="tottime", choices=("tottime", "cumulative"),
                        help="profile the local activity, sorted by this")
    args = parser.parse_args()
    if args.inline:
        from noetl_temporal.tools.python import inworker

        async def inline(request: dict[str, Any], timeout: float) -> dict[str, Any]:
            return inworker._run(request)

        inworker.run = inline  # type: ignore[assignment]
    cmd = _run_task_of_the_chain()
    calls = sides(cmd)
    out = await calls["run_task_local"]()
    assert out["outcome"]["status"] == "ok", out
    for call in calls.values():
        await _per_call(call, 200)   # warm up: threads, caches
    got: dict[str, list[tuple[float, float]]] = {name: [] for name in calls}
    for _ in range(args.rounds):    # interleaved, round by round
        for name, call in calls.items():
            got[name].append(await _per_call(call, args.calls))
    for name, runs in got.items():
        loop = statistics.median(r[0] for r in runs)
        proc = statistics.median(r[1] for r in runs)
        print(f"{name:<16} loop thread {loop:7.1f} us/call   process {proc:7.1f} us/call   "
              f"(loop: {', '.join(f'{r[0]:.0f}' for r in runs)})")
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        await _per_call(calls["run_task_local"], args.calls)
        profile.disable()
        pstats.Stats(profile).sort_stats(args.profile).print_stats(60)


if __name__ == "__main__":
    asyncio.run(main())
