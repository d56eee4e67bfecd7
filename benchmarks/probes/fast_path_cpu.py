"""Where a fast-path step's worker CPU goes (issue 30), beside the hand-written workflow
calling ``execute_local_activity`` in a loop: the benchmark's ``fast_path`` workload,
``--in-worker`` by default (python tasks in the worker's own threads).

    python -m benchmarks.probes.fast_path_cpu [--steps 20] [--rounds 15] [--profile loop|workflow]

Both workers run in this process, each on its own task queue (the playbook side as
``benchmarks.worker`` builds it, the hand-written one with the SDK's defaults); the
executions are started from a child process (``--drive``), so nothing of the client's
is in this process. Around each execution the script reads every thread's CPU time
(``/proc/self/task/*/schedstat``, nanoseconds) and adds it up by what the thread does:

* ``loop``: the asyncio thread: activities (the local activity's wrapper, the tool), their
  payload conversion, the SDK's Python side of polling and completing;
* ``workflow``: workflow activations (``temporal_workflow_*`` threads);
* ``in-worker``: the python tool's in-worker threads (``noetl-python_*``), the code itself;
* ``core``: threads that are not Python's (the SDK's Rust core: gRPC, state machines);
* ``other``: any other Python thread (``asyncio.to_thread``, default executors).

Sides are interleaved execution by execution; medians of ``--rounds`` per side, per step.
``--timeline`` also splits a step's wall time by marks (both sides' ``execute_local_activity``
and activity interceptor, the workflow activations, the python tool's in-worker thread):
``dispatch`` (scheduled -> the activity starts: the ``rest of act.``ivation in the workflow
thread, then ``to activity``: completing it, the core, the activity task's decoding), ``run``
(the activity; for an in-worker python task ``to thread``, ``code``, ``from thread``), ``back``
(ended -> resumed in the workflow; ``to resume`` from the start of that activation) and
``workflow`` (resumed -> the next one scheduled: the engine). The hand-written side then runs
unsandboxed (the patch does not reach into the sandbox), a little faster than in the benchmark.
``--profile loop`` (or ``workflow``) runs a few more executions of each side with
``cProfile`` on that thread (the workflow thread's through ``workflow_cpu.TimedRunner``)
and prints the top entries of each.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import sys
import threading
import time
import uuid
from collections import defaultdict
from typing import Any

GROUPS = ("loop", "workflow", "in-worker", "other", "core")
SEGMENTS = ("dispatch", "rest of act.", "to activity", "run", "to thread", "code", "from thread", "back",
            "to resume", "workflow")


def _thread_cpu() -> dict[int, int]:
    """Nanoseconds on CPU so far, by thread id (kernel tid)."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                out[int(tid)] = int(f.read().split()[0])
        except OSError:
            pass
    return out


def _group(tid: int, names: dict[int, str]) -> str:
    name = names.get(tid)
    if name is None:
        return "core"
    if name == "MainThread":
        return "loop"
    if name.startswith("temporal_workflow_"):
        return "workflow"
    if name.startswith("noetl-python_"):
        return "in-worker"
    return "other"


def _by_group(before: dict[int, int], after: dict[int, int]) -> dict[str, float]:
    names = {t.native_id: t.name for t in threading.enumerate() if t.native_id is not None}
    out: dict[str, float] = defaultdict(float)
    for tid, ns in after.items():
        out[_group(tid, names)] += (ns - before.get(tid, 0)) / 1e6
    return out


# ------------------------------------------------------------------ --timeline: where a step's wall time goes

_MARKS: list[tuple[str, float]] = []   # (what, perf_counter), both sides, in order


def _install_timeline() -> Any:
    """Mark when each local activity is scheduled and resumed (workflow side) and when it
    starts and ends (activity side); returns the activity interceptor to give both workers."""
    from temporalio import workflow
    from temporalio.worker import ActivityInboundInterceptor, Interceptor

    inner = workflow.execute_local_activity

    async def execute_local_activity(*args: Any, **kwargs: Any) -> Any:
        _MARKS.append(("sched", time.perf_counter()))
        try:
            return await inner(*args, **kwargs)
        finally:
            _MARKS.append(("resume", time.perf_counter()))

    workflow.execute_local_activity = execute_local_activity  # type: ignore[assignment]

    from noetl_temporal.tools.python import inworker

    run_code = inworker._run

    def marked_run(request: Any) -> Any:   # the python tool's in-worker thread
        _MARKS.append(("code", time.perf_counter()))
        try:
            return run_code(request)
        finally:
            _MARKS.append(("code_end", time.perf_counter()))

    inworker._run = marked_run

    from benchmarks.probes.workflow_cpu import Meter

    timed = Meter.timed

    def marked_timed(self: Any, workflow_id: str, activate: Any, act: Any) -> Any:   # an activation
        _MARKS.append(("activation", time.perf_counter()))
        try:
            return timed(self, workflow_id, activate, act)
        finally:
            _MARKS.append(("activation_end", time.perf_counter()))

    Meter.timed = marked_timed  # type: ignore[method-assign]

    class Marks(ActivityInboundInterceptor):
        async def execute_activity(self, input: Any) -> Any:
            _MARKS.append(("start", time.perf_counter()))
            try:
                return await self.next.execute_activity(input)
            finally:
                _MARKS.append(("end", time.perf_counter()))

    class MarksInterceptor(Interceptor):
        def intercept_activity(self, next: Any) -> Any:
            return Marks(next)

    return MarksInterceptor()


