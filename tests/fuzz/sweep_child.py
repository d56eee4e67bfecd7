"""The driver of ``test_template_sweep``: renders each case in a forked child under rlimits.

Run as ``python -m tests.fuzz.sweep_child CASES.json``: imports the templates once, then
forks one child per render (cheap, and a render that wedges or eats memory takes only its
child with it), two at a time. Each child sets ``RLIMIT_AS`` and ``RLIMIT_CPU``, renders,
and writes one JSON line; a child the kernel killed (the CPU limit) is reported as such.
Prints one JSON object per case: the case, its outcome, CPU seconds, size and message.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import sys
import time
from typing import Any

from noetl_temporal.errors import TemplateError
from noetl_temporal.templates import render
from noetl_temporal.templates.limits import weight

MEMORY = 2 << 30          # address space of a child: the imported package plus 1.5 GB or so
CPU_SECONDS = 5           # a render over this is killed (SIGXCPU): the task-side containment
WALL_SECONDS = 60         # a child that neither ends nor uses CPU (never expected) is killed
PARALLEL = 2


def _render_in_child(text: str, where: str, out: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 1))
    started = time.thread_time()
    result: dict[str, Any]
    try:
        value = render(text, {}, where=where)
        result = {"outcome": "value", "size": weight(value, 10**9, paid=False)}
    except TemplateError as exc:
        result = {"outcome": "error", "message": str(exc)[:400]}
    except BaseException as exc:   # anything else escaped the render: unclean
        result = {"outcome": "unclean", "message": f"{type(exc).__name__}: {str(exc)[:300]}"}
    result["cpu"] = time.thread_time() - started
    os.write(out, (json.dumps(result) + "\n").encode())
    os._exit(0)


def _start(case: dict[str, Any]) -> tuple[int, int, float]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        _render_in_child(case["text"], case["where"], write)
    os.close(write)
    return pid, read, time.monotonic()


def _finish(case: dict[str, Any], pid: int, read: int, started: float) -> dict[str, Any]:
    chunks = []
    while True:
        ready, _, _ = select.select([read], [], [], max(0.0, started + WALL_SECONDS - time.monotonic()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            break
        chunk = os.read(read, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    data = b"".join(chunks).strip()
    if data:
        result = json.loads(data)
    elif os.WIFSIGNALED(status):
        result = {"outcome": "killed", "message": signal.Signals(os.WTERMSIG(status)).name}
    else:
        result = {"outcome": "unclean", "message": f"child exited {os.waitstatus_to_exitcode(status)}"}
    result["wall"] = time.monotonic() - started
    return {**case, **result}


def main(path: str) -> None:
    with open(path, encoding="utf-8") as fh:
        cases = json.load(fh)
    running: list[tuple[dict[str, Any], int, int, float]] = []
    pending = list(cases)
    while pending or running:
        while pending and len(running) < PARALLEL:
            case = pending.pop(0)
            running.append((case, *_start(case)))
        # wait for whichever child finishes first
        ready, _, _ = select.select([r[2] for r in running], [], [], 1.0)
        for entry in [r for r in running if r[2] in ready]:
            running.remove(entry)
            print(json.dumps(_finish(*entry)), flush=True)
        for entry in [r for r in running if time.monotonic() - r[3] > WALL_SECONDS]:
            running.remove(entry)
            print(json.dumps(_finish(*entry)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
