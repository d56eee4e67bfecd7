"""Scratch directories for python tasks, reused when a task leaves its directory as it got it.

Each python task runs in a fresh, empty directory of its own (files it writes do not meet
the next task). Creating and removing one per task costs the worker's event loop about
0.6 ms (``rmdir`` on this ext4 with ``discard``): a sixth of a fork-server task. So a
directory the task left empty, with its mode unchanged, goes back to a small pool instead,
and is checked again when it is handed out: whatever a late process of the previous task
may have written since makes it be removed and replaced, so a task always starts empty.
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import tempfile

__all__ = ["take", "give_back", "clear", "KEEP"]

KEEP = 64  # directories kept for reuse; past that they are removed as before
_MODE = 0o700  # what mkdtemp creates: a task that chmods its directory does not pass it on
_free: list[str] = []


def _reusable(path: str) -> bool:
    try:
        info = os.stat(path)
        if not stat.S_ISDIR(info.st_mode) or stat.S_IMODE(info.st_mode) != _MODE or info.st_uid != os.getuid():
            return False
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def _remove(path: str) -> None:
    try:
        os.rmdir(path)  # the usual case: the code left nothing behind
    except OSError:
        shutil.rmtree(path, ignore_errors=True)


def take() -> str:
    """An empty directory for one task."""
    while _free:
        path = _free.pop()
        if _reusable(path):
            return path
        _remove(path)
    return tempfile.mkdtemp(prefix="noetl-py-")


def give_back(path: str) -> None:
    """The task is done with ``path``: keep it for the next task if it is as it was given."""
    if len(_free) < KEEP and _reusable(path):
        _free.append(path)
    else:
        _remove(path)


def clear() -> None:
    """Remove the kept directories (the worker is stopping)."""
    while _free:
        _remove(_free.pop())


atexit.register(clear)
