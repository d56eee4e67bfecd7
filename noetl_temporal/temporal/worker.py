"""Build a worker that runs playbook workflows and their task activities.

Embed it in an existing deployment with :func:`build_worker` (or register
``PlaybookWorkflow`` and ``ACTIVITIES`` in your own ``Worker`` with
:func:`workflow_runner`).

**Why playbook workflows run outside the workflow sandbox by default.** The sandbox
guards *user* workflow code against non-determinism; no user code runs in a playbook
workflow (python tasks, shell commands and HTTP calls are activities, templates render in
jinja2's immutable sandbox with the workflow's own clock and random). The workflow module
is a thin shell over the pure engine, whose imports ``tests/test_architecture.py`` checks,
and recorded histories replay under both runners (``tests/temporal/test_replay.py``).
The sandbox costs CPU on every activation and, in SDK 1.35, on every payload the worker
visits (it re-enters the sandbox to find each payload's serialization context): 16-29%
of the worker's CPU on the parallel benchmarks (docs/performance.md). Ask for it with
``build_worker(sandboxed=True)`` or ``NOETL_WORKFLOW_SANDBOX=1``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from ..store.events import EventStore, open_event_store
from .activities import ACTIVITIES
from .metrics import MetricsInterceptor
from .pacing import yield_activation
from .persistence import EventSink
from .subplaybooks import resolve_playbook
from .types import DEFAULT_TASK_QUEUE
from .workflow import PlaybookWorkflow

__all__ = ["build_worker", "sandbox_runner", "workflow_runner", "PASSTHROUGH_MODULES", "SANDBOX_ENV",
           "enable_bytecode_cache"]

#: set to 1/true/yes/on to run playbook workflows in the SDK's workflow sandbox
SANDBOX_ENV = "NOETL_WORKFLOW_SANDBOX"

# Pure, deterministic modules shared with the sandbox instead of re-imported per run.
# jinja2 creates a lock at import and fails inside the sandbox; our own engine modules
# hold no clock, randomness or I/O (tests/test_architecture.py checks the engine, and that
# only it and the pure parts it may import are listed here).
PASSTHROUGH_MODULES = (
    "jinja2", "markupsafe", "pydantic", "pydantic_core", "annotated_types", "typing_extensions",
    "noetl_temporal.templates", "noetl_temporal.template_limits", "noetl_temporal.template_undefined",
    "noetl_temporal.errors", "noetl_temporal.status",
    "noetl_temporal.dsl.models", "noetl_temporal.engine",
    # the tracing interceptor's workflow side (only used when tracing is on)
    "opentelemetry",
)


def sandbox_runner() -> SandboxedWorkflowRunner:
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH_MODULES))


def workflow_runner(sandboxed: bool | None = None) -> WorkflowRunner:
    """The runner for playbook workflows: unsandboxed unless ``sandboxed`` (default:
    ``$NOETL_WORKFLOW_SANDBOX``) asks for :func:`sandbox_runner`."""
    if sandboxed is None:
        sandboxed = os.environ.get(SANDBOX_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return sandbox_runner() if sandboxed else UnsandboxedWorkflowRunner()


def enable_bytecode_cache() -> None:
    """Cache compiled modules even where PYTHONDONTWRITEBYTECODE is set.

    The workflow sandbox re-imports workflow modules for every run; without a bytecode
    cache each import recompiles them from source.
    """
    if sys.pycache_prefix is None:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        sys.pycache_prefix = str(Path(base) / "noetl-temporal" / "pycache")
    sys.dont_write_bytecode = False


def build_worker(client: Client, *, task_queue: str = DEFAULT_TASK_QUEUE,
                 max_concurrent_activities: int = 100, event_store: EventStore | None = None,
                 sandboxed: bool | None = None, **kwargs: Any) -> Worker:
    """A worker for playbook workflows, their tool activities and event persistence.

    ``event_store`` defaults to :func:`open_event_store` (``$NOETL_EVENT_STORE`` or the
    embedded SQLite file). ``sandboxed``: see :func:`workflow_runner`. Task-attempt metrics
    are always counted (served only where the runtime serves metrics); tracing comes from
    the client's interceptors (``connect(tracing=)``).
    """
    enable_bytecode_cache()
    sink = EventSink(event_store or open_event_store())
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[PlaybookWorkflow],
        activities=[*ACTIVITIES, resolve_playbook, sink.persist_events, yield_activation],
        workflow_runner=workflow_runner(sandboxed),
        max_concurrent_activities=max_concurrent_activities,
        interceptors=[MetricsInterceptor(), *kwargs.pop("interceptors", [])],
        **kwargs,
    )
