"""The Temporal SDK runtime for our processes: core logs go to Python logging (stderr),
and, when asked, metrics are served for Prometheus.

The SDK's Rust core prints its own log lines to stdout by default, which would corrupt
``noetl-temporal run --json``. Forwarding them to the ``temporalio.core`` logger keeps
stdout for results and lets the usual logging configuration decide what is shown.

With ``metrics_port`` the runtime serves ``http://HOST:PORT/metrics`` in the Prometheus
text format: the SDK's own metrics (``temporal_*``: workflow/activity task latencies,
poll results, slots, cache) and ours (``noetl_*``, see :mod:`.metrics`), which are made
through the same runtime's meter.
"""

from __future__ import annotations

import logging

from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    PrometheusConfig,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)

__all__ = ["install_runtime", "make_runtime"]

_installed = False


def make_runtime(level: str = "WARN", *, metrics_port: int | None = None,
                 metrics_host: str = "0.0.0.0") -> Runtime:
    """A runtime forwarding core logs to Python logging; with Prometheus on ``metrics_port``."""
    logger = logging.getLogger("temporalio.core")
    metrics = None
    if metrics_port is not None:
        # Counters end in ``_total`` and durations are seconds, as Prometheus conventions ask.
        metrics = PrometheusConfig(bind_address=f"{metrics_host}:{metrics_port}",
                                   counters_total_suffix=True, durations_as_seconds=True)
    return Runtime(telemetry=TelemetryConfig(
        logging=LoggingConfig(filter=TelemetryFilter(core_level=level, other_level="ERROR"),
                              forwarding=LogForwardingConfig(logger=logger)),
        metrics=metrics))


def install_runtime(level: str = "WARN", *, metrics_port: int | None = None,
                    metrics_host: str = "0.0.0.0") -> None:
    """Make our runtime the process default (once; before any client exists)."""
    global _installed
    if _installed:
        return
    Runtime.set_default(make_runtime(level, metrics_port=metrics_port, metrics_host=metrics_host),
                        error_if_already_set=False)
    _installed = True
