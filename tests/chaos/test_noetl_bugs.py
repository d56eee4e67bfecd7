"""NoETL's open runtime bugs that a dead worker triggers, reproduced here (docs/durability.md).

* noetl/noetl #257: a worker OOM-killed mid-command left the command RUNNING forever. The
  kernel's OOM killer sends SIGKILL, so the worker process group is SIGKILLed here.
* noetl/noetl #322: a parallel loop stalled on stale in-flight slots after a worker died.

Outcomes are read through the project's surfaces (``observe.read_status``, the event log,
Temporal's description), not from the workflow's return value.
"""

from __future__ import annotations

import asyncio
import textwrap

import pytest
from temporalio.client import WorkflowExecutionStatus

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.observe import read_events, read_status
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.store.event_store import open_event_store

from .workers import WorkerProcess

pytestmark = [pytest.mark.temporal, pytest.mark.chaos]


async def start(temporal, task_queue: str, text: str, *, timeout_s: float):
    """Start ``text`` with a short heartbeat timeout, so a killed worker's task is noticed fast."""
    playbook = load_playbook_text(textwrap.dedent(text)).playbook
    return await start_execution(temporal.client, playbook, task_queue=task_queue, heartbeat_timeout_s=2,
                                 execution_timeout_s=timeout_s)


async def wait_for(predicate, timeout: float, what: str) -> None:
    for _ in range(int(timeout / 0.1)):
        if predicate():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


async def wait_closed(client, execution_id: str, timeout: float = 90) -> dict:
    """Poll the status surface until the execution ends; its final status."""
    store = open_event_store()
    for _ in range(int(timeout / 0.2)):
        status = await read_status(client, execution_id, store)
        if status["state"] not in ("PENDING", "RUNNING", "PAUSED"):
            return status
        await asyncio.sleep(0.2)
    raise AssertionError(f"{execution_id} still {status['state']} after {timeout} s")


def unfinished(events: list[dict], kind: str) -> list[str]:
    """Ids of ``kind`` runs (task/step) whose start has no end event: what NoETL left RUNNING."""
    key = f"{kind}_run_id"
    started = {e[key] for e in events if e["event_type"] == f"{kind}.started"}
    ended = {e[key] for e in events if e["event_type"] in (f"{kind}.done", f"{kind}.failed")}
    return sorted(started - ended)


def lines(path) -> list[str]:
    return path.read_text().split("\n")[:-1] if path.exists() else []


async def test_noetl_257_a_command_running_when_its_worker_is_killed_is_not_left_running(
        temporal, task_queue, tmp_path):
    log, marker = tmp_path / "log", tmp_path / "killed-once"
    text = f"""
    workflow:
      - step: work
        tool:
          kind: python
          code: |
            import os, time
            with open({str(log)!r}, "a") as fh:
                fh.write("start\\n")
            if not os.path.exists({str(marker)!r}):
                open({str(marker)!r}, "w").close()
                time.sleep(120)                  # the worker is SIGKILLed while this runs
            with open({str(log)!r}, "a") as fh:
                fh.write("done\\n")
            result = 42
        next: {{arcs: [{{step: after}}]}}
      - step: after
        tool: {{kind: noop, result: "{{{{ work + 1 }}}}"}}
    """
    with WorkerProcess(temporal.address, task_queue) as worker:
        handle = await start(temporal, task_queue, text, timeout_s=120)
        await wait_for(lambda: lines(log) == ["start"], 60, "the task to start")
        worker.kill()
        # No worker at all: Temporal still holds the command as a pending activity, not a row
        # that a dead process was meant to update.
        pending = (await handle.describe()).raw_description.pending_activities
        assert [p.activity_type.name for p in pending] == ["noetl.run_task"]
        worker.start()                            # another worker: the lost attempt runs again
        status = await wait_closed(temporal.client, handle.id)
    assert status["state"] == "COMPLETED" and status["terminal_event"] == "playbook.finished", status
    assert lines(log) == ["start", "start", "done"]
    assert not (await handle.describe()).raw_description.pending_activities
    events = await read_events(temporal.client, handle.id, store=open_event_store(), limit=1000)
    assert unfinished(events, "task") == [] and unfinished(events, "step") == []
    done = [e for e in events if e["event_type"] == "task.done"]
    assert [(e["entity_id"], e["attempt"]) for e in done][0] == ("work_task", 2)
    assert done[-1]["payload"]["outcome"]["result"] == 43


async def test_noetl_322_a_parallel_loop_finishes_after_its_worker_dies_with_slots_in_flight(
        temporal, task_queue, tmp_path):
    log = tmp_path / "log"
    items, slots = 16, 4
    text = f"""
    workflow:
      - step: each
        loop: {{in: "{{{{ range({items}) | list }}}}", iterator: i, spec: {{mode: parallel, max_in_flight: {slots}}}}}
        tool:
          kind: shell
          cmd: "echo start {{{{ i }}}} >> {log}; sleep 1; echo done {{{{ i }}}} >> {log}; echo {{{{ i }}}}"
        next: {{arcs: [{{step: total}}]}}
      - step: total
        tool: {{kind: noop, result: "{{{{ each.results | map(attribute='stdout') | map('int') | sum }}}}"}}
    """
    with WorkerProcess(temporal.address, task_queue) as worker:
        handle = await start(temporal, task_queue, text, timeout_s=150)
        # Kill with the slots full: at least one round done, items of the next one running.
        await wait_for(lambda: sum(x.startswith("start") for x in lines(log)) >= slots + 2, 90,
                       "the loop to fill its slots")
        worker.kill()
        in_flight_at_kill = ({x.split()[1] for x in lines(log) if x.startswith("start")}
                             - {x.split()[1] for x in lines(log) if x.startswith("done")})
        assert in_flight_at_kill, "the kill must hit running items"
        await asyncio.sleep(1)
        worker.start()
        status = await wait_closed(temporal.client, handle.id, timeout=140)
    assert status["state"] == "COMPLETED", status
    finished = [x.split()[1] for x in lines(log) if x.startswith("done")]
    assert set(finished) == {str(i) for i in range(items)}           # every item, the killed ones too
    events = await read_events(temporal.client, handle.id, store=open_event_store(), limit=5000)
    iterations = sorted(e["iteration"] for e in events if e["event_type"] == "loop.iteration.done")
    assert iterations == list(range(items))                          # each slot freed exactly once
    assert unfinished(events, "task") == []
    total = [e for e in events if e["event_type"] == "step.done" and e["entity_id"] == "total"]
    assert total[0]["payload"]["outcome"]["result"] == sum(range(items))
    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED
