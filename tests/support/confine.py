"""A runtime guard: a test that reads the project's data beside the checkout fails at once.

The static scan in tests/test_self_contained.py finds paths built to leave the repository;
this audit hook catches what a scan cannot see (a path from an environment variable, a
helper that walks up). It watches only the places beside a checkout where this project's
shared data sits on a developer's machine (``../shared``, or ``../../shared`` from a
worktree), so it costs a substring test per open and never trips on temporary files.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: data a developer's machine keeps beside the checkout, which a fresh clone does not have
FORBIDDEN = tuple(str(base / "shared") for base in (REPO.parent, REPO.parent.parent))
_EVENTS = frozenset({"open", "os.scandir", "os.listdir", "glob.glob"})


class ReadOutsideRepository(RuntimeError):
    """A test read a file beside the checkout instead of its copy under tests/."""


def check(path: object) -> None:
    """Raise when ``path`` is (under) one of the forbidden places."""
    if isinstance(path, int) or path is None:  # an open file descriptor: no path to check
        return
    text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else ""
    if "shared" not in text:  # the cheap test first: almost every open stops here
        return
    full = os.path.abspath(text)
    for place in FORBIDDEN:
        if full == place or full.startswith(place + os.sep):
            raise ReadOutsideRepository(
                f"a test read {full}, outside the repository: copy what it needs under tests/ "
                "(see tests/corpus/README.md) and read it from there")


def _hook(event: str, args: tuple) -> None:
    if event in _EVENTS and args:
        check(args[0])


def install() -> None:
    """Add the audit hook (once per process; audit hooks cannot be removed)."""
    if not getattr(sys, "_noetl_tests_confined", False):
        sys.addaudithook(_hook)
        sys._noetl_tests_confined = True  # type: ignore[attr-defined]
