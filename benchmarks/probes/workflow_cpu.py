"""Workflow-thread CPU per step or loop item (issue 30): the CPU a worker spends in workflow
activations, for a playbook's sequential chain or parallel loop and for the hand-written
Temporal workflow doing the same.

    python -m benchmarks.probes.workflow_cpu [--steps 200] [--rounds 5]
    python -m benchmarks.probes.workflow_cpu --sides par_loop,handwritten_par_loop [--items 1000]
    python -m benchmarks.probes.workflow_cpu --sides branches,handwritten_branches [--branches 50]
    python -m benchmarks.probes.workflow_cpu --profile python --top 30   # cProfile of the activations

Every workflow activation runs in the worker's workflow thread through the runner's
``WorkflowInstance.activate``; the script wraps the runners (``TimedRunner``) and adds up
``time.thread_time()`` around each ``activate``, per execution. That is exactly the CPU of
the workflow code (our shell, the pure engine, the templates, the event log, the SDK's own
activation handling and payload conversion) and nothing else: activities (a python task runs
in a forked process), the event store's writes, the SDK's asyncio loop and the dev server run
in other threads or processes. CPU time, not wall time, so waiting for a busy machine is not
counted; what the other processes do to the caches still is (a step run with cold caches
costs about three times a warm one: docs/performance.md), so each figure is the best of
``--rounds`` executions (after one warm-up each), and sides are compared within one run.

Sides (all on one embedded dev server, one worker process, each on its own task queue):

* ``python``: ``--steps`` sequential ``kind: python`` steps, ``code: 'result = 1'`` (the
  default mode: each task runs in a process of its own, in the ``noetl.run_task`` activity);
* ``fed``: the benchmark's chain (``benchmarks/workloads.chain``): each step's python task
  fed the previous result through a template (``{{ s3.i }}``), the same body as the hand-written side;
* ``noop``: ``--steps`` sequential ``kind: noop`` steps (inline: no activity);
* ``handwritten``: ``benchmarks/handwritten.py``'s ``BenchChain`` (``--steps`` ``execute_activity``
  in a loop), in the SDK's default sandbox, and ``handwritten_unsandboxed`` outside it;
* ``fast``: the ``fed`` chain on the fast path (``FAST_PATH_OPT_IN``: local activities) with its
  python tasks ``in_worker: true``; ``handwritten_local``: ``BenchChain`` with
  ``execute_local_activity`` (``benchmarks/probes/fast_path_cpu.py`` splits such a step by thread);
* ``par_loop``: the benchmark's parallel loop (``benchmarks/workloads.loop``: ``--items``
  items, ``--in-flight`` at once) with its python tasks ``in_worker: true`` (the benchmark's
  ``--in-worker``), measured per item; ``handwritten_par_loop``: ``BenchParallelLoop``
  (``asyncio.gather`` behind a ``Semaphore``), sandboxed as in the benchmark;
* ``branches``: the benchmark's fan-out (``benchmarks/workloads.branches``: one step,
  ``--branches`` parallel steps, a join), ``in_worker: true``, measured per branch;
  ``handwritten_branches``: ``BenchBranches``, sandboxed.

``--profile SIDE`` runs one more execution of that side with ``cProfile`` enabled only
inside ``activate`` (Python 3.11's profiler hooks the thread that enables it), and prints
the top entries by internal time and by cumulative time (``--profile-out`` keeps the stats).
``--split`` times parts of the activations on their own (``SPLIT``, and the garbage
collector); give it one side.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sysconfig
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from typing import Any

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner
from temporalio.worker._workflow_instance import WorkflowInstance, WorkflowInstanceDetails
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from benchmarks import handwritten
from benchmarks.engine_scale import chain as scale_chain
from benchmarks.workloads import FAST_PATH_OPT_IN, IN_WORKER_OPT_IN, branches, playbook_yaml, with_opt_in
from benchmarks.workloads import chain as fed_chain
from benchmarks.workloads import loop as par_loop
from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.devserver import temporal_cli_path
from noetl_temporal.conversion.converter import data_converter
from noetl_temporal.conversion.playbook_result import workflow_output
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.hosting.worker import build_worker
from noetl_temporal.tools import aclose_clients

SIDES = ("python", "fed", "fast", "noop", "handwritten", "handwritten_unsandboxed", "handwritten_local",
         "par_loop", "handwritten_par_loop", "branches", "handwritten_branches")
LOOP_SIDES = ("par_loop", "handwritten_par_loop")   # measured per loop item, not per step
FAN_SIDES = ("branches", "handwritten_branches")    # measured per branch

# ``--split``: parts of an activation timed on their own (thread CPU, calls), by dotted path.
SPLIT = ("noetl_temporal.engine.machine.step", "noetl_temporal.engine.progress.describe",
         # parts of the engine's step (nested in it)
         "noetl_temporal.engine.event_log.EventLog.emit", "noetl_temporal.engine.invocation.render_config",
         "noetl_temporal.engine.invocation.run_task_command",
         "noetl_temporal.conversion.payload_converter.PayloadConverter.to_payloads",
         "noetl_temporal.conversion.payload_converter.LocalOnlyJSON.to_payload",   # nested: the events' batches
         "noetl_temporal.conversion.payload_converter.PayloadConverter.from_payloads",
         "noetl_temporal.engine.envelopes.TaskResult.from_dict",
         "temporalio.worker._workflow_instance._ActivityHandle._apply_schedule_command",
         "temporalio.worker._workflow_instance._WorkflowInstanceImpl._apply",
         "noetl_temporal.workflow.task_runs.local_run_task",
         "noetl_temporal.engine.pipeline.task_finished")


def _split(parts: dict[str, list[float]], meter: Meter) -> None:
    """Wrap each of ``SPLIT`` to add its thread CPU and calls to ``parts`` (outermost calls
    in activations only: payloads are converted on other threads too, for activities)."""
    import importlib
    import inspect

    for path in SPLIT:
        owner_path, name = path.rsplit(".", 1)
        try:
            owner: Any = importlib.import_module(owner_path)
        except ImportError:
            module, cls = owner_path.rsplit(".", 1)
            owner = getattr(importlib.import_module(module), cls)
        inner = inspect.getattr_static(owner, name)
        func = inner.__func__ if isinstance(inner, classmethod) else inner
        totals = parts.setdefault(path, [0.0, 0])
        depth = [0]

        def timed(*a: Any, _func: Any = func, _totals: list[float] = totals, _depth: list[int] = depth,
                  **kw: Any) -> Any:
            if _depth[0] or not getattr(meter.inside, "active", False):
                return _func(*a, **kw)
            _depth[0] += 1
            started = time.thread_time()
            try:
                return _func(*a, **kw)
            finally:
                _totals[0] += time.thread_time() - started
                _totals[1] += 1
                _depth[0] -= 1

        setattr(owner, name, classmethod(timed) if isinstance(inner, classmethod) else timed)


class Meter:
    """Thread CPU and activations per workflow id, and the profiler while one is wanted."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.activations: dict[str, int] = defaultdict(int)
        self.profiler: cProfile.Profile | None = None
        self.inside = threading.local()   # ``active``: this thread is in an activation

    def timed(self, workflow_id: str, activate: Callable[[Any], Any], act: Any) -> Any:
        profiler = self.profiler
        if profiler is not None:
            profiler.enable()
        started = time.thread_time()
        self.inside.active = True
        try:
            return activate(act)
        finally:
            self.inside.active = False
            self.cpu[workflow_id] += time.thread_time() - started
            self.activations[workflow_id] += 1
            if profiler is not None:
                profiler.disable()


