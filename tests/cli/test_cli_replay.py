"""`noetl-temporal replay` as a user runs it before upgrading workers: recorded, encrypted,
diverging and broken history files, each as a subprocess (it needs no server)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from temporalio.client import Client

import noetl_temporal
from noetl_temporal.client.end_to_end import run_with_client
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.errors import ConfigError
from noetl_temporal.store import sealing
from tests.support.user_codec import ENCODING, EncryptingCodec

REPO = Path(__file__).resolve().parents[2]
HISTORIES = REPO / "tests" / "histories"
CODEC = "tests.support.user_codec:codec"


def replay(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "NOETL_CODEC"}
    environ["PYTHONPATH"] = str(REPO)   # the user's codec module is importable, as on their machine
    return subprocess.run([sys.executable, "-m", "noetl_temporal.cli", "replay", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env={**environ, **(env or {})})


def test_a_recorded_history_replays_ok():
    proc = replay(str(HISTORIES / "hello.history.json"), str(HISTORIES / "subplaybook_patched.history.json"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines == [f"{HISTORIES / 'hello.history.json'}: workflow replay-hello: OK",
                     f"{HISTORIES / 'subplaybook_patched.history.json'}: workflow replay-subplaybook_patched: OK"]
    assert "2 replayed, 0 failed" in proc.stderr and "Traceback" not in proc.stderr


def _tampered(tmp_path: Path) -> Path:
    """hello's history with a changed first step in its recorded input: the code now does
    something else first, as an unguarded change of the workflow would."""
    history = json.loads((HISTORIES / "hello.history.json").read_text())
    payload = history["events"][0]["workflowExecutionStartedEventAttributes"]["input"]["payloads"][0]
    run_input = json.loads(base64.b64decode(payload["data"]))
    run_input["playbook"]["workflow"][0]["tool"][0].update(kind="noop", config={})
    payload["data"] = base64.b64encode(json.dumps(run_input).encode()).decode()
    path = tmp_path / "hello-changed.json"
    path.write_text(json.dumps(history))
    return path


def test_a_diverging_history_fails_naming_the_event(tmp_path):
    changed = _tampered(tmp_path)
    proc = replay(str(HISTORIES / "hello.history.json"), str(changed))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    ok, failed = proc.stdout.splitlines()
    assert ok.endswith("workflow replay-hello: OK")
    assert failed.startswith(f"{changed}: workflow replay-hello: FAILED: unsandboxed: ")
    assert "Nondeterminism error" in failed and "'greet:run:1:task:greet_task:1'" in failed
    assert failed.endswith("(at event 5, ACTIVITY_TASK_SCHEDULED)")
    assert "1 replayed, 1 failed" in proc.stderr and "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("content,said", [
    ('{"events": [\n  {"eventId": 1,}\n]}', ":2:17: not JSON: Expecting property name"),
    ('{"rows": []}', ': not a workflow history: no "events" list'),
])
def test_a_bad_file_is_a_located_error(tmp_path, content, said):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    proc = replay(str(HISTORIES / "hello.history.json"), str(bad))
    assert proc.returncode == 2
    assert proc.stdout == ""   # nothing replays until every file reads
    assert proc.stderr.startswith(f"error: {bad}{said}") and "(fix: " in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_missing_file_is_said(tmp_path):
    proc = replay(str(tmp_path / "nope.json"))
    assert proc.returncode == 2 and "nope.json: cannot read the history file" in proc.stderr


@pytest.mark.temporal
async def test_an_encrypted_history_replays_with_the_codec_only(temporal, task_queue, tmp_path):
    """Recorded on the dev server by a client with the user's encrypting codec, exported as
    `temporal workflow show --output json` would."""
    client = await Client.connect(temporal.address, namespace=temporal.namespace,
                                  data_converter=noetl_temporal.data_converter(EncryptingCodec()))
    playbook = load_playbook_text(textwrap.dedent("""
        workload: {customer: acme-secret-customer}
        workflow:
          - step: start
            tool: {kind: python, input: {c: "{{ workload.customer }}"}, code: "result = c.upper()"}
            next: {arcs: [{step: finish}]}
          - step: finish
            tool: {kind: shell, cmd: "echo done"}
        """), source="<test>").playbook
    try:
        report = await run_with_client(client, playbook, task_queue=task_queue, execution_timeout_s=60)
    finally:
        sealing.reset()   # the worker sealed this process's stores with the user's codec
    assert report.state == "COMPLETED"
    history = await client.get_workflow_handle(report.execution_id).fetch_history()
    exported = tmp_path / "encrypted.json"
    exported.write_text(history.to_json())
    assert b"acme-secret-customer" not in exported.read_bytes()
    assert base64.b64encode(ENCODING).decode() in exported.read_text()   # each payload encrypted

    proc = replay("--codec", CODEC, str(exported))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == f"{exported}: workflow {report.execution_id}: OK\n"
    assert replay(str(exported), env={"NOETL_CODEC": CODEC}).returncode == 0   # like the other commands

    without = replay(str(exported))
    assert without.returncode == 1
    assert f"workflow {report.execution_id}: FAILED: " in without.stdout
    assert f"its input is encoded as {ENCODING.decode()}, which this converter cannot read: pass the codec " \
           "the workers use, --codec MODULE:FACTORY or $NOETL_CODEC" in without.stdout
    assert "Traceback" not in without.stdout + without.stderr


async def test_the_documented_function_answers_the_same(tmp_path):
    good, changed = HISTORIES / "hello.history.json", _tampered(tmp_path)
    results = await noetl_temporal.replay_histories([good, changed])
    assert [(r.path, r.workflow_id, r.ok) for r in results] == [(str(good), "replay-hello", True),
                                                                (str(changed), "replay-hello", False)]
    assert "Nondeterminism error" in results[1].error and "(at event 5, " in results[1].error
    (tmp_path / "bad.json").write_text("nope")
    with pytest.raises(ConfigError, match=r"bad.json:1:1: not JSON"):
        await noetl_temporal.replay_histories([good, tmp_path / "bad.json"])
