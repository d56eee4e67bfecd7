"""OpenTelemetry tracing through the SDK's ``TracingInterceptor`` (optional: ``[otel]`` extra).

On a client it traces workflow starts, signals and queries, and every worker built on
that client traces workflow runs and activity (tool task) attempts as child spans, linked
across processes through Temporal headers. Spans go to the global tracer provider:
configure it in code, or run under ``opentelemetry-instrument`` with the usual
``OTEL_*`` variables (exporter, endpoint, service name).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ..errors import ConfigError

__all__ = ["tracing_enabled", "client_interceptors", "label_task_span"]


def tracing_enabled(flag: bool | None = None) -> bool:
    """An explicit flag wins; else ``NOETL_TRACING=1``."""
    if flag is not None:
        return flag
    return os.environ.get("NOETL_TRACING", "").strip().lower() in ("1", "true", "yes", "on")


def client_interceptors(tracing: bool | None = None) -> list[Any]:
    if not tracing_enabled(tracing):
        return []
    try:
        from temporalio.contrib.opentelemetry import TracingInterceptor
    except ImportError:
        raise ConfigError("tracing needs OpenTelemetry, which is not installed",
                          fix="pip install 'noetl-temporal[otel]', or drop --tracing / NOETL_TRACING") from None
    return [TracingInterceptor()]


def label_task_span(execution_id: str, step: str, task: str, kind: str) -> None:
    """Name the task on its activity span: the SDK names it after the activity type
    (``RunActivity:noetl.run_task``), the same for every step, so a trace would not say
    which step a span ran. Attributes ``noetl.step``, ``noetl.task``, ``noetl.tool_kind``,
    ``noetl.execution_id``; the span name stays the SDK's (one name per activity type keeps
    a backend's span-name index small). A no-op unless tracing is on: OpenTelemetry is only
    looked up when something (the tracing interceptor) already imported it."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes({"noetl.step": step, "noetl.task": task, "noetl.tool_kind": kind,
                             "noetl.execution_id": execution_id})