class TimedInstance(WorkflowInstance):
    def __init__(self, inner: WorkflowInstance, workflow_id: str, meter: Meter) -> None:
        self._inner, self._id, self._meter = inner, workflow_id, meter

    def activate(self, act: Any) -> Any:
        return self._meter.timed(self._id, self._inner.activate, act)

    def get_serialization_context(self, command_info: Any) -> Any:
        return self._inner.get_serialization_context(command_info)

    def get_external_store_context(self, command_info: Any) -> Any:
        return self._inner.get_external_store_context(command_info)

    def get_info(self) -> Any:
        return self._inner.get_info()

    def get_thread_id(self) -> int | None:
        return self._inner.get_thread_id()

    def __getattr__(self, name: str) -> Any:  # anything else the worker asks of an instance
        return getattr(self._inner, name)


class TimedRunner(WorkflowRunner):
    def __init__(self, inner: WorkflowRunner, meter: Meter) -> None:
        self._inner, self._meter = inner, meter

    def prepare_workflow(self, defn: Any) -> None:
        self._inner.prepare_workflow(defn)

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return TimedInstance(self._inner.create_instance(det), det.info.workflow_id, self._meter)

    def set_worker_level_failure_exception_types(self, types: Any) -> None:
        self._inner.set_worker_level_failure_exception_types(types)


