"""``kind: approve`` on the dev server: a step waits for a person, the answer (CLI as a
subprocess, or the update a client sends) becomes its result and arcs route on it; a wrong
answer is refused with the reason; an unanswered one times out on a durable timer."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap

import pytest
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowUpdateFailedError

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.control import read_detail
from noetl_temporal.client.observe import read_events, read_status
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.hosting.worker import build_worker
from noetl_temporal.store.event_store import open_event_store

pytestmark = pytest.mark.temporal

SHIP = """
metadata: {name: ship}
workflow:
  - step: start
    tool: {kind: noop, result: {release: "{{ workload.release }}"}}
    next: {arcs: [{step: sign_off}]}
  - step: sign_off
    tool:
      kind: approve
      prompt: "Ship {{ start.release }}?"
      fields:
        approved: {type: boolean, required: true}
        env: {type: string, choices: [staging, prod]}
        comment: string
      approvers: [alice, ops]
      %(timeout)s
    next:
      arcs:
        - {step: ship, when: "{{ sign_off.approved }}"}
        - {step: hold}
  - step: ship
    tool: {kind: noop, result: "shipped to {{ sign_off.env }} by {{ sign_off.answered_by }}"}
  - step: hold
    tool: {kind: noop, result: {timed_out: "{{ sign_off.timed_out }}"}}
"""

workload = {"release": "v2"}


def playbook(timeout: str = ""):
    return load_playbook_text(textwrap.dedent(SHIP % {"timeout": timeout}), source="<test>").playbook


async def cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "noetl_temporal.cli", *args, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=dict(os.environ))
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


async def waiting(client, execution_id: str) -> dict:
    """The status once an approval waits (``waiting`` names it)."""
    for _ in range(300):
        status = await read_status(client, execution_id)
        if status.get("waiting"):
            return status
        await asyncio.sleep(0.05)
    raise AssertionError(f"no approval waited: {status}")


async def test_answered_by_the_cli_routes_on_the_answer(temporal, task_queue):
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook(), task_queue=task_queue, payload=workload,
                                       execution_timeout_s=60)
        status = await waiting(temporal.client, handle.id)
        assert status["state"] == "RUNNING" and status["current_step"] == "sign_off"
        [ask] = status["waiting"]
        assert ask["step"] == "sign_off" and ask["prompt"] == "Ship v2?" and ask["approvers"] == ["alice", "ops"]
        assert ask["fields"] == [{"name": "approved", "type": "boolean", "required": True},   # a mapping: name order
                                 {"name": "comment", "type": "string", "required": False},
                                 {"name": "env", "type": "string", "required": False, "choices": ["staging", "prod"]}]
        details = (await handle.query("__temporal_workflow_metadata")).current_details
        assert "waiting for an answer (approve): `sign_off` (Ship v2?)" in details

        code, out, err = await cli("status", handle.id, "--address", temporal.address, "--json")
        assert code == 0 and json.loads(out)["waiting"][0]["step"] == "sign_off", err
        code, out, err = await cli("approve", handle.id, "sign_off", "--set", "approved=true", "--set", "env=prod",
                                   "--by", "alice", "--reason", "tests pass", "--address", temporal.address)
        assert code == 0, err
        assert json.loads(out)["answer"] == {"approved": True, "env": "prod"}
        output = await asyncio.wait_for(handle.result(), timeout=30)
        assert output["state"] == "COMPLETED"
        assert output["steps"]["ship"]["result"] == "shipped to prod by alice"
        assert "hold" not in output["steps"]
        result = output["steps"]["sign_off"]["result"]
        assert result["approved"] is True and result["answered_by"] == "alice" and result["timed_out"] is False
        events = await read_events(temporal.client, handle.id)
        order = [(e["event_type"], e.get("entity_id")) for e in events]
        assert order.index(("approval.requested", "sign_off_task")) < order.index(("approval.answered", "sign_off_task")) \
            < order.index(("step.done", "sign_off"))
        answered = next(e for e in events if e["event_type"] == "approval.answered")
        assert answered["payload"]["step"] == "sign_off" and answered["payload"]["by"] == "alice" and answered["payload"]["reason"] == "tests pass"
        assert answered["payload"]["answer"] == {"approved": True, "env": "prod"}
        assert answered["payload"]["answered_at"]
        # and in Temporal's own history: the update, with who answered
        history = await handle.fetch_history()
        updates = [e for e in history.events if e.HasField("workflow_execution_update_accepted_event_attributes")]
        assert len(updates) == 1 and b"alice" in updates[0].SerializeToString()


@pytest.mark.parametrize(("request_", "reason"), [
    ({"values": {"approved": "yes"}, "by": "alice"}, "field 'approved' takes a boolean, not 'yes'"),
    ({"values": {"env": "prod"}, "by": "alice"}, "required field missing: approved"),
    ({"values": {"approved": True, "env": "dev"}, "by": "alice"}, "field 'env' takes one of ['staging', 'prod']"),
    ({"values": {"approved": True, "colour": "red"}, "by": "alice"}, "the form has no field 'colour'"),
    ({"values": {"approved": True}, "by": "mallory"}, "mallory may not answer step 'sign_off': its approvers are "
                                                      "alice, ops"),
    ({"values": {"approved": True}, "by": "alice", "step": "start"}, "step 'start' is not waiting for an answer "
                                                                    "(waiting: sign_off)"),
])
async def test_a_wrong_answer_is_refused_with_the_reason(temporal, task_queue, request_, reason):
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook(), task_queue=task_queue, payload=workload,
                                       execution_timeout_s=60)
        await waiting(temporal.client, handle.id)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update("answer", {"step": "sign_off", **request_})
        assert reason in str(refused.value.cause)
        # refused: nothing recorded, still waiting; a right answer then goes through
        assert "approval.answered" not in [e["event_type"] for e in await read_events(temporal.client, handle.id)]
        await handle.execute_update("answer", {"step": "sign_off", "values": {"approved": False}, "by": "ops"})
        output = await asyncio.wait_for(handle.result(), timeout=30)
        assert output["state"] == "COMPLETED" and "hold" in output["steps"]


async def test_the_cli_reports_a_refusal_and_exits_2(temporal, task_queue):
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook(), task_queue=task_queue, payload=workload,
                                       execution_timeout_s=60)
        await waiting(temporal.client, handle.id)
        code, out, err = await cli("approve", handle.id, "sign_off", "--set", "approved=maybe", "--by", "ops",
                                   "--address", temporal.address)
        assert code == 2 and out == ""
        assert err.strip() == "error: answer to step 'sign_off' refused: field 'approved' takes a boolean, not 'maybe'"
        await handle.cancel()   # a waiting approval is cancelled with its execution
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(handle.result(), timeout=30)
        assert (await read_status(temporal.client, handle.id))["state"] == "CANCELLED"
        code, out, err = await cli("approve", handle.id, "sign_off", "--set", "approved=true", "--by", "ops",
                                   "--address", temporal.address)
        assert code == 1 and err.strip().startswith(f"error: execution {handle.id} is already CANCELLED: cannot "
                                                    "answer step 'sign_off' of it"), err


async def test_unanswered_it_times_out_and_takes_the_default_answer(temporal, task_queue):
    timeout = "timeout: 1\n      on_timeout: answer\n      default: {approved: false}"
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook(timeout), task_queue=task_queue, payload=workload,
                                       execution_timeout_s=60)
        output = await asyncio.wait_for(handle.result(), timeout=30)
        assert output["state"] == "COMPLETED"
        assert output["steps"]["hold"]["result"] == {"timed_out": True}
        assert output["steps"]["sign_off"]["result"] == {"approved": False, "answered_by": None,
                                                        "answered_at": output["steps"]["sign_off"]["result"]["answered_at"],
                                                        "timed_out": True}
        events = await read_events(temporal.client, handle.id)
        [timed_out] = [e for e in events if e["event_type"] == "approval.expired"]
        assert timed_out["payload"] == {"step": "sign_off", "timeout": 1, "on_timeout": "answer", "answer": {"approved": False}}
        history = await handle.fetch_history()
        assert any(e.HasField("timer_fired_event_attributes") for e in history.events)   # a durable timer


async def test_unanswered_with_on_timeout_fail_the_step_fails(temporal, task_queue):
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook("timeout: 0.5"), task_queue=task_queue,
                                       payload=workload, execution_timeout_s=60)
        with pytest.raises(WorkflowFailureError):   # a FAILED playbook fails its workflow
            await asyncio.wait_for(handle.result(), timeout=30)

        _, detail = await read_detail(temporal.client, handle.id)
        assert detail["state"] == "FAILED" and detail["steps"]["sign_off"]["status"] == "FAILED"
        failed = [e for e in await read_events(temporal.client, handle.id) if e["event_type"] == "task.failed"]
        assert "not answered within 0.5 s" in json.dumps(failed)


PARALLEL = """
metadata: {name: ship-busy}
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: sign_off}, {step: busy}]}
  - step: sign_off
    tool:
      kind: approve
      prompt: "Ship?"
      fields: {approved: boolean}
      timeout: 600
      on_timeout: answer
      default: {approved: false}
  - step: busy
    loop: {in: "{{ range(12) | list }}", iterator: i, spec: {mode: sequential}}
    tool: {kind: shell, cmd: "echo {{ i }}"}
