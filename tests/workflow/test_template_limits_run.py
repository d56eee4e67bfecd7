"""A playbook whose template tries to allocate unbounded memory, or to escape the sandbox,
run on the dev server: the execution FAILS quickly with a located, clear message (the
render happens inside the workflow, so it must neither hang the workflow task nor trip
Temporal's deadlock detector)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.temporal

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PLAYBOOK = """\
apiVersion: noetl.io/v2
kind: Playbook
metadata: {{name: greedy}}
workflow:
  - step: start
    tool: {{kind: noop}}
    next: {{arcs: [{{step: greedy}}]}}
  - step: greedy
    tool:
      kind: shell
      cmd: "{template}"
"""


@pytest.mark.parametrize("template, expected", [
    ("{{ 'a' * 10**10 }}", "would build 10,000,000,000 characters or items (limit 10,000,000, MAX_SIZE)"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "too much work"),
    ("{{ cycler.__init__.__globals__ }}", "access to attribute '__init__'"),
    # issue 24: 22 GB and a killed worker; a workflow task retried forever; "internal engine error"
    ("{{ [1,2] | batch(999999999, 0) | list }}", "(limit MAX_OPS;"),
    ("{{ ((range(99999) | list) * 99) | sort | unique | list }}", "(limit MAX_OPS;"),
    ("{{ 10**5000 }}", "(limit 14,000 bits, MAX_INT_BITS"),
    # issue 38: an integer made by a filter, '+', '-' or a method past what Python prints
    ("{{ ('9' * 4300) | int + ('9' * 4300) | int }}", "an integer of 14,285 bits (limit 14,000 bits, MAX_INT_BITS"),
    ("{{ 2**13999 + 2**13999 }}", "an integer of 14,001 bits (limit 14,000 bits, MAX_INT_BITS"),
    ("{{ 2**13999 - (0 - 2**13999) }}", "an integer of 14,001 bits (limit 14,000 bits, MAX_INT_BITS"),
    ("{{ [2**13999, 2**13999] | sum }}", "an integer of 14,001 bits (limit 14,000 bits, MAX_INT_BITS"),
    ("{{ (1).from_bytes(('x' * 2000).encode(), 'big') }}", "an integer of 15,999 bits"),
])
def test_a_greedy_template_fails_the_execution_fast_with_a_located_error(temporal, task_queue, tmp_path,
                                                                         template, expected):
    path = tmp_path / "greedy.yaml"
    path.write_text(PLAYBOOK.format(template=template))
    started = time.monotonic()
    run = _run(path, temporal, task_queue)
    elapsed = time.monotonic() - started
    assert run.returncode == 1, run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert report["state"] == "FAILED"
    message = report["summary"]["failed_steps"][0]["message"]
    # located: file:line:col of the cmd, then the engine's place, then what and the fix
    assert message.startswith(f"{path}:11:"), message
    assert "greedy.tool." in message and expected in message and "not allowed in playbook templates" in message
    assert elapsed < 60, f"took {elapsed:.0f}s"   # seconds in practice: no deadlock-detector retries


def _run(path, temporal, task_queue) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "run", str(path), "--json", "--quiet",
                           "--address", temporal.address, "--task-queue", task_queue],
                          cwd=REPO, env={**os.environ, "PYTHONPATH": REPO}, capture_output=True, text=True,
                          timeout=120)


def test_an_integer_too_long_to_print_in_a_noop_result_is_a_located_template_error(temporal, task_queue, tmp_path):
    """Issue 38: the sum was built, then printed by the engine outside any render: "internal
    engine error ... Exceeds the limit (4300 digits)", with no place."""
    path = tmp_path / "bigint.yaml"
    path.write_text("metadata: {name: bigint}\n"
                    "workflow:\n"
                    "  - step: a\n"
                    "    tool:\n"
                    "      kind: noop\n"
                    "      result: \"{{ ('9' * 4300) | int + ('9' * 4300) | int }}\"\n")
    run = _run(path, temporal, task_queue)
    assert run.returncode == 1, run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert report["state"] == "FAILED"
    message = report["summary"]["failed_steps"][0]["message"]
    assert message.startswith(f"{path}:6:"), message
    assert "internal engine error" not in json.dumps(report) and "4300 digits" not in json.dumps(report)
    assert "a.tool.a_task.result: not allowed in playbook templates: the template would build an integer" in message
