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
