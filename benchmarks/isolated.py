"""The second hand-written anchor: an expert who gives each task's user code a process of its own.

The workflows are ``handwritten``'s, unchanged: they call activities by name, and this
module registers the same names (``bench.step`` ...) as *synchronous* activities over the
same body texts. The worker runs them the way the Temporal Python SDK documents for
process isolation (``temporalio.worker.Worker``, ``activity_executor``):

- ``activity_executor``: a ``concurrent.futures.ProcessPoolExecutor`` with
  ``max_tasks_per_child=1``, so every activity's user code runs in a fresh process
  that exits after it (a crash, a leaked global or a changed ``os.environ`` dies with it),
  as the playbook's default python task does;
- its ``mp_context`` is ``forkserver``: ``max_tasks_per_child`` refuses ``fork`` (Python
  3.11), ``spawn`` would start and import a whole interpreter per task, and a fork server
  that has the activity module and the SDK's activity runner preloaded
  (``set_forkserver_preload``) forks a warm process instead, the same trick as the
  python tool's own fork server;
- ``max_workers`` equal to the worker's ``max_concurrent_activities`` (the SDK's default,
  100), as the SDK's docstring asks, so no activity waits for a process slot;
- ``shared_state_manager``: ``SharedStateManager.create_from_multiprocessing`` over a
  ``multiprocessing.Manager()``, which the SDK requires for sync activities outside a
  thread pool (cancellation and heartbeats cross the process boundary through it).

The bodies are ``bodies``' texts, compiled once per process at import (in the fork server,
by the preload), as the in-process anchor compiles them once per worker.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from . import bodies
from .handwritten import RETRY_DELAY

__all__ = ["ACTIVITIES", "MAX_CONCURRENT_ACTIVITIES", "worker_options"]

#: the SDK's default ``max_concurrent_activities`` (and the playbook worker's)
MAX_CONCURRENT_ACTIVITIES = 100

_STEP = bodies.compile_body(bodies.STEP)
_JOIN = bodies.compile_body(bodies.JOIN)
_PRODUCE = bodies.compile_body(bodies.PRODUCE)
_CONSUME = bodies.compile_body(bodies.CONSUME)
_FLAKY = bodies.compile_body(bodies.FLAKY)


# Module-level functions: a process pool pickles them by reference.
@activity.defn(name="bench.step")
def step(params: dict) -> dict:
    return _STEP(**params)


@activity.defn(name="bench.join")
def join(params: dict) -> dict:
    return _JOIN(**params)


@activity.defn(name="bench.produce")
def produce(params: dict) -> dict:
    return _PRODUCE(**params)


@activity.defn(name="bench.consume")
def consume(params: dict) -> dict:
    return _CONSUME(**params)


@activity.defn(name="bench.flaky")
def flaky(params: dict) -> dict:
    try:
        return _FLAKY(**params)
    except RuntimeError as exc:  # the body's own failure: retry after the fixed delay
        raise ApplicationError(str(exc), next_retry_delay=RETRY_DELAY) from None


ACTIVITIES = [step, join, produce, consume, flaky]


def worker_options() -> tuple[dict[str, Any], list[Any]]:
    """The ``Worker`` keyword arguments for process-isolated activities, and what to close after."""
    from temporalio.worker import SharedStateManager

    context = multiprocessing.get_context("forkserver")
    # What every task's process needs, imported once in the fork server: this module (the
    # bodies) and the SDK's runner of sync activities (``temporalio.worker._activity``).
    context.set_forkserver_preload([__name__, "temporalio.worker"])
    pool = ProcessPoolExecutor(max_workers=MAX_CONCURRENT_ACTIVITIES, mp_context=context, max_tasks_per_child=1)
    manager = context.Manager()
    options = {"activity_executor": pool, "max_concurrent_activities": MAX_CONCURRENT_ACTIVITIES,
               "shared_state_manager": SharedStateManager.create_from_multiprocessing(manager)}
    return options, [pool, manager]
