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
