"""One way to host a worker, with one lifecycle: build, run, stop, close the tools.

``noetl-temporal run`` (through ``runner``), ``dev``, ``api --worker`` and ``worker``
all host their worker with :func:`hosted_worker`, so they start and stop it alike. What
the tools pooled on the event loop while the worker ran (HTTP connections, the python
fork server) is released when it stops: a stopped worker leaves no process or socket
behind.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from ..tools import aclose_clients, sweep_workdirs
from ..workflow.types import DEFAULT_TASK_QUEUE
from .activity_logs import quiet_cancelled_activities
from .worker import build_worker

__all__ = ["hosted_worker"]


@asynccontextmanager
async def hosted_worker(client: Client, *, task_queue: str = DEFAULT_TASK_QUEUE, owns_tools: bool = True,
                        **options: Any) -> AsyncIterator[Worker]:
    """Run a worker (:func:`~.worker.build_worker` with ``options``) for the ``async with`` block.

    Leaving the block stops it (Temporal's graceful shutdown: it stops polling, running
    activities are cancelled after the shutdown timeout), then closes the tools' pooled
    resources of this event loop. ``owns_tools=False`` leaves them open, for callers whose
    loop runs other workers that share them (tests, embedding in a service).
    """
    quiet_cancelled_activities()   # a cancelled task is one log line, not a traceback
    try:
        sweep_workdirs()   # scratch directories of killed workers on this machine
        worker = build_worker(client, task_queue=task_queue, **options)
        async with worker:
            yield worker
    finally:
        if owns_tools:
            await aclose_clients()  # pooled HTTP connections and the python fork server
