"""Skipping a running step on the dev server (engine/skips.py): a step stuck retrying a
failing task is skipped by the CLI (as a subprocess) with a result its arcs route on; the
API skips a loop iteration; a skip that does not apply is refused with the reason."""

from __future__ import annotations

import asyncio
import json
import textwrap

import pytest
from temporalio.client import WorkflowUpdateFailedError

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.observe import read_events
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.hosting.worker import build_worker
from noetl_temporal.store.event_store import open_event_store
from tests.support.cli_process import cli

pytestmark = pytest.mark.temporal

STUCK = """
metadata: {name: stuck}
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: fetch}]}
  - step: fetch   # fails, and retries 40 s later (a delay inside the execution's timeout: Temporal
                  # gives up at once on a retry that would start after it)
    tool:
      kind: shell
      cmd: "touch {{ workload.mark }}; exit 3"
      spec: {policy: {rules: [{when: "{{ output.status == 'error' }}", then: {do: retry, attempts: 5, delay: 40}}]}}
    next: {arcs: [{step: empty, when: "{{ fetch.rows == 0 }}"}, {step: load}]}
  - step: empty
    tool: {kind: noop, result: "nothing to load ({{ fetch.rows }} rows)"}
    next: {arcs: [{step: settle}]}
  - step: settle   # holds the run open until the test has read its status
    tool: {kind: shell, cmd: 'while [ ! -e "{{ workload.flag }}" ]; do sleep 0.1; done'}
  - step: load
    tool: {kind: noop}
"""


def load(text: str):
    return load_playbook_text(textwrap.dedent(text), source="<test>").playbook


async def test_a_retrying_step_is_skipped_by_the_cli_and_routes_on_the_result(temporal, task_queue, tmp_path):
    mark = tmp_path / "attempted"
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, load(STUCK), task_queue=task_queue, execution_timeout_s=120,
                                       payload={"mark": str(mark), "flag": str(tmp_path / "settled")})
        for _ in range(400):   # the first attempt failed: the task waits out its 40 s backoff
            if mark.exists():
                break
            await asyncio.sleep(0.05)
        code, out, err = await cli("skip", handle.id, "load", "--reason", "x", "--address", temporal.address)
        assert code == 2 and err.strip().startswith("error: step 'load' is not running, so there is nothing to skip "
                                                    "(running: fetch)"), err
        code, out, err = await cli("skip", handle.id, "fetch", "--reason", "source is down; nothing new today",
                                   "--result", '{"rows": 0}', "--by", "oncall", "--address", temporal.address)
        assert code == 0, err
        assert json.loads(out)["result"] == {"rows": 0}
        for _ in range(200):   # while the run goes on, `status` says SKIPPED from the live workflow
            code, out, err = await cli("status", handle.id, "--address", temporal.address, "--json")
            if "skipped_steps" in json.loads(out):
                break
            await asyncio.sleep(0.1)
        live = json.loads(out)
        assert live["state"] == "RUNNING" and live["skipped_steps"]["fetch"]["by"] == "oncall", live
        (tmp_path / "settled").touch()
        output = await asyncio.wait_for(handle.result(), timeout=30)   # not after the backoff: it is cancelled
        # the step ends SKIPPED, with who and why, in `status` and `events` (a skip is a recovery:
        # the execution completes)
        code, out, err = await cli("status", handle.id, "--address", temporal.address)
        assert code == 0 and "state                COMPLETED" in out, (out, err)
        assert "skipped.fetch        SKIPPED by oncall: source is down; nothing new today" in out, out
        code, out, err = await cli("status", handle.id, "--address", temporal.address, "--json")
        assert json.loads(out)["skipped_steps"] == {"fetch": {"by": "oncall",
                                                              "reason": "source is down; nothing new today"}}
        code, out, err = await cli("events", handle.id, "--address", temporal.address, "--entity", "fetch")
        lines = out.splitlines()
        assert any("step.skipped" in line and line.endswith("by oncall: source is down; nothing new today")
                   for line in lines), out
        assert any("step.done" in line and line.endswith("success SKIPPED") for line in lines), out
    assert output["state"] == "COMPLETED"
    assert output["steps"]["fetch"] == {"status": "SKIPPED", "runs": 1, "result": {"rows": 0},
                                        "skipped": {"by": "oncall", "reason": "source is down; nothing new today"}}
    assert output["steps"]["empty"]["result"] == "nothing to load (0 rows)" and "load" not in output["steps"]
    events = await read_events(temporal.client, handle.id, store=open_event_store())   # closed: from the store
    [skipped] = [e for e in events if e["event_type"] == "step.skipped"]
    assert skipped["entity_id"] == "fetch" and skipped["payload"]["by"] == "oncall"
    assert skipped["payload"]["reason"] == "source is down; nothing new today" and skipped["payload"]["skipped_at"]
    order = [(e["event_type"], e["entity_id"]) for e in events]
    assert order.index(("step.skipped", "fetch")) < order.index(("step.done", "fetch"))
    [done] = [e for e in events if e["event_type"] == "step.done" and e["entity_id"] == "fetch"]
    assert done["payload"]["meta"] == {"step_status": "SKIPPED"}
    assert done["payload"]["skipped"] == {"by": "oncall", "reason": "source is down; nothing new today"}
    history = await handle.fetch_history()
    assert any(e.HasField("workflow_execution_update_accepted_event_attributes") and b"oncall" in
               e.SerializeToString() for e in history.events)


