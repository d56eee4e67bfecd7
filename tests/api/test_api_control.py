"""Cancel, pause/resume and ctx patches (approval gates) through the API, on the real dev server."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support.processes import pid_alive, wait_dead

from .conftest import events_of, playbook, wait_event, wait_for, wait_state

pytestmark = pytest.mark.temporal

LONG = playbook("""
    metadata: {name: long}
    workflow:
      - step: sleepy
        tool:
          kind: python
          input: {started: "{{ workload.started }}", finished: "{{ workload.finished }}"}
          code: |
            import os, pathlib, time
            pathlib.Path(started).write_text(str(os.getpid()))
            time.sleep(30)
            pathlib.Path(finished).write_text("finished")
            result = "slept"
""")


async def start_long(api, tmp_path):
    started, finished = tmp_path / "started", tmp_path / "finished"
    r = await api.post("/executions", json={"playbook": LONG,
                                            "payload": {"started": str(started), "finished": str(finished)}})
    assert r.status_code == 202, r.text
    execution_id = r.json()["execution_id"]

    async def running():
        return started.exists() and started.read_text().strip()

    pid = int(await wait_for(running, what="the long task to start"))
    return execution_id, pid, finished


async def test_cancel_during_a_long_activity(api, tmp_path):
    execution_id, pid, finished = await start_long(api, tmp_path)
    assert pid_alive(pid)
    clock = time.monotonic()
    r = await api.post(f"/executions/{execution_id}/cancel", json={"reason": "operator said stop"})
    assert r.status_code == 200, r.text
    assert r.json() == {"execution_id": execution_id, "state": "CANCELLED", "cancel_requested": True}
    assert time.monotonic() - clock < 20   # not the 30 s task (docs/testing.md)

    status = (await api.get(f"/executions/{execution_id}/status")).json()
    assert status["state"] == "CANCELLED" and status["terminal_event"] == "execution.cancelled"
    cancelled = await events_of(api, execution_id, type="execution.cancelled")
    assert len(cancelled) == 1 and "operator said stop" in str(cancelled[0]["payload"])

    assert await wait_dead(pid, 10), "the task's process was not killed"  # the activity was cancelled
    assert not finished.exists()

    again = await api.post(f"/executions/{execution_id}/cancel")  # idempotent
    assert again.status_code == 200 and again.json()["state"] == "CANCELLED"
    pause = await api.post(f"/executions/{execution_id}/pause")
    assert pause.status_code == 409 and pause.json()["state"] == "CANCELLED"


async def test_cancel_from_temporals_own_cancel_request(api, temporal, tmp_path):
    execution_id, pid, finished = await start_long(api, tmp_path)
    await temporal.client.get_workflow_handle(execution_id).cancel()  # what the Temporal UI sends
    status = await wait_state(api, execution_id, timeout=10)
    assert status["state"] == "CANCELLED" and status["terminal_event"] == "execution.cancelled"
    assert [e["event_type"] for e in await events_of(api, execution_id, type="execution.cancelled")] == [
        "execution.cancelled"]

    assert await wait_dead(pid, 10), "the task's process was not killed"
    assert not finished.exists()


async def test_finished_execution_answers_409_with_its_state(api):
    text = "metadata: {name: quick}\nworkflow:\n  - step: a\n    tool: {kind: noop}\n"
    execution_id = (await api.post("/executions", json={"playbook": text})).json()["execution_id"]
    await wait_state(api, execution_id)
    for action, body in (("cancel", {"reason": "late"}), ("pause", {}), ("resume", None),
                         ("ctx", {"patch": {"approved": True}})):
        r = await api.post(f"/executions/{execution_id}/{action}", json=body)
        assert r.status_code == 409, (action, r.text)
        assert r.json()["state"] == "COMPLETED"


async def test_pause_and_resume_around_a_step_boundary(api):
    text = playbook("""
        metadata: {name: pausable}
        workflow:
          - step: first
            tool: {kind: python, code: "import time; time.sleep(1.5); result = 1"}
            next: {arcs: [{step: second}]}
          - step: second
            tool: {kind: python, code: "result = 2"}
    """)
    execution_id = (await api.post("/executions", json={"playbook": text})).json()["execution_id"]
    await wait_event(api, execution_id, lambda e: e["event_type"] == "step.started" and e["entity_id"] == "first")
    r = await api.post(f"/executions/{execution_id}/pause", json={"reason": "maintenance"})
    assert r.status_code == 202 and r.json()["paused"] is True

    # the running task finishes, but the next step is not admitted while paused
    await wait_event(api, execution_id, lambda e: e["event_type"] == "step.done" and e["entity_id"] == "first")
    await asyncio.sleep(1.0)
    types = [(e["event_type"], e.get("entity_id")) for e in await events_of(api, execution_id)]
    assert ("step.started", "second") not in types
    assert any(t == "playbook.paused" for t, _ in types)
    status = (await api.get(f"/executions/{execution_id}/status")).json()
    assert status["state"] == "RUNNING"
    assert (await api.get(f"/executions/{execution_id}")).json()["paused"] is True

    r = await api.post(f"/executions/{execution_id}/resume")
    assert r.status_code == 202 and r.json()["paused"] is False
    status = await wait_state(api, execution_id)
    assert status["state"] == "COMPLETED"
    detail = (await api.get(f"/executions/{execution_id}")).json()
    assert detail["steps"]["second"]["result"] == 2 and detail["paused"] is False


async def test_approval_gate_opened_by_a_ctx_patch(api):
    text = playbook("""
        metadata: {name: gate}
        workflow:
          - step: start
            tool: {kind: noop}
            next: {spec: {mode: inclusive}, arcs: [{step: gated}, {step: hold}]}
          - step: gated
            spec: {policy: {admit: {rules: [{when: "{{ ctx.approved }}", then: {allow: true}}]}}}
            tool: {kind: python, code: "result = 'approved'"}
          - step: hold
            tool: {kind: python, code: "import time; time.sleep(4); result = 'held'"}
    """)
    execution_id = (await api.post("/executions", json={"playbook": text})).json()["execution_id"]
    denied = await wait_event(api, execution_id, lambda e: e["event_type"] == "policy.admit.evaluated"
                              and e["entity_id"] == "gated")
    assert denied["payload"]["allowed"] is False

    rejected = await api.post(f"/executions/{execution_id}/ctx", json={"patch": {".bad": 1}})
    assert rejected.status_code == 422 and "invalid ctx key" in rejected.json()["detail"]
    empty = await api.post(f"/executions/{execution_id}/ctx", json={"patch": {}})
    assert empty.status_code == 422

    r = await api.post(f"/executions/{execution_id}/ctx", json={"patch": {"approved": True, "secret_note": "x"}})
    assert r.status_code == 200, r.text
    assert r.json()["ctx"] == {"approved": True, "secret_note": "***"}
    status = await wait_state(api, execution_id)
    assert status["state"] == "COMPLETED"
    detail = (await api.get(f"/executions/{execution_id}")).json()
    assert detail["steps"]["gated"]["result"] == "approved"
    assert detail["summary"]["denied_steps"] == []
