"""Issue 10 on the real dev server: ``_attempt`` is the real attempt number in task
templates (python args and code, http URL and params, an attempt lost with its worker);
tokens versus joins (the issue's example); a handled failure is a HANDLED step."""

from __future__ import annotations

import asyncio
import os
import signal
import textwrap

import pytest

from noetl_temporal.client.connect import start_execution
from noetl_temporal.dsl import load_playbook_text
from tests.support.cli_process import spawn_worker

pytestmark = pytest.mark.temporal

RETRY_UNTIL_3 = ("spec: {policy: {rules: [{when: \"{{ _attempt < 3 }}\", then: {do: retry, attempts: 5}}, "
                 "{else: {then: {do: continue}}}]}}")


def _attempts(report, task):
    return [e["attempt"] for e in report.events
            if e["event_type"] == "task.attempt.started" and e["entity_id"] == task]


async def test_attempt_in_python_args_code_and_http_url_params_is_1_2_3(run_yaml, http_server):
    report = await run_yaml(f"""
    workflow:
      - step: py_args
        tool:
          kind: python
          args: {{n: "{{{{ _attempt }}}}"}}
          code: |
            if n < 3:
                raise ValueError(f"not yet: attempt {{n}}")
            result = n
          spec: {{policy: {{rules: [{{when: "{{{{ output.status == 'error' }}}}", then: {{do: retry, attempts: 3}}}}]}}}}
        next: {{arcs: [{{step: py_code}}]}}
      - step: py_code
        tool:
          kind: python
          code: |
            result = {{{{ _attempt }}}}
            if result < 3:
                raise ValueError("attempt %d" % result)
          spec: {{policy: {{rules: [{{when: "{{{{ output.status == 'error' }}}}", then: {{do: retry, attempts: 3}}}}]}}}}
        next: {{arcs: [{{step: web}}]}}
      - step: web
        tool:
          kind: http
          url: "{http_server.url('/echo')}?path_attempt={{{{ _attempt }}}}"
          params: {{attempt: "{{{{ _attempt }}}}", page: "p{{{{ _attempt }}}}"}}
          {RETRY_UNTIL_3}
    """, execution_timeout_s=90)
    assert report.state == "COMPLETED", report.error
    assert report.steps["py_args"]["result"] == 3
    assert report.steps["py_code"]["result"] == 3
    query = report.steps["web"]["result"]["data"]["query"]
    assert query == {"path_attempt": "3", "attempt": "3", "page": "p3"}
    for task in ("py_args_task", "py_code_task", "web_task"):
        assert _attempts(report, task) == [1, 2, 3], task


async def test_an_attempt_lost_with_its_worker_counts(temporal, task_queue, tmp_path):
    log = tmp_path / "log"
    playbook = load_playbook_text(textwrap.dedent(f"""
    workflow:
      - step: slow
        tool:
          kind: python
          args: {{attempt: "{{{{ _attempt }}}}"}}
          code: |
            import time
            with open({str(log)!r}, "a") as fh:
                fh.write("attempt-%d\\n" % attempt)
            if attempt == 1:
                time.sleep(60)          # the worker dies while this runs
            result = attempt
    """)).playbook
    first = spawn_worker(temporal.address, task_queue)
    second = None
    try:
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue,
                                       heartbeat_timeout_s=2, execution_timeout_s=90)
        for _ in range(300):
            if log.exists() and "attempt-1" in log.read_text():
                break
            await asyncio.sleep(0.1)
        assert "attempt-1" in log.read_text()
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        second = spawn_worker(temporal.address, task_queue)
        output = await asyncio.wait_for(handle.result(), timeout=60)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert output["state"] == "COMPLETED"
    assert log.read_text().split() == ["attempt-1", "attempt-2"]
    assert output["steps"]["slow"]["result"] == 2


async def test_issue_example_runs_notify_once_per_token_stage_1_before_s2_ends(run_yaml):
    report = await run_yaml("""
    workflow:
      - step: s1
        tool: {kind: shell, cmds: ["echo s1"]}
        next: {spec: {mode: inclusive}, arcs: [{step: notify, args: {stage: 1}}, {step: s2}]}
      - step: s2
        tool: {kind: shell, cmds: ["sleep 0.5; echo s2"]}
        next: {spec: {mode: inclusive}, arcs: [{step: notify, args: {stage: 2}}, {step: s3}]}
      - step: s3
        tool: {kind: shell, cmds: ["echo s3"]}
      - step: notify
        tool: {kind: shell, cmds: ["echo notify-{{ args.stage }}"]}
    """)
    assert report.state == "COMPLETED", report.error
    notify_done = [e for e in report.events if e["event_type"] == "step.done" and e["entity_id"] == "notify"]
    outputs = [e["payload"]["outcome"]["result"]["stdout"].strip() for e in notify_done]
    assert outputs == ["notify-1", "notify-2"]
    assert report.steps["notify"]["runs"] == 2
    s2_done = next(e["seq"] for e in report.events if e["event_type"] == "step.done" and e["entity_id"] == "s2")
    assert notify_done[0]["seq"] < s2_done          # stage 1 ran as soon as s1 ended


async def test_inclusive_fan_in_joins_once_with_each_branchs_args(run_yaml):
    report = await run_yaml("""
    workflow:
      - step: start
        tool: {kind: noop}
        next: {spec: {mode: inclusive}, arcs: [{step: left}, {step: right}]}
      - step: left
        tool: {kind: shell, cmds: ["echo L"]}
        next: {arcs: [{step: join, args: {side: L}}]}
      - step: right
        tool: {kind: shell, cmds: ["sleep 0.3; echo R"]}
        next: {arcs: [{step: join, args: {side: R}}]}
      - step: join
        tool: {kind: noop, result: "{{ args._upstreams.left.side }}+{{ args._upstreams.right.side }}"}
    """)
    assert report.state == "COMPLETED", report.error
    assert report.steps["join"] == {"status": "COMPLETED", "runs": 1, "result": "L+R"}
    (scheduled,) = [e for e in report.events if e["event_type"] == "step.scheduled" and e["entity_id"] == "join"]
    assert scheduled["payload"]["meta"]["join"]["conflicts"] == {"side": {"left": "L", "right": "R"}}


async def test_a_handled_failure_is_a_handled_step_in_a_completed_execution(run_yaml):
    report = await run_yaml("""
    workflow:
      - step: fetch
        tool: {kind: python, code: "raise RuntimeError('down')"}
        next:
          arcs:
            - {step: recover, when: "{{ event.name == 'step.failed' }}"}
      - step: recover
        tool: {kind: noop}
    """)
    assert report.state == "COMPLETED", report.error
    assert report.steps["fetch"]["status"] == "HANDLED"
    assert report.steps["recover"]["status"] == "COMPLETED"
    (failed,) = [e for e in report.events if e["event_type"] == "step.failed"]
    assert failed["status"] == "error" and failed["payload"]["handled"] is True
    assert failed["payload"]["meta"]["step_status"] == "HANDLED"
    assert report.summary["failed_steps"][0]["handled"] is True
