"""The activity bodies, as source text shared by both sides of the comparison.

The playbook side runs each text as the ``code:`` of a ``kind: python`` task (the tool
calls ``main`` with the task's ``input`` bound by name); the hand-written side compiles
the very same text once and calls ``main(**params)`` inside its activities. One source,
so the two sides cannot drift apart: what differs is only how the work is carried.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["STEP", "JOIN", "PRODUCE", "CONSUME", "FLAKY", "compile_body"]

# One unit of work: small on purpose, so the per-step cost of the machinery shows.
STEP = '''\
def main(i):
    return {"i": i + 1}
'''

# The join of the parallel branches: sums what they returned.
JOIN = '''\
def main(values):
    return {"i": sum(values)}
'''

# A large result (about ``size`` bytes of JSON) handed from one step to the next.
PRODUCE = '''\
def main(size):
    return {"blob": "x" * size}
'''

CONSUME = '''\
def main(made):
    return {"length": len(made["blob"])}
'''

# Fails on its first two attempts, succeeds on the third. The attempt is counted in a
# file named by the caller (one per execution), so it works the same on both sides
# whatever the tool exposes about attempts.
FLAKY = '''\
def main(counter):
    import os
    n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
    with open(counter, "w") as f:
        f.write(str(n))
    if n < 3:
        raise RuntimeError(f"attempt {n} fails on purpose")
    return {"attempts": n}
'''


def compile_body(source: str) -> Callable[..., Any]:
    """The ``main`` function a body text defines (what the python tool would call)."""
    namespace: dict[str, Any] = {"__name__": "benchmark_body"}
    exec(compile(source, "<benchmark body>", "exec"), namespace)  # our own text, not user input
    return namespace["main"]
