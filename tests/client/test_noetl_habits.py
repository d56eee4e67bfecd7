"""A NoETL user's habits: ``run --dry-run`` and ``noetl.run(path, variables=...)``
(docs/migrating-from-noetl.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from noetl_temporal.client.compat import run_async
from noetl_temporal.errors import PlaybookInvalid, RunFailed

pytestmark = pytest.mark.temporal

REPO = Path(__file__).resolve().parents[2]

PLAYBOOK = """
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: greet, path: tests/greet}
workload: {name: world, items: [1, 2, 3]}
workflow:
  - step: start
    tool: {kind: python, input: {name: "{{ workload.name }}"}, code: "result = {'greeting': 'hi ' + name}"}
    next: {spec: {mode: inclusive}, arcs: [{step: each, when: "{{ workload.items }}"}, {step: side}]}
  - step: each
    loop: {in: "{{ workload.items }}", iterator: n, spec: {mode: parallel, max_in_flight: 2}}
    tool:
      - {name: mark, kind: shell, cmd: "echo {{ n }} >> MARK"}
      - {name: double, kind: python, input: {n: "{{ n }}"}, code: "result = n * 2"}
    next: {arcs: [{step: total}]}
  - step: side
    tool: {kind: noop, result: side}
    next: {arcs: [{step: total}]}
  - step: total
    tool: {kind: python, input: {r: "{{ each.results }}"}, code: "result = sum(r or [])"}
"""


def write(tmp_path: Path, text: str = PLAYBOOK) -> tuple[Path, Path]:
    mark = tmp_path / "mark"
    path = tmp_path / "greet.yaml"
    path.write_text(textwrap.dedent(text).replace("MARK", str(mark)))
    return path, mark


def cli(*args: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "noetl_temporal.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120, **kw)


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path):
    path, mark = write(tmp_path)
    # An address nothing listens on: a dry run must not connect to it.
    proc = cli("run", str(path), "--dry-run", "--address", "127.0.0.1:1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[:3] == ["plan for greet (dry run: nothing was started)",
                                            "runs first: start", "steps (4):"]
    assert "  each: shell -> python  [loop n in {{ workload.items }} (parallel, max 2 in flight)]" in proc.stdout
    assert "      next -> each when {{ workload.items }}" in proc.stdout
    assert "  total: python  [waits for all its inputs (join)]" in proc.stdout
    assert not mark.exists()

    data = json.loads(cli("run", str(path), "--dry-run", "--json").stdout)
    assert data["runs_first"] == "start"
    assert [s["step"] for s in data["steps"]] == ["start", "each", "side", "total"]
    assert data["steps"][0]["next_mode"] == "inclusive"
    assert [a["step"] for a in data["steps"][0]["next"]] == ["each", "side"]
    assert data["steps"][1]["loop"] == {"over": "{{ workload.items }}", "iterator": "n", "mode": "parallel",
                                        "max_in_flight": 2}
    assert data["steps"][3]["join"] is True and data["steps"][3]["next"] == []
    assert not mark.exists()


def test_dry_run_of_an_invalid_playbook_is_the_located_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("workflow:\n  - step: a\n    tool: {kind: agent}\n")
    proc = cli("run", str(bad), "--dry-run")
    assert proc.returncode == 2
    assert f"{bad}:3:18: NTL320" in proc.stderr and "plan for" not in proc.stdout


def test_noetl_style_run_returns_the_outcome_envelope(tmp_path):
    """The user's call, as a NoETL user writes it: no server given, an embedded one is used."""
    path, mark = write(tmp_path)
    code = (f"import json, noetl_temporal; "
            f"print(json.dumps(noetl_temporal.run({str(path)!r}, variables={{'name': 'ada'}})))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          timeout=180, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    assert {k: out[k] for k in ("status", "playbook_name", "playbook_path", "state")} == {
        "status": "ok", "playbook_name": "greet", "playbook_path": str(path), "state": "COMPLETED"}
    assert "error" not in out          # NoETL's envelope has `error` only when the run failed
    assert "step.started" not in proc.stderr   # quiet=True, NoETL's default: no progress
    assert out["executed_steps"][0] == "start" and out["executed_steps"][-1] == "total"
    assert sorted(out["executed_steps"]) == ["each", "side", "start", "total"]
    assert out["step_results"]["start"] == {"greeting": "hi ada"}          # variables over the workload
    assert out["step_results"]["each"]["results"] == [2, 4, 6]
    assert out["final_result"] == 12 == out["step_results"]["total"]
    assert out["started_at"] <= out["completed_at"] and 0 < out["duration_seconds"] < 120
    # NoETL's precision and format: UTC to the second (`2026-11-27T14:50:13Z`)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", out["started_at"]), out["started_at"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", out["completed_at"]), out["completed_at"]
    assert sorted(mark.read_text().split()) == ["1", "2", "3"]


