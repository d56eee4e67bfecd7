"""CPU seconds a worker's process tree spent: the worker and everything below it.

Read from ``/proc/PID/stat`` for every live process of the tree: user and system time of
the process *and of its children that it has reaped* (a python task's forked process is
reaped by the fork server, a spawned one by the worker), so processes that came and went
between two readings still count. The difference of two readings is what the tree spent
between them. On a 2-core machine this is what the sides compete for: a side whose tree
needs more CPU per run is slower once the work runs in parallel.
"""

from __future__ import annotations

import os

from .memory import descendants

__all__ = ["tree_cpu"]

TICKS = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0  # gone between listing and reading
    # after the command name: state is field 0, utime/stime/cutime/cstime are 11..14
    return sum(int(x) for x in fields[11:15]) / TICKS


def tree_cpu(root: int) -> float:
    """Seconds of CPU the tree under ``root`` has used so far (see the module doc)."""
    return sum(_cpu(pid) for pid in descendants(root))
