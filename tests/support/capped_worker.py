"""A worker in its own OS process under a memory cap: the ``ulimit -v`` of the project rule
"no input can take a worker down" (docs/durability.md, "The worker under test runs under a
memory cap").

``noetl-temporal worker`` (this checkout) runs with ``RLIMIT_AS`` set before it starts, so a
bomb that made the worker allocate past the cap would end it (``MemoryError`` or a failed
``mmap``) instead of going unnoticed on a machine with memory to spare. The Temporal dev
server and the test itself stay outside the cap. ``alive()`` tells whether the very same
process still runs: a worker that died and was replaced would not pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Enough for a normal worker (the Temporal SDK's core reserves its threads' stacks and arenas
#: as address space, ~1 GiB), far less than what the bombs of issue 38 made a worker hold.
MEMORY_CAP = 3 << 30


def _cap(limit: int) -> None:
    # In the child, between fork and exec: the worker and everything it starts inherit it.
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


class CappedWorker:
    """``noetl-temporal worker --address A --task-queue Q`` under ``RLIMIT_AS = cap``."""

    def __init__(self, address: str, task_queue: str, log: Path, *, cap: int = MEMORY_CAP) -> None:
        self.argv = [sys.executable, "-m", "noetl_temporal.cli", "worker", "--address", address,
                     "--task-queue", task_queue]
        self.log, self.cap = log, cap
        self.proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 60.0) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.argv, cwd=REPO, env=env, start_new_session=True,
                                         stdout=log, stderr=log, preexec_fn=lambda: _cap(self.cap))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the capped worker exited at start: {self.tail()}")
            if b"worker polling" in self.log.read_bytes():
                return
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"the capped worker did not start polling: {self.tail()}")

    def alive(self) -> bool:
        """The worker started by ``start()`` still runs (same PID, not a zombie)."""
        return self.proc is not None and self.proc.poll() is None

    def limit(self) -> int:
        """The address-space limit the running worker has, read from the outside."""
        for line in Path(f"/proc/{self.pid}/limits").read_text().splitlines():
            if line.startswith("Max address space"):
                return int(line.split()[3])
        raise AssertionError("no address-space line in /proc/PID/limits")

    def tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return ""

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (the worker and the tool processes it started)."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def __enter__(self) -> CappedWorker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


async def cancel_and_wait(client, execution_id: str, polls: int = 300):
    """Cancel an execution and poll until it leaves RUNNING: its last description and how many
    seconds the cancel took to take effect (what the bomb tests bound)."""
    from noetl_temporal.client import control

    cancelled_at = time.monotonic()
    await control.cancel(client, execution_id, reason="bomb")
    for _ in range(polls):
        info = await control.describe(client, execution_id)
        if info.state != "RUNNING":
            break
        await asyncio.sleep(0.2)
    return info, time.monotonic() - cancelled_at
