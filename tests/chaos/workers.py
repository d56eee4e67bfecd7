"""A worker in its own OS process that a test can SIGKILL and restart."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.processes import processes_with_arg

REPO = Path(__file__).resolve().parents[2]


class WorkerProcess:
    """``noetl-temporal worker`` (this checkout) polling ``task_queue``; ``kill()`` is SIGKILL
    of its whole process group (the worker and the tool processes it started)."""

    def __init__(self, address: str, task_queue: str) -> None:
        self.argv = [sys.executable, "-m", "noetl_temporal.cli", "worker", "--address", address,
                     "--task-queue", task_queue]
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(self.argv, cwd=REPO, env=env, start_new_session=True,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.starts += 1

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def __enter__(self) -> WorkerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


class DevProcess:
    """``noetl-temporal dev`` (this checkout) on free loopback ports, its stores under ``home``.

    ``db`` keeps Temporal's state in a file (``--db``), so a restart on the same ports
    resumes the executions that were running.
    """

    def __init__(self, home: Path, *, db: Path | None = None) -> None:
        from noetl_temporal.client.devserver import free_port

        self.home, self.db = home, db
        self.port, self.temporal_port, self.ui_port = free_port(), free_port(), free_port()
        self.argv = [sys.executable, "-m", "noetl_temporal.cli", "dev", "--port", str(self.port),
                     "--temporal-port", str(self.temporal_port), "--ui-port", str(self.ui_port),
                     "--event-store", str(home / "events.db"), "--catalog-path", str(home / "catalog.db"),
                     "--execution-timeout", "180", "--heartbeat-timeout", "5"]
        if db is not None:
            self.argv += ["--db", str(db)]
        self.proc: subprocess.Popen | None = None
        self.log = home / "dev.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> None:
        import time

        import httpx

        env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(self.home)}
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.argv, cwd=REPO, env=env, start_new_session=True,
                                         stdout=log, stderr=log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"noetl-temporal dev exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/ready", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"noetl-temporal dev did not become ready: {self.log.read_text()[-2000:]}")

    def kill(self) -> None:
        """SIGKILL the dev process and everything it started (Temporal server, tools)."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        # the Temporal server runs in its own session (setpriv --pdeathsig TERM): wait for it to go
        import time

        for _ in range(100):
            if not _listening(self.temporal_port):
                break
            time.sleep(0.1)
        # It stops listening before it lets go of its database: a restart on the same --db
        # file while the old server still holds it fails with SQLITE_BUSY.
        if self.db is not None:
            for _ in range(300):
                if not processes_with_arg(str(self.db)):
                    return
                time.sleep(0.1)

    def __enter__(self) -> DevProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0
