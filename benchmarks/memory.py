"""Peak memory of a worker process *and every process below it*, sampled from /proc.

Each side's worker runs in its own process, so everything under that process (python
tool runners, shell children, a fork server and its children) is that side's cost.
A thread samples both trees every ``interval`` seconds: the resident set of each
process (``/proc/PID/statm``, cheap), summed per tree. The sum of RSS counts pages that
processes share (a forked child shares its parent's pages) once per process, so when a
tree reaches a new peak its proportional set size (``smaps_rollup`` ``Pss``: shared
pages split between their users, machine-wide, so it depends on what else runs) is read
as well and reported beside it.

Sampling misses a process that lives shorter than the interval; processes that exist
for the whole of a parallel wave (the costly case) are seen.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

__all__ = ["Peak", "TreeSampler", "descendants"]

PAGE = os.sysconf("SC_PAGE_SIZE")


def _children(pid: int) -> list[int]:
    """Direct children of ``pid``: every thread keeps its own list (Linux ≥ 3.5)."""
    out: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out.extend(int(p) for p in f.read().split())
        except OSError:
            continue
    return out


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it, parents first."""
    seen, queue = [], [pid]
    while queue:
        current = queue.pop()
        seen.append(current)
        queue.extend(_children(current))
    return seen


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0  # gone between listing and reading


def _pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


@dataclass
class Peak:
    rss: int = 0          # bytes: the largest sum of RSS over the tree seen
    pss: int = 0          # bytes: the tree's PSS at that moment
    processes: int = 0    # how many processes the tree had then


class TreeSampler:
    """``with TreeSampler({"a": pid_a, "b": pid_b}) as s: ...; s.take()`` -> peaks per name."""

    def __init__(self, roots: dict[str, int], interval: float = 0.02) -> None:
        self.roots = roots
        self.interval = interval
        self._peaks = {name: Peak() for name in roots}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def take(self) -> dict[str, Peak]:
        """The peaks since the last ``take`` (or the start), and start over."""
        with self._lock:
            peaks, self._peaks = self._peaks, {name: Peak() for name in self.roots}
        return peaks

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            for name, root in self.roots.items():
                self._sample(name, root)

    def _sample(self, name: str, root: int) -> None:
        pids = descendants(root)
        rss = sum(_rss(p) for p in pids)
        with self._lock:
            if rss <= self._peaks[name].rss:
                return
        pss = sum(_pss(p) for p in pids)  # only at a new peak: smaps_rollup is not cheap
        with self._lock:
            if rss > self._peaks[name].rss:  # ``take`` may have started over meanwhile
                self._peaks[name] = Peak(rss=rss, pss=pss, processes=len(pids))
