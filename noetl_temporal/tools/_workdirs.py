"""Scratch directories for python tasks, reused when a task leaves its directory as it got it.

Each python task runs in a fresh, empty directory of its own (files it writes do not meet
the next task). Creating and removing one per task costs the worker's event loop about
0.6 ms (``rmdir`` on this ext4 with ``discard``): a sixth of a fork-server task. So a
directory the task left empty, with its mode unchanged, goes back to a small pool instead,
and is checked again when it is handed out: whatever a late process of the previous task
may have written since makes it be removed and replaced, so a task always starts empty.

A directory is named after the worker that made it (``noetl-py-<pid>-...``). A worker that
is killed (SIGKILL, OOM) cannot remove its own, so :func:`sweep` (run when a worker starts)
removes those whose worker is no longer alive; 109 of them piled up after 9 kills. It never
touches a live worker's directories (several workers may share the machine).
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import stat
import tempfile
import time

__all__ = ["take", "give_back", "clear", "sweep", "KEEP"]

_PREFIX = "noetl-py-"
_OWNED = re.compile(r"^noetl-py-(\d+)-")
#: directories without an owner (made before names carried one) are swept once empty and
#: this old: no task of a live older worker could still be about to use them
_UNOWNED_AGE = 3600.0

# perf: removing and creating a temporary directory per task (~0.6 ms of the worker) — benchmark: probes.python_overhead
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
    return tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-")


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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # someone else's process: alive, and not ours to judge
        return True
    return True


def sweep(root: str | None = None) -> int:
    """Remove the scratch directories of workers that died without cleaning up; how many."""
    root = root or tempfile.gettempdir()
    removed = 0
    try:
        entries = list(os.scandir(root))
    except OSError:
        return 0
    for entry in entries:
        if not entry.name.startswith(_PREFIX):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        owner = _OWNED.match(entry.name)
        if owner is not None:
            if int(owner.group(1)) == os.getpid() or _alive(int(owner.group(1))):
                continue
            shutil.rmtree(entry.path, ignore_errors=True)
        elif time.time() - info.st_mtime > _UNOWNED_AGE:
            try:
                os.rmdir(entry.path)   # only when empty
            except OSError:
                continue
        else:
            continue
        removed += 1
    return removed


atexit.register(clear)
