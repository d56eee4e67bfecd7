"""The render child: renders a task's templates that use a task-only filter or test in a
process of its own, under CPU and memory rlimits (docs/durability.md, "Task-side renders").

Run as ``python -m noetl_temporal.templates.child CPU_SECONDS MEMORY_BYTES`` by
``tools/task_renders.py``, never by hand. It sets its limits first, then reads one JSON
request on stdin, ``{"strings": [[where, template], ...], "context": {...}}``, and writes JSON
lines on stdout: ``{"at": i}`` before it renders the ``i``-th string (so the parent knows
which one a limit stopped), then ``{"values": [...]}`` or ``{"error": ..., "at": i}`` (the located message, with its fix).
A render over the CPU limit is ended by the kernel (SIGXCPU, then SIGKILL at the hard
limit); one over the memory limit fails with ``MemoryError``, reported as ``"limit": "memory"``.
No Python-level budget can stop a C call that holds the GIL (``urlize``'s quadratic regex);
a process boundary can, and only this process is lost.
"""

from __future__ import annotations

import json
import resource
import sys
from typing import Any

from ..errors import TemplateError
from . import limits, render

__all__ = ["main"]


def _json_default(value: Any) -> Any:
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


def _write(line: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(line, default=_json_default) + "\n")
    sys.stdout.flush()


def main() -> None:
    cpu, memory = int(sys.argv[1]), int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))   # SIGXCPU's default action dumps core
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    try:
        _render_all(json.loads(sys.stdin.buffer.read()))
    except MemoryError:   # reading the request, or a value past what the render paid for
        _write({"error": None, "at": None, "limit": "memory"})


def _render_all(request: dict[str, Any]) -> None:
    context = request["context"]
    budget = limits.ValueBudget()   # what all of them build together, as render_value bounds it
    values = []
    for index, (where, text) in enumerate(request["strings"]):
        _write({"at": index})
        try:
            values.append(budget.add(render(text, context, where=where)))
        except TemplateError as exc:
            memory_error = isinstance(exc.__context__, MemoryError)
            _write({"error": str(exc), "at": index, "limit": "memory" if memory_error else None})
            return
        except limits.LimitExceeded as exc:
            _write({"error": TemplateError(f"not allowed in playbook templates: {exc}", template=text,
                                           where=where).message, "at": index, "limit": None})
            return
        except MemoryError:
            _write({"error": None, "at": index, "limit": "memory"})
            return
    _write({"values": values})


if __name__ == "__main__":
    main()
