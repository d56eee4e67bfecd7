"""``/schedules`` over the dev server (real Temporal Schedules starting real runs), and the
playbook version and hash every execution carries (search attributes, the detail, the
`?playbook_version=`/`?playbook_sha256=` filters): docs/schedules.md."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from datetime import UTC, datetime, timedelta
from typing import get_args

import pytest

from noetl_temporal.api.models import Overlap
from noetl_temporal.client.schedules import OVERLAP_POLICIES

from .conftest import playbook, wait_for, wait_state

pytestmark = pytest.mark.temporal


def _pb(name: str, version: str = "3") -> str:
    return playbook(f"""
    metadata: {{name: {name}, path: sched/{name}, version: "{version}"}}
    workload: {{who: nobody}}
    workflow:
      - step: start
        tool: {{kind: shell, cmd: "echo hi {{{{ workload.who }}}}"}}
    """)


def test_the_api_spells_every_overlap_policy():
    assert get_args(Overlap) == tuple(OVERLAP_POLICIES)


async def test_a_schedule_fires_twice_is_paused_triggered_listed_and_deleted(api, temporal):
    name = f"api-every-{uuid.uuid4().hex[:8]}"
    r = await api.post("/schedules", json={"name": name, "playbook": _pb(name), "every": "1s",
                                           "overlap": "allow_all", "payload": {"who": "ada", "api_token": "s3cret"}})
    assert r.status_code == 201, r.text
    assert r.headers["location"] == f"/schedules/{name}"
    created = r.json()
    assert created["every_s"] == [1.0] and created["playbook_version"] == "3" and len(created["playbook_sha256"]) == 64
    assert created["source"] == "inline" and created["payload"] == {"who": "ada", "api_token": "***"}

    async def two_runs():
        body = (await api.get(f"/schedules/{name}")).json()
        return body["recent"] if len(body["recent"]) >= 2 else None

    recent = await wait_for(two_runs, timeout=90, what="two scheduled runs")
    for run in recent[:2]:
        assert run["execution_id"].startswith(f"{name}-")
        assert (await wait_state(api, run["execution_id"], timeout=60))["state"] == "COMPLETED"
        output = await temporal.client.get_workflow_handle(run["execution_id"]).result()
        assert output["execution_id"] == run["execution_id"]   # each run is its own execution
        detail = (await api.get(f"/executions/{run['execution_id']}")).json()
        assert detail["steps"]["start"]["result"]["stdout"].strip() == "hi ada"
        assert detail["playbook"]["sha256"] == created["playbook_sha256"] and detail["playbook"]["version"] == "3"

    async def by_schedule():
        items = (await api.get("/executions", params={"schedule": name})).json()["items"]
        return items if len(items) >= 2 else None

    items = await wait_for(by_schedule, timeout=30, what="the runs by ?schedule=")
    assert {run["execution_id"] for run in recent[:2]} <= {item["execution_id"] for item in items}
    assert all(item["playbook_sha256"] == created["playbook_sha256"] for item in items)

    r = await api.post(f"/schedules/{name}/pause", json={"note": "quiet hours"})
    assert r.status_code == 200 and r.json()["paused"] and r.json()["note"] == "quiet hours", r.text
    before = r.json()["actions"]
    r = await api.post(f"/schedules/{name}/trigger")
    assert r.status_code == 202, r.text

    async def triggered():
        return (await api.get(f"/schedules/{name}")).json()["actions"] == before + 1

    await wait_for(triggered, timeout=60, what="the triggered run")
    r = await api.post(f"/schedules/{name}/unpause")
    assert r.status_code == 200 and not r.json()["paused"], r.text

    async def listed():
        return [s for s in (await api.get("/schedules")).json()["items"] if s["name"] == name]

    [item] = await wait_for(listed, timeout=30, what="the schedule in GET /schedules")
    assert item["playbook_path"] == f"sched/{name}" and item["every_s"] == [1.0]
    assert (await api.delete(f"/schedules/{name}")).status_code == 204
    r = await api.get(f"/schedules/{name}")
    assert r.status_code == 404 and f"no schedule '{name}'" in r.json()["detail"]


async def test_backfill_of_a_catalog_playbook_starts_the_runs_of_the_window(api, temporal):
    name = f"api-backfill-{uuid.uuid4().hex[:8]}"
    r = await api.post("/catalog", json={"content": _pb(name)})
    assert r.status_code == 201, r.text
    r = await api.post("/schedules", json={"name": name, "path": f"sched/{name}", "cron": ["*/10 * * * *"],
                                           "paused": True})
    assert r.status_code == 201, r.text
    assert r.json()["source"] == f"catalog:sched/{name}@1" and r.json()["playbook_version"] == "3"
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    grid = now - timedelta(minutes=now.minute % 10) - timedelta(hours=5)
    r = await api.post(f"/schedules/{name}/backfill", json={
        "start": (grid + timedelta(minutes=5)).isoformat(), "end": (grid + timedelta(minutes=45)).isoformat()})
    assert r.status_code == 202, r.text
    expected = {f"{name}-{(grid + timedelta(minutes=m)).isoformat().replace('+00:00', 'Z')}" for m in (10, 20, 30, 40)}

    async def runs():
        found = {wf.id async for wf in temporal.client.list_workflows(f"TemporalScheduledById = '{name}'")}
        return found if len(found) >= 4 else None

    assert await wait_for(runs, timeout=90, what="four backfilled runs") == expected
    for execution_id in expected:
        assert (await wait_state(api, execution_id, timeout=60))["state"] == "COMPLETED"
    assert (await api.delete(f"/schedules/{name}")).status_code == 204


async def test_schedule_mistakes_are_clear_4xx(api):
    name = f"api-errors-{uuid.uuid4().hex[:8]}"
    r = await api.post("/schedules", json={"name": name, "playbook": _pb(name), "cron": ["every tuesday"]})
    assert r.status_code == 422 and "CronString" in r.json()["detail"], r.text
    r = await api.post("/schedules", json={"name": name, "playbook": _pb(name), "every": "soon"})
    assert r.status_code == 422 and "every 'soon' is not a duration" in r.json()["detail"], r.text
    r = await api.post("/schedules", json={"name": name, "playbook": _pb(name)})
    assert r.status_code == 422 and "has no times" in r.json()["detail"], r.text
    r = await api.post("/schedules", json={"name": "no spaces", "playbook": _pb(name), "every": "1h"})
    assert r.status_code == 422, r.text
    r = await api.post("/schedules", json={"name": name, "every": "1h", "overlap": "sometimes",
                                           "playbook": _pb(name)})
    assert r.status_code == 422, r.text
    bad = "workflow:\n  - step: start\n    tool: {kind: noop}\n    next: [{step: nowhere}]\n"
    r = await api.post("/schedules", json={"name": name, "playbook": bad, "every": "1h"})
    assert r.status_code == 422 and r.json()["errors"][0]["line"] == 4, r.text
    for method, route in (("GET", ""), ("POST", "/pause"), ("POST", "/unpause"), ("POST", "/trigger"),
                          ("DELETE", "")):
        r = await api.request(method, f"/schedules/{name}{route}")
        assert r.status_code == 404 and f"no schedule '{name}'" in r.json()["detail"], (route, r.text)
    r = await api.post(f"/schedules/{name}/backfill", json={"start": "2026-01-01T00:00:00Z",
                                                            "end": "2026-01-02T00:00:00Z"})
    assert r.status_code == 404, r.text
    assert (await api.post("/schedules", json={"name": name, "playbook": _pb(name), "every": "1h",
                                               "paused": True})).status_code == 201
    r = await api.post("/schedules", json={"name": name, "playbook": _pb(name), "every": "1h"})
    assert r.status_code == 409 and "exists already" in r.json()["detail"], r.text
    r = await api.post(f"/schedules/{name}/backfill", json={"start": "2026-01-02T00:00:00Z",
                                                            "end": "2026-01-01T00:00:00Z"})
    assert r.status_code == 422 and "is not after its start" in r.json()["detail"], r.text
    assert (await api.delete(f"/schedules/{name}")).status_code == 204


GATED = """
metadata: {{name: {name}, path: pinned/{name}, version: "{version}"}}
workflow:
  - step: start
    tool: {{kind: noop}}
    next: {{arcs: [{{step: gated}}]}}
  - step: gated
    spec: {{policy: {{admit: {{on_deny: wait, rules: [{{when: "{{{{ ctx.go }}}}", then: {{allow: true}}}}]}}}}}}
    tool: {{kind: shell, cmd: "echo {say}"}}
