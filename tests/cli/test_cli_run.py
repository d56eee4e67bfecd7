"""`noetl-temporal run` as a user runs it: its own embedded dev server, JSON on stdout."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.temporal

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "noetl_temporal.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ))


def test_readme_example_runs_and_prints_the_json_report():
    proc = cli("run", "examples/hello.yaml", "--set", "name=ci", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)       # stdout is exactly one JSON object
    assert set(report) == {"execution_id", "workflow_id", "state", "ctx", "steps", "summary", "error",
                           "event_count", "events_truncated", "events"}
    assert not report["events_truncated"] and report["event_count"] == report["events"][-1]["seq"]
    assert report["state"] == "COMPLETED" and report["error"] is None
    assert report["steps"]["greet"]["result"]["greeting"] == "Hello, ci!"
    assert report["ctx"]["summary"]["shout"] == "HELLO, CI!"
    types = [e["event_type"] for e in report["events"]]
    assert {"step.started", "step.done", "loop.done"} <= set(types)
    assert all({"event_type", "entity_id", "seq", "timestamp"} <= set(e) for e in report["events"])
    assert "Temporal UI: http://127.0.0.1:" in proc.stderr and "step.done" in proc.stderr
    # said when the execution started, before its progress: its id, how to reach it, its UI page
    eid = report["execution_id"]
    start = proc.stderr.index(f"execution {eid} started")
    assert start < proc.stderr.index("step.started")
    assert re.search(rf"noetl-temporal status\|.* {re.escape(eid)} --address 127\.0\.0\.1:\d+", proc.stderr)
    assert re.search(rf"Temporal UI: http://127\.0\.0\.1:\d+/namespaces/default/workflows/{re.escape(eid)}\n",
                     proc.stderr)


def test_exit_codes(tmp_path):
    failing = tmp_path / "fail.yaml"
    failing.write_text("workflow:\n  - step: boom\n    tool: {kind: python, code: \"raise ValueError('no')\"}\n")
    proc = cli("run", str(failing), "-q")
    assert proc.returncode == 1 and "ValueError: no" in proc.stdout
    invalid = tmp_path / "invalid.yaml"
    invalid.write_text("workflow:\n  - step: a\n    tool: {kind: nope}\n")
    proc = cli("run", str(invalid))
    assert proc.returncode == 2 and f"{invalid}:3:" in proc.stderr and "NTL302" in proc.stderr
    proc = cli("run", "examples/hello.yaml", "--payload", "[1]")
    assert proc.returncode == 2 and "JSON object" in proc.stderr