def _segments(marks: list[tuple[str, float]]) -> dict[str, list[float]]:
    """Per local activity (ms): scheduled -> started (dispatch), started -> ended (run),
    ended -> resumed (back), resumed -> next scheduled (workflow)."""
    out: dict[str, list[float]] = defaultdict(list)
    last: dict[str, float] = {}
    for what, at in marks:
        if what == "sched" and "resume" in last:
            out["workflow"].append((at - last["resume"]) * 1000)
        if what == "start" and "sched" in last:
            out["dispatch"].append((at - last["sched"]) * 1000)
            if last.get("activation_end", 0) > last["sched"]:   # its activation's rest, then loop and core
                out["rest of act."].append((last["activation_end"] - last["sched"]) * 1000)
                out["to activity"].append((at - last["activation_end"]) * 1000)
        if what == "resume" and last.get("activation", 0) > last.get("end", at):
            out["to resume"].append((at - last["activation"]) * 1000)   # activation start -> resumed
        if what == "end" and "start" in last:
            out["run"].append((at - last["start"]) * 1000)
            if last.get("code", 0) > last["start"]:   # an in-worker python task: its thread's part
                out["to thread"].append((last["code"] - last["start"]) * 1000)
                out["code"].append((last["code_end"] - last["code"]) * 1000)
                out["from thread"].append((at - last["code_end"]) * 1000)
        if what == "resume" and "end" in last:
            out["back"].append((at - last["end"]) * 1000)
        last[what] = at
    return out


# ------------------------------------------------------------------ the driver (child process)

async def _drive(address: str, steps: int, in_worker: bool) -> None:
    from temporalio.client import Client

    from benchmarks.workloads import FAST_PATH_OPT_IN, IN_WORKER_OPT_IN, chain, playbook_yaml, with_opt_in
    from noetl_temporal.client.connect import start_execution
    from noetl_temporal.conversion.converter import data_converter
    from noetl_temporal.conversion.playbook_result import workflow_output
    from noetl_temporal.dsl import load_playbook_text

    assert FAST_PATH_OPT_IN is not None
    book = with_opt_in(chain(steps, "fast"), FAST_PATH_OPT_IN)
    if in_worker:
        book = with_opt_in(book, IN_WORKER_OPT_IN)
    playbook = load_playbook_text(playbook_yaml(book), source="<fast>").playbook
    pb_client = await Client.connect(address, data_converter=data_converter())
    hw_client = await Client.connect(address)
    loop = asyncio.get_running_loop()
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).split()
        if not line:
            return
        side, queue = line
        if side == "playbook":
            handle = await start_execution(pb_client, playbook, task_queue=queue, execution_timeout_s=120)
            out = await workflow_output(handle)
            assert out.get("state") == "COMPLETED", out
        else:
            hw = await hw_client.start_workflow("BenchChain", {"n": steps, "local": True},
                                                id=f"hw-{uuid.uuid4().hex[:12]}", task_queue=queue)
            assert await hw.result() == {"i": steps}
        print("done", flush=True)


# ------------------------------------------------------------------ the workers (this process)

class _Driver:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def run(self, side: str, queue: str) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{side} {queue}\n".encode())
        await self.proc.stdin.drain()
        line = await self.proc.stdout.readline()
        if line.strip() != b"done":
            raise RuntimeError(f"the driver failed on {side}")


