"""Build a worker that runs playbook workflows and their task activities.

Embed it in an existing deployment with :func:`build_worker` (or register
``PlaybookWorkflow`` and ``ACTIVITIES`` in your own ``Worker``, using
:func:`sandbox_runner` for the workflow sandbox).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from ..store.events import EventStore, open_event_store
from .activities import ACTIVITIES
from .metrics import MetricsInterceptor
from .pacing import yield_activation
from .persistence import EventSink
from .subplaybooks import resolve_playbook
from .types import DEFAULT_TASK_QUEUE
from .workflow import PlaybookWorkflow

__all__ = ["build_worker", "sandbox_runner", "PASSTHROUGH_MODULES", "enable_bytecode_cache"]

# Pure, deterministic modules shared with the sandbox instead of re-imported per run.
# jinja2 creates a lock at import and fails inside the sandbox; our own engine modules
# hold no clock, randomness or I/O (tests/test_architecture.py checks the engine, and that
# only it and the pure parts it may import are listed here).
PASSTHROUGH_MODULES = (
    "jinja2", "markupsafe", "pydantic", "pydantic_core", "annotated_types", "typing_extensions",
    "noetl_temporal.templates", "noetl_temporal.template_limits", "noetl_temporal.errors", "noetl_temporal.status",
    "noetl_temporal.dsl.models", "noetl_temporal.engine",
    # the tracing interceptor's workflow side (only used when tracing is on)
    "opentelemetry",
)


def sandbox_runner() -> SandboxedWorkflowRunner:
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH_MODULES))


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
                 **kwargs: Any) -> Worker:
    """A worker for playbook workflows, their tool activities and event persistence.

    ``event_store`` defaults to :func:`open_event_store` (``$NOETL_EVENT_STORE`` or the
    embedded SQLite file). Task-attempt metrics are always counted (served only where the
    runtime serves metrics); tracing comes from the client's interceptors (``connect(tracing=)``).
    """
    enable_bytecode_cache()
    sink = EventSink(event_store or open_event_store())
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[PlaybookWorkflow],
        activities=[*ACTIVITIES, resolve_playbook, sink.persist_events, yield_activation],
        workflow_runner=sandbox_runner(),
        max_concurrent_activities=max_concurrent_activities,
        interceptors=[MetricsInterceptor(), *kwargs.pop("interceptors", [])],
        **kwargs,
    )
