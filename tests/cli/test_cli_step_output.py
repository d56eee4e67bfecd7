"""NoETL's step-level `output:` fixtures through the CLI as a subprocess: test_output_select
runs as written and gives its own verdict, PASSED; test_gcs_storage is refused at validation
with the code naming Google Cloud Storage (NTL343), located (docs/tools.md, "A task's
`output:`")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests/corpus/noetl-e2e/fixtures/playbooks"


def cli(*args: str, store: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NOETL_RESULT_STORE": str(store)}
    return subprocess.run([sys.executable, "-m", "noetl_temporal.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_result_tier_on_gcs_is_refused_naming_the_service(tmp_path):
    path = FIXTURES / "test_gcs_storage.yaml"
    proc = cli("validate", str(path), store=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert f"{path}:28:13: NTL343" in out and "Google Cloud Storage" in out


@pytest.mark.temporal
def test_noetls_output_select_fixture_runs_and_passes_its_own_check(tmp_path):
    proc = cli("run", str(FIXTURES / "test_output_select.yaml"), "--json", store=tmp_path / "results")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["state"] == "COMPLETED"
    summary = report["steps"]["summary"]["result"]
    assert (summary["test_result"], summary["result_was_externalized"], summary["full_data_items_processed"]) == (
        "PASSED", True, 1000)
    assert list((tmp_path / "results").rglob("*.json"))  # the stored result, in the store the run was given
