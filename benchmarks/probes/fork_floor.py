"""The floor under a process per python task: what forking the fork server's interpreter
costs when the child does nothing, and when it runs one small task.

    python3 -S -m benchmarks.probes.fork_floor [--forks 1000]

Run it with ``-S``, as the fork server runs. The script loads the python tool's runner
the way the fork server does (``start_site``, ``preload``, ``gc.freeze()``), then forks
N children per case and waits for each: one that exits at once; one that runs a
``main(i)`` task through the runner; one that first does the runner's warm-up (what a
spare does when no task is running) and then the task. Prints, per fork, the CPU of the
parent and of the child and their page faults (``getrusage``). No worker, no pipes, no
Temporal: only the kernel's and the interpreter's share of the tool's per-task cost
(docs/performance.md, "Where a parallel loop item's CPU goes").
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import resource
import sys
import time
from pathlib import Path

RUNNER = Path(__file__).resolve().parents[2] / "noetl_temporal" / "tools" / "python" / "runner" / "__init__.py"
TASK = {"code": 'def main(i):\n    return {"i": i + 1}\n', "filename": "<fork floor>", "params": {"i": 1}}


def _load_runner():
    # As zygote._load_runner does; not imported from there: importing the package would
    # load the worker's modules into this stand-in of the fork server.
    spec = importlib.util.spec_from_file_location("_noetl_pyrunner", RUNNER,
                                                  submodule_search_locations=[str(RUNNER.parent)])
    runner = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    return runner


def _usage() -> tuple[float, float, int, int]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime, own.ru_minflt, kids.ru_minflt


def _child(runner, case: str) -> None:
    if case == "warm-up, then the task":
        runner.warm()
    if case != "exit at once":
        json.dumps(runner._run(dict(TASK)))
    os._exit(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--forks", type=int, default=1000)
    n = parser.parse_args().forks
    runner = _load_runner()
    runner.start_site()
    runner.preload()
    gc.freeze()
    rss = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    print(f"fork server stand-in: {rss:.1f} MiB resident")
    for case in ("exit at once", "run the task", "warm-up, then the task"):
        before, t0 = _usage(), time.perf_counter()
        for _ in range(n):
            pid = os.fork()
            if pid == 0:
                _child(runner, case)
            os.waitpid(pid, 0)
        after, wall = _usage(), time.perf_counter() - t0
        parent, child, parent_faults, child_faults = (b - a for a, b in zip(before, after, strict=True))
        print(f"{case:<24} per fork: parent {parent / n * 1000:.3f} ms, child {child / n * 1000:.3f} ms CPU; "
              f"page faults parent {parent_faults / n:.0f}, child {child_faults / n:.0f}; "
              f"wall {wall / n * 1000:.3f} ms")


if __name__ == "__main__":
    main()
