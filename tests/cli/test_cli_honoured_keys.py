"""Issue 37 item 3 through `noetl-temporal run` as a user runs it (its own dev server): a
step's `spec.policy.lifecycle.timeout_s` bounds the step as `spec.lifecycle` does, and an
http task's `spec.timeout: {connect, read}` (NoETL's shape) is applied."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.http_server import HTTPTestServer

pytestmark = pytest.mark.temporal

REPO = Path(__file__).resolve().parents[2]
# the execution timeout: a run that hangs fails the test instead of the machine's time
HEADER = "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: keys}\nexecutor: {spec: {timeout_s: 90}}\n"


def _run(path: Path) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "run", str(path), "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=240,
                          env=dict(os.environ))
    return proc, time.monotonic() - t0


def test_step_policy_lifecycle_timeout_fails_the_step_without_waiting_for_its_task(tmp_path):
    path = tmp_path / "slow.yaml"
    path.write_text(HEADER + """workflow:
  - step: slow
    spec:
      policy:
        lifecycle: {timeout_s: 1}
    tool: {kind: shell, cmd: "sleep 120"}
""")
    proc, took = _run(path)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["state"] == "FAILED"
    assert "exceeded lifecycle.timeout_s=1" in json.dumps(report["summary"])
    # before issue 37 the key was ignored and the run waited out the whole sleep
    assert took < 90, f"took {took:.1f} s"   # the CLI starts a dev server: 10-30 s at load 8


@pytest.fixture
def server():
    with HTTPTestServer() as srv:
        yield srv


def _http_playbook(url: str, timeout: str) -> str:
    return HEADER + f"""workflow:
  - step: fetch
    tool:
      kind: http
      url: "{url}"
      spec:
        timeout: {timeout}
"""


def test_http_read_timeout_in_noetls_shape_fails_the_task_and_a_number_still_works(tmp_path, server):
    slow = tmp_path / "slow.yaml"
    slow.write_text(_http_playbook(server.url("/slow?s=120"), "{connect: 5, read: 0.5}"))
    proc, took = _run(slow)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["state"] == "FAILED"
    assert "after its read timeout of 0.5 s" in proc.stdout
    assert took < 90, f"took {took:.1f} s"

    quick = tmp_path / "quick.yaml"
    quick.write_text(_http_playbook(server.url("/slow?s=0.2"), "10"))
    proc, _ = _run(quick)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["steps"]["fetch"]["result"]["data"] == {"slept": 0.2}
