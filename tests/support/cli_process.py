"""The command line as a user runs it: ``noetl-temporal`` in a subprocess of this Python,
from the repository's root. Shared by the dev-server tests of every part (``tests/workflow``,
``tests/client``, ``tests/hosting``) that drive the CLI or start a worker process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


async def cli(*args: str) -> tuple[int, str, str]:
    """``noetl-temporal ARGS`` to its end: ``(exit code, stdout, stderr)``."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "noetl_temporal.cli", *args, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=dict(os.environ))
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


def spawn_worker(address: str, task_queue: str) -> subprocess.Popen:
    """A ``noetl-temporal worker`` process in a session of its own (so a test can kill its group)."""
    return subprocess.Popen(
        [sys.executable, "-m", "noetl_temporal.cli", "worker", "--address", address, "--task-queue", task_queue],
        cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