LOOPED = """
metadata: {name: looped-skip}
workflow:
  - step: each
    loop: {in: "{{ [1, 2, 3] }}", iterator: n, spec: {mode: parallel}}
    tool: {kind: shell, cmd: "if [ {{ n }} = 2 ]; then sleep 60; fi; echo {{ n }}"}
"""


async def test_a_loop_iteration_is_skipped_and_refusals_say_why(temporal, task_queue):
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, load(LOOPED), task_queue=task_queue, execution_timeout_s=60)
        for _ in range(400):
            done = await read_events(temporal.client, handle.id, types=["loop.iteration.done"])
            if len(done) == 2:
                break
            await asyncio.sleep(0.05)
        for request, reason in (
                ({"step": "each", "reason": "slow"}, "step 'each' is a loop: name the iteration to skip "
                                                     "(--iteration N; waiting: 1)"),
                ({"step": "each", "reason": "slow", "iteration": 0}, "iteration 0 of step 'each' is not running"),
                ({"step": "each", "reason": " ", "iteration": 1}, "a skip needs a reason")):
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await handle.execute_update("skip_step", request)
            assert reason in str(refused.value.cause)
        await handle.execute_update("skip_step", {"step": "each", "reason": "slow", "iteration": 1,
                                                  "result": {"stdout": "skipped"}, "by": "ops"})
        output = await asyncio.wait_for(handle.result(), timeout=30)
    assert output["state"] == "COMPLETED"
    results = output["steps"]["each"]["result"]["results"]
    assert [r["stdout"] for r in results] == ["1\n", "skipped", "3\n"]


HELD = """
metadata: {name: held}
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: first}, {step: other}]}
  - step: first
    tool: {kind: shell, cmd: 'while [ ! -e "{{ workload.flag }}" ]; do sleep 0.1; done'}
    next: {arcs: [{step: second}]}
  - step: other
    tool: {kind: shell, cmd: "echo other"}
  - step: second
    tool: {kind: noop, result: "second ran"}
"""


async def test_one_step_is_paused_while_the_rest_goes_on_then_resumed_by_the_cli(temporal, task_queue, tmp_path):
    flag = tmp_path / "go"
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, load(HELD), task_queue=task_queue, execution_timeout_s=60,
                                       payload={"flag": str(flag)})
        code, out, err = await cli("pause-step", handle.id, "second", "--reason", "db maintenance", "--by", "ops",
                                   "--address", temporal.address)
        assert code == 0 and json.loads(out)["paused_steps"] == ["second"], err
        code, out, err = await cli("pause-step", handle.id, "nope", "--address", temporal.address)
        assert code == 2 and err.strip() == "error: the playbook has no step 'nope'", err
        code, out, err = await cli("resume-step", handle.id, "other", "--address", temporal.address)
        assert code == 2 and err.strip() == "error: step 'other' is not paused (paused steps: second)", err
        flag.touch()   # `first` ends; `second` is held while `other` went on
        for _ in range(400):
            done = await read_events(temporal.client, handle.id, types=["step.done"])
            if {e["entity_id"] for e in done} >= {"start", "first", "other"}:
                break
            await asyncio.sleep(0.05)
        status = await handle.query("status")
        assert status["state"] == "RUNNING" and status["paused_steps"] == ["second"]
        details = (await handle.query("__temporal_workflow_metadata")).current_details
        assert "paused by an operator (resume-step): `second`" in details
        code, out, err = await cli("status", handle.id, "--address", temporal.address, "--json")
        assert json.loads(out)["paused_steps"] == ["second"], err
        code, out, err = await cli("resume-step", handle.id, "second", "--reason", "done", "--address",
                                   temporal.address)
        assert code == 0 and json.loads(out)["paused_steps"] == [], err
        output = await asyncio.wait_for(handle.result(), timeout=30)
        events = await read_events(temporal.client, handle.id)
    assert output["state"] == "COMPLETED" and output["steps"]["second"]["result"] == "second ran"
    held = [(e["event_type"], e["payload"]["by"], e["payload"]["reason"]) for e in events
            if e["event_type"] in ("step.paused", "step.resumed")]
    assert held[0] == ("step.paused", "ops", "db maintenance") and held[1][0::2] == ("step.resumed", "done")
    order = [(e["event_type"], e["entity_id"]) for e in events]
    assert order.index(("step.done", "other")) < order.index(("step.resumed", "second")) \
        < order.index(("step.started", "second"))
