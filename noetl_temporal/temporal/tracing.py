"""OpenTelemetry tracing through the SDK's ``TracingInterceptor`` (optional: ``[otel]`` extra).

On a client it traces workflow starts, signals and queries, and every worker built on
that client traces workflow runs and activity (tool task) attempts as child spans, linked
across processes through Temporal headers. Spans go to the global tracer provider:
configure it in code, or run under ``opentelemetry-instrument`` with the usual
``OTEL_*`` variables (exporter, endpoint, service name).
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import ConfigError

__all__ = ["tracing_enabled", "client_interceptors"]


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