"""


async def test_a_waiting_approval_does_not_hold_back_continue_as_new(temporal, task_queue):
    """The other branch goes on (history grows, the run continues as new) while the approval
    waits; the wait moves to the next run with its deadline, and the answer reaches it there."""
    playbook = load_playbook_text(textwrap.dedent(PARALLEL), source="<test>").playbook
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=90,
                                       continue_as_new_after_events=30)
        latest = temporal.client.get_workflow_handle(handle.id)
        for _ in range(600):   # the busy branch ends in a later run, the approval still waiting
            events = await read_events(temporal.client, handle.id, store=open_event_store(), limit=10_000)
            if any(e["event_type"] == "step.done" and e["entity_id"] == "busy" for e in events):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the busy branch did not finish while the approval waited")
        first = temporal.client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id)
        assert (await first.describe()).status == WorkflowExecutionStatus.CONTINUED_AS_NEW
        status = await waiting(temporal.client, handle.id)
        assert status["waiting"][0]["step"] == "sign_off"
        details = (await latest.query("__temporal_workflow_metadata")).current_details
        assert "waiting for an answer (approve): `sign_off` (Ship?)" in details
        await latest.execute_update("answer", {"step": "sign_off", "values": {"approved": True}, "by": "ops"})
        output = await asyncio.wait_for(latest.result(), timeout=30)
        assert output["state"] == "COMPLETED"
        assert output["steps"]["sign_off"]["result"]["approved"] is True
        assert output["steps"]["busy"]["status"] == "COMPLETED"


def test_a_handed_over_wait_keeps_its_deadline():
    from datetime import UTC, datetime

    from noetl_temporal.workflow.approval_runs import remaining

    now = datetime(2026, 1, 1, 0, 1, 0, tzinfo=UTC)
    assert remaining(90, "2026-01-01T00:00:00Z", now) == 30.0
    assert remaining(30, "2026-01-01T00:00:00Z", now) == -30.0   # past: expires at once
    assert remaining(None, "2026-01-01T00:00:00Z", now) is None
