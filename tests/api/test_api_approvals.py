"""``POST /executions/{id}/steps/{step}/answer`` on the dev server: an approver's token
answers as its name (and opens nothing else), the API token answers as ``api``, the
workflow's validator refuses what does not fit (422 with the reason), and ``/status``
shows what waits."""

from __future__ import annotations

import pytest

from noetl_temporal.hosting.worker import build_worker

from .conftest import app_client, events_of, make_settings, playbook, wait_for, wait_state

pytestmark = pytest.mark.temporal

GATE = playbook("""
    metadata: {name: gate}
    workflow:
      - step: sign_off
        tool:
          kind: approve
          prompt: "Deploy?"
          fields: {approved: {type: boolean, required: true}, ticket: integer}
          approvers: [alice]
        next: {arcs: [{step: deploy, when: "{{ sign_off.approved }}"}, {step: hold}]}
      - step: deploy
        tool: {kind: noop, result: "deployed for ticket {{ sign_off.ticket }} by {{ sign_off.answered_by }}"}
      - step: hold
        tool: {kind: noop}
""")

TOKEN, ALICE, BOB = "api-token-1234", "alice-token-5678", "bob-token-9012"


@pytest.fixture
async def secured(temporal, task_queue, catalog, event_store):
    settings = make_settings(temporal, task_queue, catalog, event_store, token=TOKEN,
                             approvers={ALICE: "alice", BOB: "bob"})
    async with build_worker(temporal.client, task_queue=task_queue, event_store=event_store):
        async with app_client(settings) as http:
            yield http


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def start_waiting(http) -> str:
    r = await http.post("/executions", json={"playbook": GATE}, headers=auth(TOKEN))
    assert r.status_code == 202, r.text
    execution_id = r.json()["execution_id"]

    async def asked():
        status = (await http.get(f"/executions/{execution_id}/status", headers=auth(TOKEN))).json()
        return status if status.get("waiting") else None

    status = await wait_for(asked, what="the approval to wait")
    assert status["state"] == "RUNNING" and status["waiting"][0]["prompt"] == "Deploy?"
    return execution_id


async def test_an_approver_token_answers_as_its_name(secured):
    execution_id = await start_waiting(secured)
    url = f"/executions/{execution_id}/steps/sign_off/answer"
    # the API token answers as `api`, which this task's approvers do not name
    r = await secured.post(url, json={"values": {"approved": True}}, headers=auth(TOKEN))
    assert r.status_code == 422 and r.json()["detail"] == \
        "api may not answer step 'sign_off': its approvers are alice", r.text
    r = await secured.post(url, json={"values": {"approved": True}}, headers=auth(BOB))
    assert r.status_code == 422 and "bob may not answer" in r.json()["detail"]
    r = await secured.post(url, json={"values": {"approved": True}}, headers=auth("wrong"))
    assert r.status_code == 401
    r = await secured.post(url, json={"values": {"approved": True, "ticket": "twelve"}}, headers=auth(ALICE))
    assert r.status_code == 422 and r.json()["detail"] == \
        "answer to step 'sign_off' refused: field 'ticket' takes a integer, not 'twelve'"
    # an approver's token opens the answer route only
    assert (await secured.get(f"/executions/{execution_id}/status", headers=auth(ALICE))).status_code == 401

    r = await secured.post(url, json={"values": {"approved": True, "ticket": 12}, "reason": "change 12 ok"},
                           headers=auth(ALICE))
    assert r.status_code == 200, r.text
    assert r.json()["by"] == "alice" and r.json()["answer"] == {"approved": True, "ticket": 12}
    r = await secured.post(url, json={"values": {"approved": True}}, headers=auth(ALICE))
    assert r.status_code in (409, 422), r.text   # answered: nothing waits any more (or it already ended)