def _time_gc(parts: dict[str, list[float]], meter: Meter) -> None:
    """The garbage collector's thread CPU inside activations (collections by generation)."""
    import gc

    totals = [parts.setdefault(f"gc generation {g}", [0.0, 0]) for g in range(3)]
    started = [0.0]

    def clock(phase: str, info: dict[str, Any]) -> None:
        if not getattr(meter.inside, "active", False):
            return
        if phase == "start":
            started[0] = time.thread_time()
        else:
            totals[info["generation"]][0] += time.thread_time() - started[0]
            totals[info["generation"]][1] += 1

    gc.callbacks.append(clock)


def _playbooks(steps: int, items: int, in_flight: int, fan: int) -> dict[str, Any]:
    fast = with_opt_in(with_opt_in(fed_chain(steps), FAST_PATH_OPT_IN), IN_WORKER_OPT_IN) if FAST_PATH_OPT_IN else {}
    texts = {"python": scale_chain(steps, "python"), "fed": playbook_yaml(fed_chain(steps)),
             "fast": playbook_yaml(fast),
             "noop": scale_chain(steps, "noop"),
             "par_loop": playbook_yaml(with_opt_in(par_loop(items, in_flight), IN_WORKER_OPT_IN)),
             "branches": playbook_yaml(with_opt_in(branches(fan), IN_WORKER_OPT_IN))}
    return {side: load_playbook_text(text, source=f"<{side}>").playbook for side, text in texts.items()}


async def _run(client: Client, side: str, queue: str, args: argparse.Namespace, playbooks: dict[str, Any]) -> str:
    steps = args.steps
    if side == "handwritten_branches":
        handle = await client.start_workflow("BenchBranches", {"n": args.branches},
                                             id=f"hw-{uuid.uuid4().hex[:12]}", task_queue=queue)
        out = await handle.result()
        assert out == {"i": sum(1 + k + 1 for k in range(args.branches))}, out
        return handle.id
    if side == "handwritten_par_loop":
        handle = await client.start_workflow("BenchParallelLoop", {"n": args.items, "max_in_flight": args.in_flight},
                                             id=f"hw-{uuid.uuid4().hex[:12]}", task_queue=queue)
        out = await handle.result()
        assert len(out) == args.items, len(out)
        return handle.id
    if side.startswith("handwritten"):
        arg = {"n": steps, "local": side == "handwritten_local"}
        handle = await client.start_workflow("BenchChain", arg, id=f"hw-{uuid.uuid4().hex[:12]}",
                                             task_queue=queue)
        out = await handle.result()
        assert out == {"i": steps}, out
        return handle.id
    handle = await start_execution(client, playbooks[side], task_queue=queue, execution_timeout_s=600)
    out = await workflow_output(handle)
    assert out.get("state") == "COMPLETED", out
    return handle.id


def _top(stats: pstats.Stats, sort: str, n: int) -> Iterator[str]:
    stats.sort_stats(sort)
    for func in stats.fcn_list[:n]:  # type: ignore[attr-defined]
        _, nc, tt, ct, _ = stats.stats[func]  # type: ignore[attr-defined]
        name: str = pstats.func_std_string(func)  # type: ignore[attr-defined]
        name = name.replace(os.getcwd() + "/", "").split("site-packages/")[-1]
        name = name.replace(sysconfig.get_paths()["stdlib"] + "/", "")
        yield f"{nc:>8} {tt * 1000:>9.1f} {ct * 1000:>9.1f}  {name}"


