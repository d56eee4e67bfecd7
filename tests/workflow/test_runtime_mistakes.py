"""Mistakes `validate` cannot know, as `noetl-temporal run` reports them: located, never silent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.temporal


def run(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "run", str(path), *args],
                          cwd=path.parent, capture_output=True, text=True, timeout=120, env=dict(os.environ))


def test_a_runtime_configuration_error_names_the_tasks_line(tmp_path):
    playbook = tmp_path / "cwd.yaml"
    playbook.write_text("workflow:\n"
                        "  - step: start\n"
                        "    tool: {kind: shell, cmd: echo hi, cwd: /nonexistent}\n")
    proc = run(playbook)
    assert proc.returncode == 1, proc.stderr
    assert (f"error: {playbook}:3:5: step 'start' failed: start.tool.start_task: shell 'cwd' "
            f"'/nonexistent' is not a directory") in proc.stdout


TYPO = ("apiVersion: noetl.io/v2\n"
        "kind: Playbook\n"
        "metadata: {name: typo}\n"
        "workflow:\n"
        "  - step: compute\n"
        "    tool: {kind: python, code: \"result = {'total': 3}\"}\n"
        "    next: {arcs: [{step: report}]}\n"
        "  - step: report\n"
        "    tool:\n"
        "      kind: shell\n"
        "      cmd: \"echo total={{ compute.totl }} ok={{ compute.total | default(0) }}\"\n")
TEMPLATE = "'echo total={{ compute.totl }} ok={{ compute.total | default(0) }}'"


def test_an_undefined_value_is_a_located_warning_in_the_progress(tmp_path):
    playbook = tmp_path / "typo.yaml"
    playbook.write_text(TYPO)
    proc = run(playbook)
    assert proc.returncode == 0, proc.stderr
    assert (f"warning: {playbook}:11:7: report.tool.report_task.cmd: undefined value 'totl' rendered as "
            f"empty in template {TEMPLATE}") in proc.stderr
    assert "total= ok=3" in proc.stdout             # rendered as NoETL renders it


def test_strict_makes_it_a_located_task_error(tmp_path):
    playbook = tmp_path / "typo.yaml"
    playbook.write_text(TYPO)
    proc = run(playbook, "--strict")
    assert proc.returncode == 1, proc.stderr
    assert (f"error: {playbook}:11:7: step 'report' failed: report.tool.report_task.cmd: undefined value: "
            f"'totl' is undefined (strict templates) in template {TEMPLATE}") in proc.stdout
    playbook.write_text(TYPO.replace("metadata: {name: typo}\n",
                                     "metadata: {name: typo}\nexecutor: {spec: {strict_templates: true}}\n"))
    proc = run(playbook)
    assert proc.returncode == 1 and "(strict templates)" in proc.stdout, proc.stdout


async def test_an_undefined_value_inside_a_rendered_dict_does_not_wedge_the_run(run_yaml):
    report = await run_yaml("""
        workflow:
          - step: start
            tool: {kind: noop, result: "{{ {'a': nosuch.field, 'b': [1, other]} }}"}
    """, execution_timeout_s=60)
    assert report.state == "COMPLETED", report.error
    assert report.steps["start"]["result"] == {"a": None, "b": [1, None]}
