"""NoETL's open runtime bugs, reproduced on the dev server and shown not to happen here
(docs/durability.md lists them; the ones a worker kill triggers are in tests/chaos/test_noetl_bugs.py).

* noetl/noetl #246: the same loop command ran twice with ``max_in_flight > 1``.
* #291, #305, #451: status COMPLETED too early, or flipping back to RUNNING, while loop work
  continued.
* #616: cancel did not reach child executions.

Outcomes are read through the project's surfaces (``observe.read_status``, the CLI, the
Temporal client's description), not from the workflow's return value.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest
from temporalio.client import WorkflowExecutionStatus

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.observe import read_status
from noetl_temporal.dsl import load_playbook, load_playbook_text
from noetl_temporal.hosting.worker import build_worker
from noetl_temporal.store.event_store import open_event_store
from noetl_temporal.workflow.naming import child_execution_id
from tests.chaos.workers import WorkerProcess
from tests.support import postgres as pg

pytestmark = pytest.mark.temporal

REPO = Path(__file__).resolve().parents[2]
OPEN = ("PENDING", "RUNNING", "PAUSED")
RANK = {"PENDING": 0, "RUNNING": 1, "COMPLETED": 2}


async def wait_closed(client, execution_id: str, timeout: float = 90) -> dict:
    store = open_event_store()
    for _ in range(int(timeout / 0.2)):
        status = await read_status(client, execution_id, store)
        if status["state"] not in OPEN:
            return status
        await asyncio.sleep(0.2)
    raise AssertionError(f"{execution_id} still {status['state']} after {timeout} s")


# ------------------------------------------------------------------ #246

async def test_noetl_246_no_loop_item_runs_twice_with_max_in_flight_above_one(
        temporal, task_queue, http_server, monkeypatch):
    """60 items, 10 in flight, two worker processes polling one queue: each item's side effects
    (a PostgreSQL row, an HTTP hit) happen exactly once."""
    dsn = pg.require_dsn()
    monkeypatch.setenv("NOETL_KEYCHAIN_PG", json.dumps(pg.fields(dsn)))
    table, key, items = pg.unique_name("once"), pg.unique_name("hit"), 60
    pg.execute(dsn, f"CREATE TABLE {table} (item int NOT NULL, at timestamptz DEFAULT now())")
    playbook = load_playbook_text(textwrap.dedent(f"""
    workflow:
      - step: each
        loop: {{in: "{{{{ range({items}) | list }}}}", iterator: i, spec: {{mode: parallel, max_in_flight: 10}}}}
        tool:
          - {{name: row, kind: postgres, auth: pg, command: "INSERT INTO {table} (item) VALUES ({{{{ i }}}})"}}
          - {{name: hit, kind: http, url: "{http_server.url('/json')}?key={key}-{{{{ i }}}}"}}
    """)).playbook
    try:
        with WorkerProcess(temporal.address, task_queue), WorkerProcess(temporal.address, task_queue):
            handle = await start_execution(temporal.client, playbook, task_queue=task_queue,
                                           execution_timeout_s=90)
            status = await wait_closed(temporal.client, handle.id)
        assert status["state"] == "COMPLETED", status
        identities = set()
        async for event in handle.fetch_history_events():
            if event.HasField("activity_task_started_event_attributes"):
                identities.add(event.activity_task_started_event_attributes.identity)
        assert len(identities) == 2, identities   # both workers took items
        per_item = dict(pg.execute(dsn, f"SELECT item, count(*) FROM {table} GROUP BY item"))
        assert per_item == {i: 1 for i in range(items)}
        hits = {i: httpx.get(http_server.url("/count"), params={"key": f"{key}-{i}"}).json()["hits"]
                for i in range(items)}
        assert hits == {i: 1 for i in range(items)}
    finally:
        pg.execute(dsn, f"DROP TABLE IF EXISTS {table}")


# ------------------------------------------------------------------ #291, #305, #451

async def test_noetl_291_305_451_status_is_monotonic_and_completed_only_when_loop_work_ends(
        temporal, task_queue, tmp_path):
    """An inclusive fan-out: a quick branch ends (the last *visible* step finishing) while a
    parallel loop still runs, its items finishing out of order. Polled all along, the status
    only moves forward, and is COMPLETED only once every item's side effect is done."""
    log = tmp_path / "log"
    items = 9
    playbook = load_playbook_text(textwrap.dedent(f"""
    workflow:
      - step: start
        tool: {{kind: noop}}
        next: {{spec: {{mode: inclusive}}, arcs: [{{step: side}}, {{step: each}}]}}
      - step: side
        tool: {{kind: shell, cmd: "echo side >> {log}"}}
      - step: each
        loop: {{in: "{{{{ range({items}) | list }}}}", iterator: i, spec: {{mode: parallel, max_in_flight: 3}}}}
        tool:
          kind: shell
          cmd: "sleep {{{{ 1.5 if i % 3 == 0 else 0.3 }}}}; echo item {{{{ i }}}} >> {log}"
    """)).playbook
    store = open_event_store()
    seen: list[tuple[str, int, bool]] = []    # (state, items done, side done), read after the state
    async with build_worker(temporal.client, task_queue=task_queue, event_store=store):
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=60)
        closed_polls = 0
        while closed_polls < 10:               # keep polling after the end: it must not flip back
            state = (await read_status(temporal.client, handle.id, store))["state"]
            text = log.read_text() if log.exists() else ""
            seen.append((state, text.count("item"), "side" in text))
            closed_polls += state not in OPEN
            await asyncio.sleep(0.1)
    states = [s for s, _, _ in seen]
    assert set(states) <= set(RANK), states
    assert [RANK[s] for s in states] == sorted(RANK[s] for s in states), f"status went backwards: {states}"
    assert states[-1] == "COMPLETED"
    # `side` had ended while items were left, and the execution was RUNNING then ...
    assert any(s == "RUNNING" and side and n < items for s, n, side in seen), seen
    # ... and never COMPLETED before every item had written its line (each line is written
    # before its task ends, and the log is read after the status).
    assert all(n == items for s, n, _ in seen if s == "COMPLETED"), seen


