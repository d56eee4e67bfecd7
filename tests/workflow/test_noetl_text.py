"""Values printed into text are NoETL's text (``true``, ``null``, JSON), through the CLI.

NoETL's own ``deployment/docker_cleanup.yaml`` compares ``[ "{{ prune_volumes }}" = "true" ]``
in shell, as four of its e2e fixtures do. ``--set prune_volumes=true`` is a YAML boolean here;
before ``templates.text`` it printed ``True`` and the playbook skipped pruning (exit 0).

The playbook calls ``docker``. The run gets a ``PATH`` without it, so nothing is pruned on the
machine running the tests: each ``docker ...`` line fails with "not found" (``/bin/sh`` names
the line), the script's last ``echo`` exits 0, and the branch taken shows in the step's stdout
and in which line of the script the shell tried to run ``docker`` from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.corpus import NOETL_E2E

pytestmark = pytest.mark.temporal

REPO = Path(__file__).resolve().parents[2]
DOCKER_CLEANUP = NOETL_E2E / "fixtures" / "playbooks" / "deployment" / "docker_cleanup.yaml"


def run_without_docker(tmp_path: Path, playbook: Path, *args: str) -> dict:
    """``noetl-temporal run PLAYBOOK ARGS --json`` with an empty ``PATH`` (no ``docker``)."""
    empty = tmp_path / "bin"
    empty.mkdir(exist_ok=True)
    env = dict(os.environ, PATH=str(empty))
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "run", str(playbook), *args, "--json", "-q"],
                          cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_docker_cleanup_prunes_volumes_with_set_prune_volumes_true(tmp_path):
    report = run_without_docker(tmp_path, DOCKER_CLEANUP, "--set", "prune_volumes=true")
    assert report["state"] == "COMPLETED"
    volumes = report["steps"]["prune_volumes_optional"]["result"]
    assert volumes["stdout"].startswith("WARNING: Removing unused volumes...")
    assert "Skipping" not in volumes["stdout"]
    assert "3: docker: not found" in volumes["stderr"]   # line 3: `docker volume prune -f`
    images = report["steps"]["prune_images"]["result"]   # the workload's "true" (a string) still works
    assert "Removing all unused images" in images["stdout"] and "4: docker: not found" in images["stderr"]


def test_docker_cleanup_skips_volumes_by_default_and_reads_set_false(tmp_path):
    report = run_without_docker(tmp_path, DOCKER_CLEANUP, "--set", "all_images=false")
    volumes = report["steps"]["prune_volumes_optional"]["result"]
    assert volumes["stdout"].startswith("Skipping volume pruning") and volumes["stderr"] == ""
    images = report["steps"]["prune_images"]["result"]   # `false` printed as false: dangling only
    assert "Removing dangling images only" in images["stdout"] and "7: docker: not found" in images["stderr"]


def test_shell_compares_printed_values_as_noetl_fixtures_do(tmp_path):
    """NoETL's ``[ "{{ x }}" = "true" ]`` pattern, with every kind of value ``--set`` can give."""
    playbook = tmp_path / "compare.yaml"
    playbook.write_text("""
workload: {flag: false, nothing: 1, items: [], config: {}}
workflow:
  - step: start
    tool:
      kind: shell
      cmds:
        - |
          if [ "{{ flag }}" = "true" ]; then echo "flag on"; else echo "flag off"; fi
          if [ "{{ nothing }}" = "null" ]; then echo "nothing is null"; fi
          while IFS= read -r line; do echo "$line"; done <<'END'
          {{ items }}
          {{ config }}
          END
          echo "{{ flag == true }} {{ flag is sameas true }} {{ 'yes' if flag else 'no' }}"
""")
    report = run_without_docker(tmp_path, playbook, "--set", "flag=true", "--set", "nothing=null",
                                "--set", "items=[1, true, null, 'say \"hi\"']", "--set", "config={a: {b: [false]}}")
    lines = report["steps"]["start"]["result"]["stdout"].splitlines()
    assert lines == ["flag on", "nothing is null", '[1, true, null, "say \\"hi\\""]', '{"a": {"b": [false]}}',
                     "true true yes"]
