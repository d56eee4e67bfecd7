"""Pause Python's cyclic garbage collector while a large playbook is checked.

Why: parsing a 5 MB playbook builds about a million objects (nodes, marks, dicts, pydantic
models) that all stay alive until the check ends. Every 700 allocations the collector
scans the young ones, and every few of those scans the older ones, so each pass costs more
as the document grows: it made validation superlinear (2× to 3× the work at 5 MB,
measured in docs/performance.md). None of these objects form cycles that must be freed
before the check ends, so the collector waits until it does.

Process-wide and shared by threads (the API server validates on several): a count of
active pauses restores the collector when the last one ends, and only if it was on.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PAUSE_FROM_CHARS", "gc_paused"]

#: below this size the collector's cost is negligible: leave it alone
PAUSE_FROM_CHARS = 64 * 1024

_lock = threading.Lock()
_active = 0
_was_enabled = False


# perf: the cyclic collector rescanning a large playbook's objects (2-3.5x a load) — benchmark: probes.validate_speed
@contextmanager
def gc_paused(size: int) -> Iterator[None]:
    """Run the block with the collector paused when ``size`` (characters) is large."""
    if size < PAUSE_FROM_CHARS:
        yield
        return
    global _active, _was_enabled
    with _lock:
        if _active == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _was_enabled:
                gc.enable()
