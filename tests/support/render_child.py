"""Template renders in a child process under a 1 GiB address-space cap, each with its CPU
time: a bomb that escaped the limits kills the child, never the test run."""

from __future__ import annotations

import json
import subprocess
import sys

_CHILD = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from noetl_temporal.errors import TemplateError
from noetl_temporal.templates import render
out = []
for text in json.loads(sys.argv[1]):
    started = time.thread_time()
    try:
        render(text, {}, where="s.tool.t.cmd")
        message = None
    except TemplateError as exc:
        message = str(exc)
    except MemoryError:
        message = "MemoryError"
    out.append([text, message, time.thread_time() - started])
print(json.dumps(out))
"""


def render_in_child(texts: list[str]) -> list[tuple[str, str | None, float]]:
    """``(text, error message or None, CPU seconds)`` for each template, rendered as a task
    setting (``s.tool.t.cmd``) in a fresh interpreter; ``MemoryError`` is reported as such."""
    child = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(texts)], capture_output=True, text=True,
                           timeout=300)
    assert child.returncode == 0, child.stderr[-3000:]
    return [tuple(row) for row in json.loads(child.stdout)]