async def test_a_failed_run_is_an_envelope_with_the_error(temporal, task_queue, tmp_path, capsys):
    path, _ = write(tmp_path, PLAYBOOK.replace("result = sum(r or [])", "raise ValueError('no total')"))
    out = await run_async(path, variables={"items": [5]}, address=temporal.address, task_queue=task_queue,
                          quiet=False)
    assert (out["status"], out["state"]) == ("error", "FAILED")
    assert "ValueError: no total" in out["error"]
    assert "total" in out["executed_steps"] and out["step_results"]["each"]["results"] == [10]
    progress = capsys.readouterr().err      # quiet=False: the progress lines of `run`, not every event
    assert "step.failed" in progress and "task.attempt.started" not in progress

    # NoETL's way: a failed run raises RuntimeError (ours carries the envelope); verbose prints every event
    with pytest.raises(RuntimeError, match="ended FAILED: .*no total") as raised:
        await run_async(path, variables={"items": [5]}, address=temporal.address, task_queue=task_queue,
                        raise_on_failure=True, verbose=True, runtime="distributed", facts_out=tmp_path / "f")
    assert isinstance(raised.value, RunFailed) and raised.value.outcome["status"] == "error"
    assert "task.attempt.started" in capsys.readouterr().err
    assert not (tmp_path / "f").exists()     # no provider facts here
    with pytest.raises(ValueError, match="runtime='k8s' is not one of NoETL's runtimes"):
        await run_async(path, runtime="k8s", address=temporal.address, task_queue=task_queue)


async def test_target_starts_at_that_step_and_an_unknown_one_is_refused(temporal, task_queue, tmp_path):
    path, mark = write(tmp_path)
    out = await run_async(path, target="side", address=temporal.address, task_queue=task_queue)
    assert out["status"] == "ok", out
    assert out["executed_steps"] == ["side", "total"]
    assert not mark.exists()
    with pytest.raises(ValueError, match="'nope' is not a step"):
        await run_async(path, target="nope", address=temporal.address, task_queue=task_queue)
    (tmp_path / "bad.yaml").write_text("workflow: []\n")
    with pytest.raises(PlaybookInvalid):
        await run_async(tmp_path / "bad.yaml", address=temporal.address, task_queue=task_queue)


async def test_noetls_implicit_context_and_numeric_execution_id_run_unedited(run_yaml):
    """A python task reading NoETL's `context` global by name, SQL writing `{{ execution_id }}`
    unquoted into a BIGINT column: both run as written (NTL321, NTL323)."""
    from tests.dsl.test_noetl_implicit import PLAYBOOK

    report = await run_yaml(PLAYBOOK)
    assert report.state == "COMPLETED", report.error
    use = report.steps["use"]["result"]
    assert use == {"n": 1, "rid": report.execution_id, "where": "west", "missing": "dflt"}
    [row] = report.steps["save"]["result"]["rows"]
    assert row["name"] == report.execution_id
    assert isinstance(row["id"], int) and 0 < row["id"] < 2 ** 63     # BIGINT: NoETL's kind of id
    again = await run_yaml(PLAYBOOK)
    assert again.steps["save"]["result"]["rows"][0]["id"] != row["id"]  # one number per execution


async def test_go_template_quoting_reaches_the_shell_as_written(run_yaml):
    report = await run_yaml("""
        workload: {n: 3}
        workflow:
          - step: df
            tool: {kind: shell, cmds: ["printf '%s' '{{`{{json .}}`}} {{ workload.n }}'"]}
    """)
    assert report.state == "COMPLETED", report.error
    assert report.steps["df"]["result"]["stdout"] == "{{`{{json .}}`}} 3"


async def test_output_store_kv_keeps_the_result_behind_a_reference(run_yaml):
    """NoETL's `output.store: kv` (the fetch_load fixture): the result is stored by reference
    in the worker's result store and a later step reads it through the reference."""
    report = await run_yaml("""
        workflow:
          - step: load
            tool:
              kind: python
              code: "result = {'count': 3, 'rows': [1, 2, 3]}"
              output: {store: {kind: kv}, inline_max_bytes: 0}
            next: {arcs: [{step: check}]}
          - step: check
            tool: {kind: python, input: {n: "{{ load.count }}", rows: "{{ load }}"}, code: "result = [n, rows]"}
    """)
    assert report.state == "COMPLETED", report.error
    stored = report.steps["load"]["result"]
    assert stored["kind"] == "result_ref" and "rows" not in stored, stored   # a reference, not the body
    assert report.steps["check"]["result"] == [3, {"count": 3, "rows": [1, 2, 3]}]
