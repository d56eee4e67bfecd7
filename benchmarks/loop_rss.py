"""Where a big noop loop's worker memory goes: RSS against the Python heap, over time.

    python -m benchmarks.loop_rss                 # a 100,000-item parallel noop loop
    python -m benchmarks.loop_rss --items 20000 --kind python

Runs the loop on a dev server with the worker in this process (as ``benchmarks.engine_scale
--temporal`` does) and samples, every half second: the resident set (VmRSS), the memory
Python's allocator holds (``sys.getallocatedblocks``, in blocks), and the glibc heap
(``mallinfo2``: bytes in use and bytes free but kept), and the peak of this process plus
its tool processes (the python tool's fork server and task processes). 3 s after the run
closed, with the worker still running, it measures again (what the run alone held is
freed when it leaves the worker's cache); then it collects garbage and asks glibc to give
free memory back (``malloc_trim``), measuring RSS after each: memory that ``malloc_trim``
returns was freed by the program and kept by the allocator, not leaked. ``--tracemalloc``
also traces Python's allocations of every size (``sys.getallocatedblocks`` counts only the
small ones), which tells Python's memory from native memory.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import os
import sys
import tempfile
import time
import tracemalloc
import uuid
from typing import Any

from benchmarks.engine_scale import PeakRss, loop
from noetl_temporal.dsl import load_playbook_text


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


_libc = ctypes.CDLL("libc.so.6")
_libc.mallinfo2.restype = _MallInfo2


def rss_mib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


def _children(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:   # gone meanwhile
        pass
    return out


def tools_mib() -> int:
    """RSS of this process's descendants but the dev server: the python tool's fork server
    and task processes (their pages are mostly shared, so this overstates what they cost)."""
    total, todo = 0, _children(os.getpid())
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"server\0start-dev" in f.read():
                    continue
            with open(f"/proc/{pid}/status") as status:
                total += next((int(line.split()[1]) for line in status if line.startswith("VmRSS:")), 0)
        except OSError:
            continue
        todo += _children(pid)
    return total // 1024


def glibc_mib() -> tuple[int, int]:
    """(in use, free but kept) in glibc's heaps, main arena only (mallinfo2's scope)."""
    info = _libc.mallinfo2()
    return (info.uordblks + info.hblkhd) // 2**20, info.fordblks // 2**20


def top_types(n: int = 6) -> str:
    """The most numerous live object types (a full heap walk: only with ``--types``)."""
    counts: dict[str, int] = {}
    logs = []
    for obj in gc.get_objects():
        name = type(obj).__qualname__
        counts[name] = counts.get(name, 0) + 1
        if name == "PlaybookWorkflow" and obj._state is not None:   # the workflow's event log in memory
            logs.append(f"workflow log: {len(obj._state.log.events):,} events in memory, "
                        f"{obj._state.log.seq - obj._flushed_seq:,} not yet stored")
    top = ", ".join(f"{name} {count:,}" for name, count in sorted(counts.items(), key=lambda kv: -kv[1])[:n])
    return "; ".join([top, *logs])


class Sampler(PeakRss):
    """Samples RSS, Python's blocks and glibc's main heap (and live object types) every 0.5 s."""

    def __init__(self, types_every: float = 0.0) -> None:
        super().__init__()
        self.rows: list[tuple[float, int, int, int, int]] = []
        self.peak_with_tools = 0   # this process plus its tool processes, sampled together
        self.traced_peak = 0       # Python's allocations of every size (``--tracemalloc``), MiB
        self.types: list[tuple[float, str]] = []
        self._types_every = types_every
        self.t0 = time.perf_counter()

    def _sample(self) -> None:
        next_types = 0.0
        while not self._stop.is_set():
            used, kept = glibc_mib()
            now = time.perf_counter() - self.t0
            rss = rss_mib()
            if tracemalloc.is_tracing():
                self.traced_peak = max(self.traced_peak, tracemalloc.get_traced_memory()[0] // 2**20)
            self.peak_with_tools = max(self.peak_with_tools, rss + tools_mib())
            self.rows.append((now, rss, sys.getallocatedblocks(), used, kept))
            if self._types_every and now >= next_types:
                self.types.append((now, top_types()))
                next_types = now + self._types_every
            self._stop.wait(0.5)


async def _start(client: Any, playbook: Any, queue: str, persist: bool, continue_after: int = 0) -> Any:
    """``persist=False`` is a diagnostic: the same execution with no event store writes (the
    workflow keeps its whole log then), to tell the store's local activities' share of
    native memory."""
    from noetl_temporal.client.connect import start_execution

    return await start_execution(client, playbook, task_queue=queue, execution_timeout_s=3600,
                                 continue_as_new_after_events=continue_after, persist_events=persist)


async def run(items: int, kind: str, types_every: float = 0.0, persist: bool = True,
              continue_after: int = 0) -> None:
    from noetl_temporal.client.devserver import EmbeddedTemporal
    from noetl_temporal.hosting.worker import build_worker
    from noetl_temporal.store import default_event_store_url

    scratch = tempfile.mkdtemp(prefix="noetl-loop-rss-")
    os.environ.setdefault("NOETL_STORE", scratch)   # its events.db, payloads/, results/
    playbook = load_playbook_text(loop(items, kind)).playbook
    async with EmbeddedTemporal() as env:
        queue = f"rss-{uuid.uuid4().hex[:8]}"
        print(f"before the worker: RSS {rss_mib()} MiB")
        traced_start = tracemalloc.get_traced_memory()[0] // 2**20
        with Sampler(types_every) as sampler:
            async with build_worker(env.client, task_queue=queue):
                handle = await _start(env.client, playbook, queue, persist, continue_after)
                output = await handle.result()
                runs = [w async for w in env.client.list_workflows(f"WorkflowId='{handle.id}'")]
                ran = time.perf_counter() - sampler.t0
                # The closed run leaves the worker's cache: what it alone held is freed now,
                # before the worker stops (which frees what the worker held for all runs).
                await asyncio.sleep(3)
                closed = rss_mib(), glibc_mib()[0], tracemalloc.get_traced_memory()[0] // 2**20
            after_worker = rss_mib()
        gc.collect()
        after_gc = rss_mib()
        _libc.malloc_trim(0)
        after_trim = rss_mib()
    events = default_event_store_url()
    store = os.path.getsize(events) if os.path.exists(events) else 0
    total = (output.get("steps") or {}).get("total", {}).get("result")
    print(f"{items:,}-item {kind} loop: {output['state']} ({total} results) in {ran:.0f} s, "
          f"{len(runs)} workflow run(s)\n")
    print("| t (s) | RSS (MiB) | Python blocks | glibc in use (MiB) | glibc free, kept (MiB) |")
    print("|---:|---:|---:|---:|---:|")
    step = max(1, len(sampler.rows) // 12)
    for t, rss, blocks, used, kept in sampler.rows[::step] + sampler.rows[-1:]:
        print(f"| {t:.0f} | {rss} | {blocks:,} | {used} | {kept} |")
    for t, types in sampler.types:
        print(f"- {t:.0f} s: {types}")
    print(f"\npeak RSS {max(r[1] for r in sampler.rows)} MiB, glibc in use {max(r[3] for r in sampler.rows)} MiB; "
          f"3 s after the run closed, worker running: RSS {closed[0]} MiB, glibc in use {closed[1]} MiB; "
          f"after the worker stopped {after_worker} MiB, "
          f"after gc.collect() {after_gc} MiB, after malloc_trim(0) {after_trim} MiB; peak with the tool "
          f"processes {sampler.peak_with_tools} MiB; event store {store / 2**20:.1f} MiB")
    if tracemalloc.is_tracing():
        print(f"Python allocations of every size (tracemalloc): at the start {traced_start} MiB, peak "
              f"{sampler.traced_peak} MiB, 3 s after the run closed {closed[2]} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--kind", default="noop", choices=("noop", "python"))
    parser.add_argument("--types", type=float, default=0.0, metavar="S",
                        help="every S seconds also count live objects by type (slow: walks the heap)")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="also trace Python's allocations of every size (slow): Python's or native?")
    parser.add_argument("--no-persist", action="store_true",
                        help="a diagnostic: no event store writes (the workflow keeps its whole log)")
    parser.add_argument("--continue-after-events", type=int, default=0, metavar="N",
                        help="continue as new once a run's history holds N events (0: when Temporal suggests it)")
    args = parser.parse_args()
    if args.tracemalloc:
        tracemalloc.start()
    asyncio.run(run(args.items, args.kind, args.types, persist=not args.no_persist,
                    continue_after=args.continue_after_events))


if __name__ == "__main__":
    main()
