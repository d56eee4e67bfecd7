"""Build a worker that runs playbook workflows and their task activities.

Embed it in an existing deployment with :func:`build_worker` (your workflows, activities,
interceptors and other ``Worker`` arguments merged with ours), or pass
``registration().worker_options(...)`` to your own ``Worker``.

**Why playbook workflows run outside the workflow sandbox by default** (per workflow:
``@workflow.defn(sandboxed=False)``, so a worker's other workflows keep the sandbox). The sandbox
guards *user* workflow code against non-determinism; no user code runs in a playbook
workflow (python tasks, shell commands and HTTP calls are activities, templates render in
jinja2's immutable sandbox with the workflow's own clock and random). The workflow module
is a thin shell over the pure engine, whose imports ``tests/test_architecture.py`` checks,
and recorded histories replay under both runners (``tests/hosting/test_replay.py``).
The sandbox costs CPU on every activation and, in SDK 1.35, on every payload the worker
visits (it re-enters the sandbox to find each payload's serialization context): 16-29%
of the worker's CPU on the parallel benchmarks (docs/performance.md). Ask for it with
``build_worker(sandboxed=True)`` or ``NOETL_WORKFLOW_SANDBOX=1`` (``registration.sandbox_requested``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner

from ..conversion.converter import users_codec, warn_without_claim_check
from ..store import sealing
from ..store.event_store import EventStore
from ..workflow.types import DEFAULT_TASK_QUEUE
from .full_collections import CollectorPacing
from .registration import SANDBOX_ENV, registration, sandbox_requested
from .sandbox import PASSTHROUGH_MODULES, sandbox_runner

__all__ = ["build_worker", "sandbox_runner", "workflow_runner", "PASSTHROUGH_MODULES", "SANDBOX_ENV",
           "enable_bytecode_cache"]


def workflow_runner(sandboxed: bool | None = None) -> WorkflowRunner:
    """A worker-wide runner: unsandboxed unless ``sandboxed`` (default:
    ``$NOETL_WORKFLOW_SANDBOX``) asks for :func:`sandbox_runner`.

    Kept for replaying and older embeddings; a worker no longer needs it for our workflow,
    which chooses per workflow (``registration``), so your own workflows keep the sandbox."""
    return sandbox_runner() if sandbox_requested(sandboxed) else UnsandboxedWorkflowRunner()


def enable_bytecode_cache() -> None:
    """Cache compiled modules even where PYTHONDONTWRITEBYTECODE is set.

    The workflow sandbox re-imports workflow modules for every run; without a bytecode
    cache each import recompiles them from source.
    """
    if sys.pycache_prefix is None:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")  # deterministic: worker start-up
        sys.pycache_prefix = str(Path(base) / "noetl-temporal" / "pycache")
    sys.dont_write_bytecode = False


def build_worker(client: Client, *, task_queue: str = DEFAULT_TASK_QUEUE,
                 max_concurrent_activities: int = 100, event_store: EventStore | None = None,
                 sandboxed: bool | None = None, **worker_options: Any) -> Worker:
    """A worker for playbook workflows, their tool activities and event persistence, plus
    anything of yours: ``worker_options`` are any ``temporalio.worker.Worker`` arguments, and
    your ``workflows``, ``activities`` and ``interceptors`` are merged with ours
    (:meth:`~.registration.Registration.worker_options`).

    ``event_store`` defaults to :func:`open_event_store` (the events of ``$NOETL_STORE`` or the
    embedded SQLite file). ``sandboxed``: see :func:`~.registration.registration`; your own
    workflows keep the sandbox either way. Task-attempt metrics are always counted (served
    only where the runtime serves metrics); tracing comes from the client's interceptors
    (``connect(tracing=)``). A client whose data converter lacks the claim check is logged
    as a warning (``converter.warn_without_claim_check``).
    """
    enable_bytecode_cache()
    warn_without_claim_check(client.data_converter, f"worker on task queue {task_queue}")
    # What this worker writes beside Temporal (events, large results) is sealed with the
    # client's own codec, so a deployment configures its protection once (``sealing``).
    sealing.install(users_codec(client.data_converter))
    ours = registration(event_store, sandboxed=sandboxed)
    worker_options.setdefault("max_concurrent_activities", max_concurrent_activities)
    # Full garbage collections between activations, not inside them (``full_collections.py``).
    worker_options["plugins"] = [*worker_options.get("plugins", ()), CollectorPacing()]
    return Worker(client, task_queue=task_queue, **ours.worker_options(**worker_options))
