"""A worker in its own OS process that a test can SIGKILL and restart."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

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
