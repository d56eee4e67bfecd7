"""Playbooks against expert hand-written Temporal, workload by workload (issue 11).

    python -m benchmarks [--rounds 2] [--quick] [--workloads chain,retry,api] [--servers stock,embedded] [--in-worker]

For each server setting a real dev server is started; for each workload every side gets
a fresh worker in a process of their own, one small warm-up execution each (the
workload at ``--quick`` sizes), then ``--rounds`` timed rounds, the sides taking turns
to go first. The sides: the playbook, and two hand-written anchors with the same bodies,
``handwritten`` (activities in the worker) and ``isolated`` (a process per activity,
``benchmarks.isolated``; not with ``--in-worker``, whose playbooks run their code in the
worker too). Reported per workload and setting: median seconds of each side and the
playbook's ratio to each anchor, the history events of one execution of each side, and
the peak memory of each side's worker process tree (the worker with its tool processes).
The ``api`` workload (``benchmarks.api_submit``: starts through ``POST /executions``
against bare ``start_workflow`` calls) runs last, on its own embedded dev server, and
after it the ``redrive`` row (``benchmarks.redrive``: a redrive of a 1,000-step execution
that failed at its last step, ``--rounds`` + 1 times; 100 steps with ``--quick``). A
Markdown table is printed and written with a JSON copy to ``benchmarks/results/``
(``--out`` to change).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

from . import api_submit
from . import redrive as redrive_bench
from .cpu import tree_cpu
from .memory import TreeSampler
from .report import write_report
from .sides import HandwrittenSide, PlaybookSide, Side, WorkerProcess, history, scheduled_activities
from .workloads import QUICK_SIZES, SIZES, Workload, playbook_yaml, workloads

SERVERS = {"stock": (), "embedded": None}  # None: the embedded server's own DEV_SERVER_ARGS
API = "api"  # the API submission workload's key (benchmarks.api_submit)
REDRIVE = "redrive"  # the redrive row's key (benchmarks.redrive: issue 41)
# (executions, in flight, rounds) of the API workload: issue 30's sizes, and a smoke run's
API_SIZES, API_QUICK_SIZES = (200, 50, 2), (40, 20, 1)
RESULTS = Path(__file__).resolve().parent / "results"


def server_args(setting: str) -> tuple[str, ...]:
    from noetl_temporal.client.devserver import DEV_SERVER_ARGS

    args = SERVERS[setting]
    return DEV_SERVER_ARGS if args is None else args


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


async def _round(side, workload: Workload, scratch: Path, samples: list[float]) -> tuple[str, str | None]:
    seconds, ident = await side.timed(workload, scratch)
    samples.append(seconds)
    return ident


async def _fast_path_used(client, ident: tuple[str, str | None], workload: Workload) -> bool:
    """The playbook ran its tasks as local activities (else the opt-in is not honoured yet)."""
    return await scheduled_activities(client, *ident) < workload.tasks


async def measure(server, workload: Workload, warm: Workload, playbooks: dict, rounds: int,
                  scratch: Path, isolated: bool = True, persist_events: bool = True) -> dict[str, Any]:
    from temporalio.client import Client

    from noetl_temporal.conversion.converter import data_converter

    row: dict[str, Any] = {"workload": workload.key, "title": workload.title, "executions": workload.executions}
    run_playbook = workload.playbook is not None
    suffix = uuid.uuid4().hex[:8]
    workers = {"handwritten": WorkerProcess("handwritten", server.address, f"bench-hw-{suffix}")}
    if isolated:
        workers["isolated"] = WorkerProcess("isolated", server.address, f"bench-iso-{suffix}")
    if run_playbook:
        workers["playbook"] = WorkerProcess("playbook", server.address, f"bench-pb-{suffix}")
    else:
        row["na"] = workload.na
    try:
        pids = dict(zip(workers, await asyncio.gather(*(w.start() for w in workers.values())), strict=True))
        sides: list[Side] = [HandwrittenSide(await Client.connect(server.address), workers[name].queue, name)
                             for name in ("handwritten", "isolated") if name in workers]
        if run_playbook:
            client = await Client.connect(server.address, data_converter=data_converter())
            sides.append(PlaybookSide(client, workers["playbook"].queue, playbooks, persist_events))
        samples: dict[str, list[float]] = {s.name: [] for s in sides}
        last: dict[str, tuple[str, str | None]] = {}
        for side in sides:  # warm-up, small: sandbox imports, connections, the python pool
            await side.timed(warm, scratch)
        # Sampled from here: starting the python tool's fork server is a vfork, and until its
        # exec the new process shares the worker's pages, which a summed RSS counts twice.
        with TreeSampler(pids) as sampler:
            cpu0 = {name: tree_cpu(pid) for name, pid in pids.items()}
            for r in range(rounds):
                # each side goes first in turn, so drift on a shared machine hits all of them
                k = r % len(sides)
                for side in sides[k:] + sides[:k]:
                    last[side.name] = await _round(side, workload, scratch, samples[side.name])
            cpu = {name: (tree_cpu(pid) - cpu0[name]) / rounds for name, pid in pids.items()}
            peaks = sampler.take()
        for side in sides:
            events, runs = await history(side.client, *last[side.name])
            peak = peaks[side.name]
            row[side.name] = {"seconds": samples[side.name], "median": _median(samples[side.name]),
                              "events": events, "runs": runs, "rss": peak.rss, "pss": peak.pss,
                              "cpu": cpu[side.name],
                              "processes": peak.processes}
        if workload.fast_path and run_playbook and not await _fast_path_used(sides[-1].client, last["playbook"],
                                                                            workload):
            row["na"] = "the fast-path opt-in is not honoured yet (tasks ran as normal activities)"
    except Exception as exc:  # a side failed or broke: report it and go on with the next workload
        row["error"] = f"{type(exc).__name__}: {exc}"
        traceback.print_exc(file=sys.stderr)
    finally:
        for w in workers.values():
            w.stop()
    return row


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from noetl_temporal.client.devserver import EmbeddedTemporal
    from noetl_temporal.dsl import load_playbook_text

    scratch = Path(tempfile.mkdtemp(prefix="noetl-bench-"))
    # Both the benchmark and the playbook worker read these: keep the user's stores clean.
    os.environ["NOETL_STORE"] = scratch.as_uri()   # its events.db, payloads/, results/
    chosen = [w for w in workloads(QUICK_SIZES if args.quick else SIZES, in_worker=args.in_worker)
              if w.key in args.workloads]
    warm = {w.key: w for w in workloads(QUICK_SIZES, in_worker=args.in_worker)}
    playbooks = {w.playbook["metadata"]["name"]: load_playbook_text(playbook_yaml(w.playbook),
                                                                    source=f"benchmarks:{w.key}").playbook
                 for w in [*chosen, *warm.values()] if w.playbook is not None}
    started = time.time()
    rows = []
    api_result = None
    for setting in args.servers if chosen else []:
        async with EmbeddedTemporal(server_args=server_args(setting)) as server:
            for workload in chosen:
                t0 = time.perf_counter()
                row = await measure(server, workload, warm[workload.key], playbooks, args.rounds, scratch,
                                    isolated=not args.in_worker, persist_events=not args.no_event_store)
                row["server"] = setting
                rows.append(row)
                print(f"[{setting}] {workload.key}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        gc.collect()
    if API in args.workloads and not args.in_worker and not args.no_event_store:
        executions, in_flight, rounds = API_QUICK_SIZES if args.quick else API_SIZES
        t0 = time.perf_counter()
        try:
            async with EmbeddedTemporal() as server:
                api_result = await api_submit.measure(server.address, executions=executions, in_flight=in_flight,
                                                      rounds=rounds, scratch=scratch / "api")
        except Exception as exc:  # reported, like a workload's error
            api_result = {"error": f"{type(exc).__name__}: {exc}"}
            traceback.print_exc(file=sys.stderr)
        print(f"[embedded] {API}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    redrive_result = None
    if REDRIVE in args.workloads:
        steps = redrive_bench.QUICK_STEPS if args.quick else redrive_bench.STEPS
        t0 = time.perf_counter()
        try:
            async with EmbeddedTemporal() as server:
                redrive_result = await redrive_bench.measure(server.address, steps=steps, rounds=args.rounds + 1,
                                                             scratch=scratch / "redrive")
        except Exception as exc:  # reported, like a workload's error
            redrive_result = {"steps": steps, "error": f"{type(exc).__name__}: {exc}"}
            traceback.print_exc(file=sys.stderr)
        print(f"[embedded] {REDRIVE}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return {"redrive": redrive_result, "started": started, "duration": time.time() - started, "rounds": args.rounds, "quick": args.quick,
            "in_worker": args.in_worker, "event_store": not args.no_event_store, "api_submit": api_result,
            "servers": {s: list(server_args(s)) for s in args.servers}, "rows": rows,
            "load_average": os.getloadavg(), "cpus": os.cpu_count()}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    keys = [w.key for w in workloads(SIZES)] + [API, REDRIVE]
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="workloads: " + ", ".join(keys))
    parser.add_argument("--rounds", type=int, default=None,
                        help="timed rounds per side (default 2; 1 with --quick); the api workload always "
                             "runs 2 (1 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: small sizes, 1 round, the embedded server's setting only unless --servers")
    parser.add_argument("--workloads", default=",".join(keys), help="comma-separated subset (default: all)")
    parser.add_argument("--servers", default=None, help="comma-separated: stock, embedded (default both; embedded with --quick)")
    parser.add_argument("--in-worker", action="store_true",
                        help="run the playbooks' python tasks in the worker (in_worker: true, no process per "
                             "task), against the in-process anchor only: how much of each ratio the python "
                             "tool's isolation costs; not the default (skips the api workload)")
    parser.add_argument("--no-event-store", action="store_true",
                        help="a diagnostic, not a target run: the playbook executions write no events to "
                             "the event store (they stay readable live only), to show what storing "
                             "NoETL's events costs (skips the api workload)")
    parser.add_argument("--out", type=Path, default=None,
                        help="writes OUT.md and OUT.json (default benchmarks/results/latest, "
                             "latest-in-worker with --in-worker; -no-event-store added with "
                             "--no-event-store)")
    args = parser.parse_args(argv)
    args.workloads = [k.strip() for k in args.workloads.split(",") if k.strip()]
    if args.servers is None:
        args.servers = "embedded" if args.quick else ",".join(SERVERS)
    args.servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    for value, known, what in ((args.workloads, keys, "workload"), (args.servers, list(SERVERS), "server")):
        unknown = [v for v in value if v not in known]
        if unknown:
            parser.error(f"unknown {what} {', '.join(unknown)}; choose from {', '.join(known)}")
    if args.rounds is None:
        args.rounds = 1 if args.quick else 2  # 3 rounds took 703 s: over issue 30's 10 minutes
    if args.out is None:
        args.out = RESULTS / (("latest-in-worker" if args.in_worker else "latest")
                              + ("-no-event-store" if args.no_event_store else ""))
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    from noetl_temporal.hosting.runtime import install_runtime

    install_runtime()
    results = asyncio.run(run(args))
    print(write_report(results, args.out))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter finalization: the SDK runtime's threads may still run


if __name__ == "__main__":
    main()
