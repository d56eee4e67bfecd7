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
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from . import _pyrunner

IN_WORKER_THREADS = 8
_EXECUTOR: concurrent.futures.ThreadPoolExecutor | None = None


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _EXECUTOR
    if _EXECUTOR is None:
        _EXECUTOR = concurrent.futures.ThreadPoolExecutor(IN_WORKER_THREADS, thread_name_prefix="noetl-python")
    return _EXECUTOR


def _run(request: dict[str, Any]) -> dict[str, Any]:
    import sys

    try:
        return _pyrunner._run(request)
    finally:
        # _run registers the task's module (dataclasses and pickle look it up); in a
        # worker that would keep the last task's globals alive.
        sys.modules.pop(_pyrunner.MODULE, None)


async def run(request: dict[str, Any], timeout: float) -> dict[str, Any]:
    """The runner's response dict; ``TimeoutError`` past ``timeout`` (the thread runs on)."""
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(_executor(), _run, request)
    return await asyncio.wait_for(future, timeout)