def _units(side: str, args: argparse.Namespace) -> int:
    """What a side's CPU is divided by: loop items, branches, or steps (the chains)."""
    return args.items if side in LOOP_SIDES else args.branches if side in FAN_SIDES else args.steps


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="steps per chain (default 200)")
    parser.add_argument("--items", type=int, default=1000, help="items of the parallel loop sides (default 1000)")
    parser.add_argument("--in-flight", type=int, default=50, help="their iterations at once (default 50)")
    parser.add_argument("--rounds", type=int, default=5, help="executions per side (best of them); one more warms up")
    parser.add_argument("--branches", type=int, default=50, help="parallel branches of the fan-out sides (default 50)")
    parser.add_argument("--sides", default=",".join(s for s in SIDES if s not in LOOP_SIDES + FAN_SIDES),
                        help=f"comma-separated, of {', '.join(SIDES)} (default: the chains)")
    parser.add_argument("--profile", choices=SIDES, help="profile one more execution of this side")
    parser.add_argument("--profile-out", help="write the profile's stats to this file (pstats)")
    parser.add_argument("--top", type=int, default=25, help="profile entries to print (default 25)")
    parser.add_argument("--split", action="store_true",
                        help="also time parts of the activations (engine step, payload conversion, ...) on their own, "
                             "added up over the sides given (give one)")
    args = parser.parse_args()
    sides = [s for s in args.sides.split(",") if s]
    unknown = sorted(set(sides) - set(SIDES))
    if unknown:
        parser.error(f"unknown sides {unknown}: choose from {', '.join(SIDES)}")
    if args.split and args.profile:
        parser.error("--split and --profile measure each other's wrappers: run them separately")
    meter = Meter()
    parts: dict[str, list[float]] = {}
    if args.split:
        _split(parts, meter)
        _time_gc(parts, meter)
    playbooks = _playbooks(args.steps, args.items, args.in_flight, args.branches)
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=temporal_cli_path(),
                                                data_converter=data_converter(),
                                                dev_server_extra_args=["--headless"])
    suffix = uuid.uuid4().hex[:8]
    queues = {side: f"wcpu-{side}-{suffix}" for side in SIDES}
    try:
        async with AsyncExitStack() as stack:
            for side in dict.fromkeys([*sides, *([args.profile] if args.profile else [])]):
                if side in ("handwritten", "handwritten_local", "handwritten_par_loop", "handwritten_branches"):
                    worker = Worker(env.client, task_queue=queues[side], workflows=handwritten.WORKFLOWS,
                                    activities=handwritten.ACTIVITIES,
                                    workflow_runner=TimedRunner(SandboxedWorkflowRunner(), meter))
                elif side == "handwritten_unsandboxed":
                    worker = Worker(env.client, task_queue=queues[side], workflows=handwritten.WORKFLOWS,
                                    activities=handwritten.ACTIVITIES,
                                    workflow_runner=TimedRunner(UnsandboxedWorkflowRunner(), meter))
                else:
                    worker = build_worker(env.client, task_queue=queues[side],
                                          unsandboxed_workflow_runner=TimedRunner(UnsandboxedWorkflowRunner(), meter))
                await stack.enter_async_context(worker)
            results: dict[str, list[tuple[float, int]]] = {side: [] for side in sides}
            for r in range(args.rounds + 1):   # round 0 warms up; sides interleaved round by round
                for side in sides:
                    wid = await _run(env.client, side, queues[side], args, playbooks)
                    if r:
                        results[side].append((meter.cpu[wid], meter.activations[wid]))
            print(f"workflow-thread CPU per step of {args.steps}-step sequential chains, per item of "
                  f"{args.items}-item parallel loops ({args.in_flight} in flight), per branch of "
                  f"{args.branches}-branch fan-outs, best of {args.rounds} "
                  f"(load average {os.getloadavg()[0]:.1f}):")
            print(f"  {'side':<24} {'ms/unit':>8} {'activations/unit':>17}   all runs (ms/unit)")
            for side in sides:
                best = min(results[side])
                units = _units(side, args)
                print(f"  {side:<24} {best[0] / units * 1000:>8.3f} {best[1] / units:>17.2f}   "
                      f"{[round(c / units * 1000, 3) for c, _ in results[side]]}")
            if args.split:
                runs = args.rounds + 1
                per = sum(_units(side, args) for side in sides) * runs
                print(f"\nparts, all {runs} rounds of {', '.join(sides)} (ms per unit; calls per unit):")
                for path, (cpu, calls) in parts.items():
                    print(f"  {cpu / per * 1000:8.3f} {calls / per:6.2f}  {path}")
            if args.profile:
                profiler = cProfile.Profile()
                meter.profiler = profiler
                await _run(env.client, args.profile, queues[args.profile], args, playbooks)
                meter.profiler = None
                stats = pstats.Stats(profiler)
                if args.profile_out:
                    stats.dump_stats(args.profile_out)
                for sort, title in (("tottime", "internal time"), ("cumulative", "cumulative time")):
                    print(f"\nprofile of one {args.profile} execution's activations, top {args.top} by {title} "
                          f"(ms for the whole run; divide by {_units(args.profile, args)} for per unit):")
                    print(f"{'calls':>8} {'tottime':>9} {'cumtime':>9}  function")
                    for line in _top(stats, sort, args.top):
                        print(line)
    finally:
        await aclose_clients()
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
