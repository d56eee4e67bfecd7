"""``POST /executions/{id}/redrive`` on the real dev server: the redrive of an execution that
failed at step 7 reruns steps 7-10 only; a newer playbook reruns the steps whose definition
changed and what follows them; a cancelled execution is redriven too; the refusals are
404, 409 and 422 with clear messages (docs/operations.md)."""

from __future__ import annotations

import pytest

from noetl_temporal.workflow.search_attributes import REDRIVEN_FROM
from tests.support.redrive import STEPS, counts, ten_steps

from .conftest import events_of, playbook, wait_for, wait_state

pytestmark = pytest.mark.temporal


async def start(api, text: str, payload: dict) -> str:
    r = await api.post("/executions", json={"playbook": text, "payload": payload})
    assert r.status_code == 202, r.text
    return r.json()["execution_id"]


async def test_redrive_through_the_api_reruns_only_what_failed_and_what_changed(api, temporal, tmp_path):
    old = await start(api, ten_steps(), {"dir": str(tmp_path)})
    assert (await wait_state(api, old))["state"] == "FAILED"
    before = counts(tmp_path)
    (tmp_path / "flag").write_text("fixed")
    r = await api.post(f"/executions/{old}/redrive", json={})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["redriven_from"] == old and body["definition"] == "original"
    assert body["reused_steps"] == sorted(STEPS[:6]) and body["old_stream_noted"] is True
    new = body["execution_id"]
    assert r.headers["location"] == f"/executions/{new}"
    assert (await wait_state(api, new))["state"] == "COMPLETED"
    after = counts(tmp_path)
    assert {s: after[s] - before[s] for s in STEPS} == {**{s: 0 for s in STEPS[:6]}, "s7": 1, "s8": 1,
                                                          "s9": 1, "s10": 1}
    events = await events_of(api, new)
    assert [e for e in events if e["event_type"] == "execution.redriven_from"][0]["payload"]["redriven_from"] == old
    old_events = await events_of(api, old)
    assert old_events[-1]["event_type"] == "execution.redriven"
    # the search attribute NoetlRedrivenFrom names the old execution (set at start), so a
    # visibility query (the Temporal UI's filter) finds the redrives of an execution
    described = await temporal.client.get_workflow_handle(new).describe()
    assert described.typed_search_attributes.get(REDRIVEN_FROM) == old
    old_described = await temporal.client.get_workflow_handle(old).describe()
    assert old_described.typed_search_attributes.get(REDRIVEN_FROM) is None

    async def listed() -> list[str]:
        return [wf.id async for wf in temporal.client.list_workflows(f"NoetlRedrivenFrom = '{old}'")]
    assert await wait_for(listed, timeout=30, every=0.5, what="the redrive in visibility") == [new]

    # a newer playbook: s5 changed, so s5 and everything after it reruns; s1-s4 are reused
    newer = ten_steps().replace("name: s5,", "name: s5, extra: 1,")
    before = counts(tmp_path)
    r = await api.post(f"/executions/{new}/redrive", json={"playbook": newer, "from_step": "s10"})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["definition"] == "file" and body["changed_steps"] == ["s5"]
    assert body["reused_steps"] == sorted(STEPS[:4])
    assert (await wait_state(api, body["execution_id"]))["state"] == "COMPLETED"
    after = counts(tmp_path)
    assert {s: after[s] - before[s] for s in STEPS} == {**{s: 0 for s in STEPS[:4]}, **{s: 1 for s in STEPS[4:]}}


CANCELLABLE = playbook("""
    metadata: {name: cancellable}
    workflow:
      - step: first
        tool: {kind: python, input: {dir: "{{ workload.dir }}"}, code: "open(dir + '/first', 'a').write('x')\\nresult = 1"}
        next: {arcs: [{step: slow}]}
      - step: slow
        tool:
          kind: python
          input: {dir: "{{ workload.dir }}"}
          code: |
            import pathlib, time
            open(dir + '/slow', 'a').write('x')
            if not pathlib.Path(dir, 'flag').exists():
                time.sleep(60)
            result = 2
""")


async def test_a_cancelled_execution_is_redriven_and_refusals_are_clear(api, tmp_path):
    old = await start(api, CANCELLABLE, {"dir": str(tmp_path)})
    await wait_for(lambda: _exists(tmp_path / "slow"), what="the slow step to start")
    r = await api.post(f"/executions/{old}/redrive", json={})
    assert r.status_code == 409 and "is still running" in r.json()["detail"]
    r = await api.post(f"/executions/{old}/cancel", json={"reason": "stuck"})
    assert r.status_code in (200, 202), r.text
    await wait_state(api, old, states=("CANCELLED",))
    r = await api.post(f"/executions/{old}/redrive", json={"from_step": "nope"})
    assert r.status_code == 422 and "unknown step 'nope'" in r.json()["detail"]
    r = await api.post("/executions/no-such-execution/redrive", json={})
    assert r.status_code == 404 and "no execution" in r.json()["detail"]
    (tmp_path / "flag").write_text("fixed")
    r = await api.post(f"/executions/{old}/redrive", json={})
    assert r.status_code == 201, r.text
    assert r.json()["reused_steps"] == ["first"]
    assert (await wait_state(api, r.json()["execution_id"]))["state"] == "COMPLETED"
    assert (tmp_path / "first").read_text() == "x" and (tmp_path / "slow").read_text() == "xx"


async def _exists(path):
    return path.exists()
