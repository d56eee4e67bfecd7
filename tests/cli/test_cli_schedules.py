"""`noetl-temporal schedule ...` as a subprocess against the dev server: real Temporal
Schedules that start real runs (docs/schedules.md). A long test (a dozen CLI processes per
test): tier `scale` in tests/conftest.py; the API's /schedules tests run by default."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from noetl_temporal.hosting.worker import build_worker

pytestmark = pytest.mark.temporal

PLAYBOOK = """
metadata: {name: nightly, path: reports/nightly, version: "2.1"}
executor: {spec: {timeout_s: 60}}
workload: {who: nobody}
workflow:
  - step: start
    tool: {kind: shell, cmd: "echo hello {{ workload.who }}"}
"""


async def cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "noetl_temporal.cli", *args, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=dict(os.environ))
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    return proc.returncode, out.decode(), err.decode()


async def runs_of(client, name: str) -> list:
    query = f"TemporalScheduledById = '{name}'"
    return [wf async for wf in client.list_workflows(query)]


async def until(check, *, timeout: float = 90, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.5)


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_a_schedule_fires_twice_is_paused_triggered_and_deleted(temporal, task_queue, tmp_path):
    path = tmp_path / "nightly.yaml"
    path.write_text(textwrap.dedent(PLAYBOOK))
    name = _name("every")
    conn = ["--address", temporal.address]
    async with build_worker(temporal.client, task_queue=task_queue):
        code, out, err = await cli("schedule", "create", name, str(path), "--every", "1s", "--set", "who=ada",
                                   "--overlap", "allow_all", *conn, "--task-queue", task_queue)
        assert code == 0, err
        created = json.loads(out)
        assert created["every_s"] == [1.0] and created["overlap"] == "allow_all" and not created["paused"]
        assert created["payload"] == {"who": "ada"} and created["playbook_version"] == "2.1"

        async def two_completed():
            runs = await runs_of(temporal.client, name)
            done = [wf for wf in runs if wf.status is not None and wf.status.name == "COMPLETED"]
            return done if len(done) >= 2 else None

        done = await until(two_completed, what="two completed scheduled runs")
        # each run is a normal execution: its own id, the same input, labels and output as a start
        run = temporal.client.get_workflow_handle(done[0].id)
        output = await run.result()
        assert output["execution_id"] == done[0].id and done[0].id.startswith(f"{name}-")
        assert output["steps"]["start"]["result"]["stdout"].strip() == "hello ada"
        desc = await run.describe()
        sas = {pair.key.name: pair.value for pair in desc.typed_search_attributes}
        assert sas["NoetlPlaybookPath"] == "reports/nightly" and sas["NoetlPlaybookVersion"] == "2.1"
        assert sas["NoetlState"] == "COMPLETED" and len(sas["NoetlPlaybookHash"]) == 64
        assert await desc.static_summary() == "NoETL playbook nightly (reports/nightly)"
        assert "version `2.1`" in (await desc.static_details() or "")
        assert (await desc.memo())["noetl.playbook_sha256"] == sas["NoetlPlaybookHash"]

        code, out, err = await cli("schedule", "pause", name, "--note", "maintenance", *conn)
        assert code == 0 and "paused" in out, err
        code, out, err = await cli("schedule", "describe", name, *conn)
        described = json.loads(out)
        assert described["paused"] and described["note"] == "maintenance" and described["actions"] >= 2
        before = described["actions"]
        code, out, err = await cli("schedule", "trigger", name, *conn)
        assert code == 0, err

        async def one_more():
            code, out, _ = await cli("schedule", "describe", name, *conn)
            return json.loads(out)["actions"] == before + 1   # paused: only the trigger started one

        await until(one_more, what="the triggered run")
        code, out, err = await cli("schedule", "unpause", name, *conn)
        assert code == 0 and "active" in out, err

        async def listed():
            code, out, _ = await cli("schedule", "list", "--json", *conn)
            return [item for item in json.loads(out) if item["name"] == name]

        [item] = await until(listed, what="the schedule in the list")
        assert item["playbook_path"] == "reports/nightly" and item["every_s"] == [1.0]
        code, out, err = await cli("schedule", "delete", name, *conn)
        assert code == 0, err
        code, out, err = await cli("schedule", "describe", name, *conn)
        assert code == 1 and f"no schedule '{name}'" in err and "Traceback" not in err


async def test_backfill_starts_the_runs_of_a_past_window(temporal, task_queue, tmp_path):
    path = tmp_path / "nightly.yaml"
    path.write_text(textwrap.dedent(PLAYBOOK))
    name = _name("backfill")
    conn = ["--address", temporal.address]
    async with build_worker(temporal.client, task_queue=task_queue):
        code, out, err = await cli("schedule", "create", name, str(path), "--every", "10m", "--paused",
                                   *conn, "--task-queue", task_queue)
        assert code == 0, err
        # a window holding exactly three of its times (every 10 minutes, on the epoch's grid)
        now = datetime.now(UTC).replace(second=0, microsecond=0)
        grid = now - timedelta(minutes=now.minute % 10) - timedelta(hours=3)
        start, end = grid + timedelta(minutes=5), grid + timedelta(minutes=35)
        code, out, err = await cli("schedule", "backfill", name, "--start", start.isoformat(),
                                   "--end", end.isoformat(), *conn)
        assert code == 0, err
        expected = {f"{name}-{(grid + timedelta(minutes=m)).isoformat().replace('+00:00', 'Z')}" for m in (10, 20, 30)}

        async def three():
            runs = await runs_of(temporal.client, name)
            return runs if len(runs) >= 3 else None

        runs = await until(three, what="three backfilled runs")
        await asyncio.sleep(2)   # and no more
        assert {wf.id for wf in await runs_of(temporal.client, name)} == expected
        for wf in runs:
            assert (await temporal.client.get_workflow_handle(wf.id).result())["state"] == "COMPLETED"
        code, out, err = await cli("schedule", "delete", name, *conn)
        assert code == 0, err


async def test_mistakes_are_said_with_the_fix(temporal, task_queue, tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(textwrap.dedent(PLAYBOOK))
    bad = tmp_path / "bad.yaml"
    bad.write_text("workflow:\n  - step: start\n    tool: {kind: noop}\n    next: [{step: nowhere}]\n")
    conn = ["--address", temporal.address, "--task-queue", task_queue]
    name = _name("errors")

    code, out, err = await cli("schedule", "create", name, str(good), "--cron", "not a cron", *conn)
    assert code == 2 and "CronString" in err and "fix: check the cron expression" in err, err
    code, out, err = await cli("schedule", "create", name, str(good), "--every", "soon", *conn)
    assert code == 2 and "--every 'soon' is not a duration" in err, err
    code, out, err = await cli("schedule", "create", name, str(bad), "--every", "1h", *conn)
    assert code == 2 and f"{bad}:4:" in err and "nowhere" in err, err
    for sub in ("describe", "trigger"):   # (every route's 404: tests/api/test_api_schedules.py)
        code, out, err = await cli("schedule", sub, name, "--address", temporal.address)
        assert code == 1 and f"no schedule '{name}'" in err and "Traceback" not in err, (sub, err)
    # nothing was created by the refused ones
    code, out, err = await cli("schedule", "create", name, str(good), "--every", "1h", "--paused", *conn)
    assert code == 0, err
    code, out, err = await cli("schedule", "create", name, str(good), "--every", "1h", *conn)
    assert code == 1 and "exists already" in err, err
    code, out, err = await cli("schedule", "backfill", name, "--start", "2026-01-02T00:00:00Z",
                               "--end", "2026-01-01T00:00:00Z", "--address", temporal.address)
    assert code == 2 and "is not after its start" in err, err
    code, out, err = await cli("schedule", "delete", name, "--address", temporal.address)
    assert code == 0, err