"""


async def _cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "noetl_temporal.cli", *args, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=dict(os.environ))
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    return proc.returncode, out.decode(), err.decode()


async def test_a_running_execution_stays_pinned_to_its_version_and_is_found_by_it(api, temporal):
    name = f"pinned-{uuid.uuid4().hex[:8]}"
    v1, v2 = f"{name}-1", f"{name}-2"
    first = (await api.post("/executions", json={"playbook": playbook(GATED.format(name=name, version=v1,
                                                                                      say="one"))})).json()
    # the same playbook, changed, as version 2: the first execution, still waiting, keeps running version 1
    second = (await api.post("/executions", json={"playbook": playbook(GATED.format(name=name, version=v2,
                                                                                       say="two"))})).json()
    one = (await api.get(f"/executions/{first['execution_id']}")).json()
    two = (await api.get(f"/executions/{second['execution_id']}")).json()
    assert one["state"] in ("PENDING", "RUNNING") and one["playbook"]["version"] == v1
    assert two["playbook"]["version"] == v2 and one["playbook"]["sha256"] != two["playbook"]["sha256"]

    async def listed(**params):
        body = (await api.get("/executions", params=params)).json()
        return [item["execution_id"] for item in body["items"]]

    assert await wait_for(lambda: listed(playbook_version=v1), what="the v1 execution by version") \
        == [first["execution_id"]]
    assert await wait_for(lambda: listed(playbook_sha256=two["playbook"]["sha256"]), what="v2 by hash") \
        == [second["execution_id"]]
    [item] = (await api.get("/executions", params={"playbook_version": v1})).json()["items"]
    assert (item["playbook_version"], item["playbook_sha256"]) == (v1, one["playbook"]["sha256"])
    # the same filter in Temporal's own terms: a visibility query on the search attributes
    found = [wf.id async for wf in temporal.client.list_workflows(
        f"NoetlPlaybookHash = '{one['playbook']['sha256']}' AND NoetlPlaybookVersion = '{v1}'")]
    assert found == [first["execution_id"]]
    code, out, err = await _cli("status", first["execution_id"], "--playbook", "--json",
                                "--address", temporal.address)
    assert code == 0, err
    assert json.loads(out)["playbook"] == {**one["playbook"]}
    code, out, err = await _cli("status", first["execution_id"], "--playbook", "--address", temporal.address)
    assert f"playbook.version     {v1}" in out and f"playbook.sha256      {one['playbook']['sha256']}" in out, out
    r = await api.get("/executions", params={"playbook_sha256": "not-a-hash"})
    assert r.status_code == 422, r.text

    for execution_id, say in ((first["execution_id"], "one"), (second["execution_id"], "two")):
        assert (await api.post(f"/executions/{execution_id}/ctx", json={"patch": {"go": True}})).status_code == 200
        assert (await wait_state(api, execution_id))["state"] == "COMPLETED"
        detail = (await api.get(f"/executions/{execution_id}")).json()
        assert detail["steps"]["gated"]["result"]["stdout"].strip() == say


@pytest.mark.parametrize("sandboxed", [False, True], ids=["unsandboxed", "sandboxed"])
async def test_a_scheduled_run_replays_under_its_own_id(api, temporal, sandboxed):
    """A schedule's action carries no execution id; the run takes its workflow id, and its
    history replays to the same engine state under either runner (docs/schedules.md)."""
    from temporalio.worker import Replayer

    from noetl_temporal.engine import machine
    from noetl_temporal.hosting.variants import SandboxedPlaybookWorkflow
    from noetl_temporal.hosting.worker import sandbox_runner
    from noetl_temporal.workflow.playbook_workflow import PlaybookWorkflow

    name = f"api-replay-{uuid.uuid4().hex[:8]}"
    assert (await api.post("/schedules", json={"name": name, "playbook": _pb(name), "every": "1h",
                                               "paused": True})).status_code == 201
    assert (await api.post(f"/schedules/{name}/trigger")).status_code == 202

    async def started():
        recent = (await api.get(f"/schedules/{name}")).json()["recent"]
        return recent[0]["execution_id"] if recent else None

    execution_id = await wait_for(started, timeout=60, what="the triggered run")
    handle = temporal.client.get_workflow_handle(execution_id)
    assert (await handle.result())["execution_id"] == execution_id
    history = await handle.fetch_history()
    states = []
    real_step = machine.step

    def spy(state, event):
        states.append(state)
        return real_step(state, event)

    machine.step = spy
    try:
        replayer = Replayer(workflows=[SandboxedPlaybookWorkflow if sandboxed else PlaybookWorkflow],
                            workflow_runner=sandbox_runner())
        result = await replayer.replay_workflow(history)
    finally:
        machine.step = real_step
    assert result.replay_failure is None
    assert states[-1].execution_id == execution_id and states[-1].status.value == "COMPLETED"
    assert (await api.delete(f"/schedules/{name}")).status_code == 204
