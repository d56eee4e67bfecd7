"""The opt-in in-worker mode of the python tool (``in_worker: true``): tiny trusted code
run in a thread of the worker itself, no process at all.

It reuses the runner's ``_run`` (same bindings, ``main()`` calling, result and error
shape), so a task behaves the same in both modes as long as it stays in its lane. What
it gives up is the process boundary (docs/tools.md lists it): ``os._exit`` or a crash
in C code takes the worker down; a timeout or a cancel ends the task but cannot stop a
runaway loop (its thread runs on); ``sys.modules``, ``os.environ``, the working
directory and module state are the worker's and are shared by all tasks; prints go to
the worker's own stdout/stderr, not to ``py.stdout``/``py.stderr``.

Threads of their own (``IN_WORKER_THREADS``), not the loop's default executor: a task
that hangs must not starve the keychain and result-store work that uses that one.

Not a ``ThreadPoolExecutor`` either, for two reasons:

* the hand-off is the mode's main cost (the code itself is meant to take microseconds):
  ``run_in_executor`` + ``wait_for`` go through two futures, a work item, the pool's
  locks and a timeout task, and those locks contend for the GIL with the threads that
  take the work. Here a task is one ``SimpleQueue.put`` (C, no Python lock) and one
  ``call_soon_threadsafe`` back, about half the CPU per task;
* the pool's threads are joined when the interpreter exits, so one task that never
  returns would keep the worker process from ever exiting. These threads are daemons.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from types import CodeType
from typing import Any

from . import runner

IN_WORKER_THREADS = 8

# perf: run_in_executor's futures and locks per in-worker task (41 -> 21 us) — benchmark: par_loop, probes.fast_path_cpu
_QUEUE: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Future, dict[str, Any]]] = queue.SimpleQueue()
_THREADS: list[threading.Thread] = []
_START_LOCK = threading.Lock()


# Compiled task code by (code, filename): a task runs the same text on every step and loop
# item, and compiling it was most of a tiny task's time here (20 of 24 us for a one-line
# ``main``). Code objects are immutable, so one serves every run. Bounded: emptied when full.
# perf: compiling an in-worker task's code per run (20 of 24 us a tiny task) — benchmark: probes.fast_path_cpu
_COMPILED: dict[tuple[str, str], CodeType] = {}
_COMPILED_MAX = 256


def _compiled(code: str, filename: str) -> CodeType | None:
    """The code compiled as the runner compiles it (no ``__future__`` flags of this module's),
    or None when it does not compile: the runner then compiles it and answers the error."""
    key = (code, filename)
    found = _COMPILED.get(key)
    if found is None:
        try:
            found = compile(code, filename, "exec", dont_inherit=True)
        except Exception:  # noqa: BLE001 - SyntaxError, ValueError, RecursionError ...: the runner's to answer
            return None
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.clear()
        _COMPILED[key] = found
    return found


def _run(request: dict[str, Any]) -> dict[str, Any]:
    import sys

    compiled = _compiled(request["code"], request["filename"])
    if compiled is not None:
        request = dict(request, compiled=compiled)
    try:
        return runner._run(request)
    finally:
        # _run registers the task's module (dataclasses and pickle look it up); in a
        # worker that would keep the last task's globals alive.
        sys.modules.pop(runner.MODULE, None)


def _deliver(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.done():  # timed out or cancelled while the code ran
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


def _serve() -> None:
    while True:
        loop, future, request = _QUEUE.get()
        if future.cancelled():  # given up before a thread got to it: never start it
            continue
        result: Any = None
        error: BaseException | None = None
        try:
            result = _run(request)
        except BaseException as exc:  # _run answers user errors itself; this is ours
            error = exc
        try:
            loop.call_soon_threadsafe(_deliver, future, result, error)
        except RuntimeError:  # the loop closed meanwhile: nobody waits for this answer
            pass
        del loop, future, request, result, error  # an idle thread keeps nothing alive


def _after_fork_in_child() -> None:
    """A forked copy of the worker has none of these threads (nor their work): start over."""
    global _QUEUE, _START_LOCK
    _QUEUE = queue.SimpleQueue()
    _START_LOCK = threading.Lock()
    _THREADS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _ensure_threads() -> None:
    if len(_THREADS) >= IN_WORKER_THREADS:
        return
    with _START_LOCK:
        while len(_THREADS) < IN_WORKER_THREADS:
            thread = threading.Thread(target=_serve, name=f"noetl-python_{len(_THREADS)}", daemon=True)
            thread.start()
            _THREADS.append(thread)


def _expire(future: asyncio.Future) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


async def run(request: dict[str, Any], timeout: float) -> dict[str, Any]:
    """The runner's response dict; ``TimeoutError`` past ``timeout`` (the thread runs on).

    A cancelled caller cancels the future: a task no thread has taken yet never runs."""
    _ensure_threads()
    loop = asyncio.get_running_loop()
    future: asyncio.Future[dict[str, Any]] = loop.create_future()
    timer = loop.call_later(timeout, _expire, future)
    _QUEUE.put((loop, future, request))
    try:
        return await future
    finally:
        timer.cancel()
