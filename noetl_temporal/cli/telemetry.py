"""``--metrics-port`` / ``--tracing`` for the long-running commands (worker, api, dev)."""

from __future__ import annotations

import argparse
import os

from ..errors import ConfigError

__all__ = ["add_telemetry_arguments", "apply_telemetry_arguments"]


def add_telemetry_arguments(parser: argparse.ArgumentParser) -> None:
    env_port = os.environ.get("NOETL_METRICS_PORT")
    parser.add_argument("--metrics-port", type=int, metavar="PORT",
                        default=int(env_port) if env_port and env_port.isdigit() else None,
                        help="serve Prometheus metrics (the SDK's temporal_* and noetl_*) at "
                             "http://HOST:PORT/metrics (default: $NOETL_METRICS_PORT, else off)")
    parser.add_argument("--metrics-host", metavar="HOST", default="127.0.0.1",
                        help="address the metrics endpoint listens on (default 127.0.0.1; "
                             "0.0.0.0 for a scraper on another machine or container)")
    parser.add_argument("--tracing", action="store_true",
                        help="OpenTelemetry spans for workflows and tasks, to the global tracer provider "
                             "(needs the [otel] extra; or set NOETL_TRACING=1)")


def apply_telemetry_arguments(args: argparse.Namespace) -> None:
    """Before any Temporal client exists: the runtime with metrics, and tracing on."""
    from ..hosting.runtime import install_runtime
    from ..workflow.tracing import client_interceptors

    if getattr(args, "tracing", False):
        client_interceptors(True)           # fails now, with the fix, if OpenTelemetry is missing
        os.environ["NOETL_TRACING"] = "1"   # every client this process makes traces
    port = getattr(args, "metrics_port", None)
    if port is None:
        return
    if not 0 < port < 65536:
        raise ConfigError(f"--metrics-port {port} is not a TCP port", fix="pass a port from 1 to 65535")
    try:
        install_runtime(metrics_port=port, metrics_host=args.metrics_host)
    except Exception as exc:  # the SDK binds the port while building the runtime
        raise ConfigError(f"cannot serve metrics on {args.metrics_host}:{port}: {exc}",
                          fix="pick another --metrics-port, or stop what uses it") from None