# ------------------------------------------------------------------ #616

GRANDCHILD = """
metadata: {name: grandchild}
workload: {n: 0}
workflow:
  - step: sleep
    tool:
      kind: python
      input: {n: "{{ workload.n }}"}
      code: |
        import time
        with open(LOG, "a") as fh:
            fh.write(f"start {n}\\n")
        time.sleep(60)
        with open(LOG, "a") as fh:
            fh.write(f"done {n}\\n")
        result = n
"""

CHILD = """
metadata: {name: child}
workload: {n: 0}
workflow:
  - step: deeper
    tool: {name: gc, kind: playbook, path: grandchild.yaml, input: {n: "{{ workload.n }}"}}
"""

PARENT = """
metadata: {name: parent}
workflow:
  - step: fan
    loop: {in: "{{ [0, 1] }}", iterator: n, spec: {mode: parallel}}
    tool: {name: sub, kind: playbook, path: child.yaml, input: {n: "{{ n }}"}}
"""


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "noetl_temporal.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)


async def test_noetl_616_cancel_reaches_children_and_grandchildren(temporal, task_queue, tmp_path):
    log = tmp_path / "log"
    (tmp_path / "grandchild.yaml").write_text(GRANDCHILD.replace("LOG", repr(str(log))))
    (tmp_path / "child.yaml").write_text(CHILD)
    (tmp_path / "parent.yaml").write_text(PARENT)
    playbook = load_playbook(tmp_path / "parent.yaml").playbook
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue,
                                       source=str(tmp_path / "parent.yaml"), execution_timeout_s=90)
        children = [child_execution_id(handle.id, f"fan:run:1:iter:{n}:task:sub:1", "child") for n in (0, 1)]
        grandchildren = [child_execution_id(c, "deeper:run:1:task:gc:1", "grandchild") for c in children]
        for _ in range(600):                    # both grandchildren's tasks are running
            if log.exists() and log.read_text().count("start") == 2:
                break
            await asyncio.sleep(0.1)
        assert log.read_text().count("start") == 2
        proc = await asyncio.to_thread(cli, "cancel", handle.id, "--address", temporal.address,
                                       "--reason", "stop the family", "--cascade")
        assert proc.returncode == 0, proc.stderr
        family = [handle.id, *children, *grandchildren]
        closed = {}
        for _ in range(300):
            closed = {i: (await temporal.client.get_workflow_handle(i).describe()).status for i in family}
            if all(s != WorkflowExecutionStatus.RUNNING for s in closed.values()):
                break
            await asyncio.sleep(0.1)
        assert closed == {i: WorkflowExecutionStatus.CANCELED for i in family}
        store = open_event_store()
        states = {i: (await read_status(temporal.client, i, store))["state"] for i in family}
        assert states == {i: "CANCELLED" for i in family}
