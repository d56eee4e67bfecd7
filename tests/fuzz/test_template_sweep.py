"""Issue 38: every filter and test the sandbox exposes, rendered with adversarial inputs and
arguments (huge sizes, widths, repeats, nesting, pathological regex inputs, big integers),
each render in its own forked child under ``RLIMIT_AS`` and ``RLIMIT_CPU``
(``sweep_child``). The table of ``dsl/template_ops.py`` says where each may run:

* allowed in the workflow (guards, ``set``, ``args``, ``noop`` results): every render ends,
  with its value (at most ``MAX_SIZE`` characters or items) or with a located
  ``TemplateError``, within 1 CPU second (half Temporal's 2 s deadlock detector), never by
  ``MemoryError`` and never by the child's limits;
* task-only: a playbook that uses it where the workflow renders is refused at validation
  (NTL706); in a task's settings a render ends cleanly or is killed by the CPU limit (what
  a task-side render's process boundary is for), never by anything unclean. The same
  renders also go through the activity's own path (``tools/task_renders.py``: in the worker's
  process under the gate of small inputs, else in the render child): each ends with its value
  or a located ``ToolError`` (a limit named in it), within the child's wall-clock bound, and
  the worker's own process spends under 1 CPU second on any of them.

Long (a few minutes on a loaded 2-core machine): under the ``scale`` tier (``fuzz/``).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from noetl_temporal.dsl import validate_text
from noetl_temporal.dsl.template_ops import OPERATIONS, WORKFLOW
from noetl_temporal.engine.task_plans import uses_task_only
from noetl_temporal.errors import ToolError
from noetl_temporal.templates.limits import MAX_SIZE
from noetl_temporal.tools import task_renders

REPO = Path(__file__).resolve().parents[2]
WHERE = "s.next.arcs[0].when"

INPUTS = [
    "('x ' * 4999999)",                    # the largest text a template may build
    "('.' * 100000 ~ 'a.')",               # urlize's quadratic regex
    "('<' * 100000)",                      # striptags' rescanning regex
    "(range(99999) | list)",
    "([[1] * 100] * 3000)",                # nested
    "(('9' * 4000) | int)",                # a big integer
    "([{'a': 'x' * 1000}] * 5000)",        # rows for the attribute filters
]
FILTER_ARGS = ["", "(999999999)", "('x' * 9000000)", "(attribute='x' * 9000000)", "(999999999, 'x' * 9000000)",
               "(indent=1000000)"]
TEST_ARGS = ["", "(999999999)", "('x' * 9000000)"]

CPU_BOUND = 1.0     # CPU seconds: half the deadlock detector, as tests/fuzz/test_template_budget_fuzz.py
SWEEP_SECONDS = 600


def _cases() -> list[dict]:
    cases = []
    for (kind, name), op in sorted(OPERATIONS.items()):
        for value in INPUTS:
            for args in FILTER_ARGS if kind == "filter" else TEST_ARGS:
                text = (f"{{{{ {value} | {name}{args} }}}}" if kind == "filter"
                        else f"{{{{ {value} is {name}{args} }}}}")
                if kind == "test" and not name.isidentifier():
                    continue   # '==', '<'... are written as operators; 'eq', 'lt' cover them
                cases.append({"kind": kind, "name": name, "allowed": op.allowed, "text": text, "where": WHERE})
    return cases


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    path = tmp_path_factory.mktemp("sweep") / "cases.json"
    cases = _cases()
    path.write_text(json.dumps(cases))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "tests.fuzz.sweep_child", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=SWEEP_SECONDS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(results) == len(cases), (len(results), len(cases))
    return results, time.monotonic() - started


def test_workflow_side_operations_end_cleanly_within_the_documented_bounds(sweep):
    results, elapsed = sweep
    broken = []
    for r in results:
        if r["allowed"] != WORKFLOW:
            continue
        if r["outcome"] == "value":
            ok = r["size"] <= MAX_SIZE and r["cpu"] < CPU_BOUND
        elif r["outcome"] == "error":
            ok = r["message"].startswith(WHERE + ": ") and "MemoryError" not in r["message"] and r["cpu"] < CPU_BOUND
        else:   # killed by a limit, or an exception that escaped the render
            ok = False
        if not ok:
            broken.append(f"{r['text']}: {r['outcome']} cpu={r.get('cpu', 0):.2f} {r.get('message', '')[:200]}")
    assert not broken, f"{len(broken)} of {len(results)} renders broke the bounds:\n" + "\n".join(broken[:40])
    assert elapsed < SWEEP_SECONDS


def test_task_only_operations_end_cleanly_or_are_stopped_by_the_task_s_limits(sweep):
    results, _ = sweep
    unclean = [f"{r['text']}: {r['outcome']} {r.get('message', '')[:200]}" for r in results
               if r["allowed"] != WORKFLOW and r["outcome"] not in ("value", "error", "killed")]
    assert not unclean, "\n".join(unclean[:40])
    killed = {r["name"] for r in results if r["outcome"] == "killed"}
    assert killed <= {name for (_, name), op in OPERATIONS.items() if op.allowed != WORKFLOW}, killed


@pytest.mark.parametrize("name", sorted(name for (kind, name), op in OPERATIONS.items()
                                        if kind == "filter" and op.allowed != WORKFLOW))
def test_task_only_filters_are_refused_where_the_workflow_renders(name):
    text = ("apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: p}\nworkflow:\n"
            "  - step: start\n    tool: {kind: noop}\n    next:\n      arcs:\n        - step: end\n"
            f"          when: \"{{{{ ('.' * 100000 ~ 'a.') | {name} }}}}\"\n"
            "  - step: end\n    tool: {kind: noop}\n")
    found = [d for d in validate_text(text, "p.yaml") if d.code == "NTL706"]
    assert found and found[0].line == 10 and f"`{name}` is not allowed in a guard" in found[0].message


TASK_WHERE = "s.tool.t"
# the task-only filters' arguments that matter (urlize's `target` is repeated per link)
TASK_ARGS = ["", "(999999999)", "('x' * 9000000)", "(target='x' * 9000000)"]


async def _task_side(text: str) -> tuple[str, str, float]:
    started = time.monotonic()
    try:
        rendered, _ = await task_renders.render_in_child({"cmd": text}, uses_task_only, {}, TASK_WHERE)
        outcome = "value" if rendered["cmd"] is not text else "unrendered"
        message = ""
    except ToolError as exc:
        outcome, message = "error", str(exc)
    return outcome, message, time.monotonic() - started


async def test_task_only_operations_in_a_task_s_settings_end_cleanly_through_the_render_child(monkeypatch):
    here: list[tuple[float, str]] = []   # CPU the worker's process spent rendering, per template
    real = task_renders._render_here

    def timed(found, context, where):
        started = time.thread_time()
        try:
            return real(found, context, where)
        finally:
            here.append((time.thread_time() - started, found[0][1]))

    monkeypatch.setattr(task_renders, "_render_here", timed)
    texts = [f"{{{{ {value} | {name}{args} }}}}" for (kind, name), op in sorted(OPERATIONS.items())
             if kind == "filter" and op.allowed != WORKFLOW for value in INPUTS for args in TASK_ARGS]
    gate = asyncio.Semaphore(2)

    async def one(text: str) -> tuple[str, tuple[str, str, float]]:
        async with gate:
            return text, await _task_side(text)

    broken = []
    for text, (outcome, message, wall) in await asyncio.gather(*(one(t) for t in texts)):
        ok = outcome == "value" or (outcome == "error" and message.startswith(TASK_WHERE + ".cmd: ")
                                    and "Traceback" not in message)
        if not ok or wall > task_renders.WALL_SECONDS + 10:
            broken.append(f"{text}: {outcome} wall={wall:.1f}s {message[:200]}")
    assert not broken, f"{len(broken)} of {len(texts)} task-side renders broke the bounds:\n" + "\n".join(broken)
    assert len(here) == len(texts) and max(here)[0] < CPU_BOUND, max(here)