async def test_answered_through_the_open_api(api):
    r = await api.post("/executions", json={"playbook": GATE.replace("approvers: [alice]", "approvers: [api]")})
    execution_id = r.json()["execution_id"]

    async def asked():
        return (await api.get(f"/executions/{execution_id}/status")).json().get("waiting")

    await wait_for(asked, what="the approval to wait")
    r = await api.post(f"/executions/{execution_id}/steps/nope/answer", json={"values": {}})
    assert r.status_code == 422 and r.json()["detail"] == \
        "step 'nope' is not waiting for an answer (waiting: sign_off)"
    r = await api.post(f"/executions/{execution_id}/steps/sign_off/answer", json={"values": {"approved": False}})
    assert r.status_code == 200 and r.json()["by"] == "api", r.text
    status = await wait_state(api, execution_id)
    assert status["state"] == "COMPLETED" and "waiting" not in status
    detail = (await api.get(f"/executions/{execution_id}")).json()
    assert set(detail["steps"]) == {"sign_off", "hold"}
    assert detail["steps"]["sign_off"]["result"]["answered_by"] == "api"
    answered = await events_of(api, execution_id, type="approval.answered")
    assert answered[0]["payload"]["by"] == "api" and answered[0]["payload"]["answer"] == {"approved": False}
    r = await api.post(f"/executions/{execution_id}/steps/sign_off/answer", json={"values": {"approved": True}})
    assert r.status_code == 409, r.text   # the execution ended


SLOW = playbook("""
    metadata: {name: slow}
    workflow:
      - step: wait
        tool: {kind: shell, cmd: "sleep 60"}
        next: {arcs: [{step: after}]}
      - step: after
        tool: {kind: noop, result: "after {{ wait.why }}"}
""")


async def test_a_running_step_is_skipped_through_the_api(api):
    execution_id = (await api.post("/executions", json={"playbook": SLOW})).json()["execution_id"]

    async def running():
        events = await events_of(api, execution_id, type="task.started")
        return events or None

    await wait_for(running, what="the slow task to start")
    url = f"/executions/{execution_id}/steps/wait/skip"
    r = await api.post(url, json={"reason": ""})
    assert r.status_code == 422   # a reason is required
    r = await api.post(f"/executions/{execution_id}/steps/after/skip", json={"reason": "no"})
    assert r.status_code == 422 and r.json()["detail"].startswith("step 'after' is not running"), r.text
    r = await api.post(url, json={"reason": "not needed today", "result": {"why": "skipped"}})
    assert r.status_code == 200 and r.json()["by"] == "api", r.text
    status = await wait_state(api, execution_id, timeout=30)
    assert status["state"] == "COMPLETED"
    detail = (await api.get(f"/executions/{execution_id}")).json()
    assert detail["steps"]["after"]["result"] == "after skipped"
    # the API's step state: SKIPPED by the API's token, with the reason (the execution completed)
    assert detail["steps"]["wait"]["status"] == "SKIPPED", detail["steps"]
    assert detail["steps"]["wait"]["skipped"] == {"by": "api", "reason": "not needed today"}
    [skipped] = await events_of(api, execution_id, type="step.skipped")
    assert skipped["payload"]["reason"] == "not needed today" and skipped["payload"]["by"] == "api"
    r = await api.post(url, json={"reason": "again"})
    assert r.status_code == 409   # it ended


async def test_a_step_is_paused_and_resumed_through_the_api(api):
    held = SLOW.replace('cmd: "sleep 60"', 'cmd: "sleep 1"')
    execution_id = (await api.post("/executions", json={"playbook": held})).json()["execution_id"]
    r = await api.post(f"/executions/{execution_id}/steps/after/pause", json={"reason": "hold on"})
    assert r.status_code == 200 and r.json() == {"execution_id": execution_id, "step": "after", "paused": True,
                                                 "paused_steps": ["after"]}, r.text
    r = await api.post(f"/executions/{execution_id}/steps/nope/pause")
    assert r.status_code == 422 and r.json()["detail"] == "the playbook has no step 'nope'"

    async def held_back():   # `wait` ended, `after` waits for the resume
        done = await events_of(api, execution_id, type="step.done")
        return done or None

    await wait_for(held_back, what="the first step to end")
    status = (await api.get(f"/executions/{execution_id}/status")).json()
    assert status["state"] == "RUNNING" and status["paused_steps"] == ["after"]
    r = await api.post(f"/executions/{execution_id}/steps/after/resume")
    assert r.status_code == 200 and r.json()["paused_steps"] == [], r.text
    status = await wait_state(api, execution_id, timeout=30)
    assert status["state"] == "COMPLETED" and "paused_steps" not in status
    [paused] = await events_of(api, execution_id, type="step.paused")
    assert paused["payload"]["by"] == "api" and paused["payload"]["reason"] == "hold on"
