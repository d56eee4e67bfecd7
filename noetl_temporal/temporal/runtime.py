"""The Temporal SDK runtime for our processes: core logs go to Python logging (stderr).

The SDK's Rust core prints its own log lines to stdout by default, which would corrupt
``noetl-temporal run --json``. Forwarding them to the ``temporalio.core`` logger keeps
stdout for results and lets the usual logging configuration decide what is shown.
"""

from __future__ import annotations

import logging

from temporalio.runtime import LogForwardingConfig, LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

__all__ = ["install_runtime"]

_installed = False


def install_runtime(level: str = "WARN") -> None:
    """Make a stdout-free runtime the process default (once; before any client exists)."""
    global _installed
    if _installed:
        return
    logger = logging.getLogger("temporalio.core")
    runtime = Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(
        filter=TelemetryFilter(core_level=level, other_level="ERROR"),
        forwarding=LogForwardingConfig(logger=logger))))
    Runtime.set_default(runtime, error_if_already_set=False)
    _installed = True