def _top(stats: pstats.Stats, n: int, per: int) -> None:
    stats.sort_stats("tottime")
    print(f"{'calls/step':>9} {'tot us/step':>12} {'cum us/step':>12}  function")
    for func in stats.fcn_list[:n]:  # type: ignore[attr-defined]
        _, nc, tt, ct, _ = stats.stats[func]  # type: ignore[attr-defined]
        name = pstats.func_std_string(func).split("site-packages/")[-1].replace(os.getcwd() + "/", "")  # type: ignore[attr-defined]
        print(f"{nc / per:>9.1f} {tt / per * 1e6:>12.1f} {ct / per * 1e6:>12.1f}  {name[:110]}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--process", action="store_true", help="python tasks in a process each (not in_worker)")
    parser.add_argument("--profile", choices=("loop", "workflow"))
    parser.add_argument("--profile-rounds", type=int, default=10)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--profile-out", help="keep each side's stats as PREFIX-SIDE.prof")
    parser.add_argument("--timeline", action="store_true",
                        help="also split each step's wall time: dispatch, run, back, workflow (medians, ms)")
    parser.add_argument("--drive", help=argparse.SUPPRESS)   # the child: the server's address
    args = parser.parse_args()
    in_worker = not args.process
    if args.drive:
        await _drive(args.drive, args.steps, in_worker)
        return

    from temporalio.client import Client
    from temporalio.testing import WorkflowEnvironment
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

    from benchmarks import handwritten
    from benchmarks.probes.workflow_cpu import Meter, TimedRunner
    from noetl_temporal.client.devserver import temporal_cli_path
    from noetl_temporal.conversion.converter import data_converter
    from noetl_temporal.hosting.runtime import install_runtime
    from noetl_temporal.hosting.worker import build_worker
    from noetl_temporal.tools import aclose_clients

    install_runtime()
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli_path(),
        dev_server_extra_args=["--headless", "--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000"])
    address = env.client.service_client.config.target_host
    meter = Meter()
    suffix = uuid.uuid4().hex[:8]
    queues = {"playbook": f"fpc-pb-{suffix}", "handwritten": f"fpc-hw-{suffix}"}
    pb_client = await Client.connect(address, data_converter=data_converter())
    hw_client = await Client.connect(address)
    marks = [_install_timeline()] if args.timeline else []
    pb_worker = build_worker(pb_client, task_queue=queues["playbook"], interceptors=marks,
                             unsandboxed_workflow_runner=TimedRunner(UnsandboxedWorkflowRunner(), meter))
    # The timeline's patch of execute_local_activity does not reach into the sandbox.
    hw_runner = UnsandboxedWorkflowRunner() if args.timeline else SandboxedWorkflowRunner()
    hw_worker = Worker(hw_client, task_queue=queues["handwritten"], workflows=handwritten.WORKFLOWS,
                       activities=handwritten.ACTIVITIES, workflow_runner=TimedRunner(hw_runner, meter),
                       interceptors=marks)
    env_vars = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")])))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", __spec__.name, "--drive", address, "--steps", str(args.steps), *(["--process"] if args.process else []),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env_vars)
    driver = _Driver(proc)
    try:
        async with pb_worker, hw_worker:
            per: dict[str, dict[str, list[float]]] = {s: defaultdict(list) for s in queues}
            timeline: dict[str, dict[str, list[float]]] = {s: defaultdict(list) for s in queues}
            for r in range(args.rounds + 2):   # two warm-up rounds
                for side, queue in queues.items():
                    before, started, activations = _thread_cpu(), time.perf_counter(), sum(meter.activations.values())
                    _MARKS.clear()
                    await driver.run(side, queue)
                    if r >= 2:
                        for name, values in _segments(_MARKS).items():
                            timeline[side][name].extend(values)
                    wall = time.perf_counter() - started
                    split = _by_group(before, _thread_cpu())
                    if r >= 2:
                        for group in GROUPS:
                            per[side][group].append(split.get(group, 0.0) / args.steps)
                        per[side]["total"].append(sum(split.values()) / args.steps)
                        per[side]["wall"].append(wall * 1000 / args.steps)
                        per[side]["act"].append((sum(meter.activations.values()) - activations) / args.steps)
            mode = "in_worker" if in_worker else "a process per task"
            print(f"worker CPU per step (ms), {args.steps}-step fast-path chain ({mode}), median of {args.rounds} "
                  f"(load average {os.getloadavg()[0]:.1f}):")
            print(f"  {'side':<12}" + "".join(f"{g:>11}" for g in (*GROUPS, "total", "wall", "act")))
            for side in queues:
                print(f"  {side:<12}" + "".join(f"{statistics.median(per[side][g]):>11.3f}" for g in (*GROUPS, "total", "wall", "act")))
            if args.timeline:
                print("\na step's wall time (ms, medians over every local activity; the hand-written side unsandboxed):")
                print(f"  {'side':<12}" + "".join(f"{g:>13}" for g in SEGMENTS))
                for side in queues:
                    print(f"  {side:<12}" + "".join(
                        f"{statistics.median(timeline[side][g]) if timeline[side][g] else 0.0:>13.3f}"
                        for g in SEGMENTS))
            if args.profile:
                for side, queue in queues.items():
                    profiler = cProfile.Profile()
                    for _ in range(args.profile_rounds):
                        if args.profile == "loop":
                            profiler.enable()
                            await driver.run(side, queue)
                            profiler.disable()
                        else:
                            meter.profiler = profiler
                            await driver.run(side, queue)
                            meter.profiler = None
                    print(f"\nprofile of the {args.profile} thread, {side}, {args.profile_rounds} executions "
                          "(per step):")
                    _top(pstats.Stats(profiler), args.top, args.profile_rounds * args.steps)
                    if args.profile_out:
                        profiler.dump_stats(f"{args.profile_out}-{side}.prof")
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        await proc.wait()
        await aclose_clients()
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
