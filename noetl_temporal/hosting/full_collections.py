"""Full garbage collections between workflow activations, not inside them.

Temporal's deadlock detector fails a workflow task whose activation runs longer than 2 s of
wall time, and the retried task replays the same work. CPython's automatic collector runs a
*full* collection (every tracked object of the process) whenever enough objects have
survived into the oldest generation, in whatever thread allocates at that moment: often an
activation. A worker running a 10,000-step playbook holds half a million tracked objects
(the analysed playbook, and in a CLI run also the loaded one): a full collection takes
0.2–0.3 s on a quiet machine and 1.4–1.9 s on a loaded one, and inside the first activation
of such a run it tripped the detector (docs/performance.md, "First activation and rebuilds").
The playbook's own objects cannot be left out of them (``gc.freeze`` would also keep every
cyclic garbage of the moment forever).

So while a worker runs, this plugin turns off the automatic *full* collections (young ones
stay automatic: they only traverse recent objects) and runs them itself on the worker's
event loop, when no activation is in flight: activations are submitted from that loop, so
none can start during the collection. A full collection runs when the collector would have
wanted one (its oldest-generation counter past the threshold) and at most once per ten times
its last duration, so it never takes more than a tenth of the time; if activations never
pause for ``MAX_POSTPONE_S``, it runs anyway, as the automatic collector would have. The
process's thresholds come back when its last worker stops. A worker given its own
``workflow_task_executor``, or a process that turned the collector off, is left alone.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from temporalio.worker import Plugin

if TYPE_CHECKING:
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer, ReplayerConfig, Worker, WorkerConfig, WorkflowReplayResult

__all__ = ["CollectorPacing", "CHECK_EVERY_S", "MAX_POSTPONE_S", "paced"]

CHECK_EVERY_S = 0.25
MAX_POSTPONE_S = 30.0
_NO_AUTOMATIC_FULL = 1 << 30   # a gen-2 threshold no count of young collections reaches

_lock = threading.Lock()
_in_flight = 0      # activations running now, in every worker of the process
_workers = 0        # workers running with the automatic full collections off
_saved: tuple[int, int, int] | None = None
_last_full = 0.0    # monotonic end of the last full collection this module ran
_last_cost = 0.0    # its duration


def paced() -> bool:
    """Full collections are this module's now (a worker runs with it)."""
    return _saved is not None


class _CountingExecutor(concurrent.futures.ThreadPoolExecutor):
    """The SDK's activation thread pool, counting what is submitted and not yet done.

    Counted from submission, not from the start: the deadlock detector's 2 s run from
    there, so a queued activation must hold a collection back too. Uncounted when its
    future is done, whichever way: a future cancelled before it ran (a pool shut down with
    work queued) never runs a wrapper, and a count left behind would hold every later
    collection back to ``MAX_POSTPONE_S``.
    """

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        global _in_flight
        with _lock:
            _in_flight += 1
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            _done()
            raise
        future.add_done_callback(_done)
        return future


def _done(_: object = None) -> None:
    global _in_flight
    with _lock:
        _in_flight -= 1


# perf: full collections inside activations (0.2-1.9 s each on a big playbook) — benchmark: benchmarks.first_activation
class CollectorPacing(Plugin):
    """The worker plugin: ``build_worker`` adds it."""

    def __init__(self) -> None:
        self._counting = False

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        if config.get("workflow_task_executor") is None:
            # The SDK's own default, counted.
            workers = config.get("max_concurrent_workflow_tasks") or 500
            config["workflow_task_executor"] = _CountingExecutor(
                max_workers=workers, thread_name_prefix="temporal_workflow_")
            self._counting = True
        return config

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        if not self._counting or not _take():
            await next(worker)
            return
        pacer = asyncio.get_running_loop().create_task(_pace())
        try:
            await next(worker)
        finally:
            pacer.cancel()
            _give_back()

    def configure_replayer(self, config: ReplayerConfig) -> ReplayerConfig:
        return config

    def run_replayer(
        self, replayer: Replayer, histories: AsyncIterator[WorkflowHistory],
        next: Callable[[Replayer, AsyncIterator[WorkflowHistory]],
                       AbstractAsyncContextManager[AsyncIterator[WorkflowReplayResult]]],
    ) -> AbstractAsyncContextManager[AsyncIterator[WorkflowReplayResult]]:
        return next(replayer, histories)


def _take() -> bool:
    global _workers, _saved, _last_full
    with _lock:
        if _saved is None:
            if not gc.isenabled():
                return False
            _saved = gc.get_threshold()
            _last_full = time.monotonic()
            gc.set_threshold(_saved[0], _saved[1], _NO_AUTOMATIC_FULL)
        _workers += 1
        return True


def _give_back() -> None:
    global _workers, _saved
    with _lock:
        _workers -= 1
        if _workers == 0 and _saved is not None:
            if gc.get_threshold()[2] == _NO_AUTOMATIC_FULL:   # unless someone set their own since
                gc.set_threshold(*_saved)
            _saved = None


async def _pace() -> None:
    while True:
        await asyncio.sleep(CHECK_EVERY_S)
        collect_if_due()


def collect_if_due(now: float | None = None) -> bool:
    """One check (on the worker's event loop): run a full collection if one is due."""
    global _last_full, _last_cost
    saved = _saved
    if saved is None or not gc.isenabled():
        return False
    now = time.monotonic() if now is None else now
    if gc.get_count()[2] <= saved[2] or now - _last_full < 10 * _last_cost:
        return False
    if _in_flight and now - _last_full < MAX_POSTPONE_S:
        return False
    started = time.monotonic()
    gc.collect()
    _last_full = time.monotonic()
    _last_cost = _last_full - started
    return True
