"""Process checks for tests that verify a task left nothing running."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True if ``pid`` runs. Zombies count as dead: PID 1 of a container may not reap them."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


async def wait_dead(pid: int, seconds: float = 5.0) -> bool:
    """Poll until ``pid`` is gone; False if it still runs after ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not pid_alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


def processes_with_arg(arg: str) -> list[int]:
    """Live processes with ``arg`` as one of their command-line arguments."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[-1].split()[0]
            except OSError:
                continue
            if arg.encode() in argv and state != "Z":
                found.append(int(entry))
    return found
