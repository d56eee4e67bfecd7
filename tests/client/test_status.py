"""Seed 000's testing checklist on the real dev server: who decides execution status."""

from __future__ import annotations

import asyncio
import textwrap
import uuid

import pytest

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.observe import STATUS_FIELDS, read_events, read_status
from noetl_temporal.conversion.playbook_result import workflow_output
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.hosting.worker import build_worker
from noetl_temporal.store.event_store import open_event_store

pytestmark = pytest.mark.temporal

SLOW_LOOP = """
workload: {items: [0, 1, 2, 3, 4, 5]}
workflow:
  - step: each
    loop: {in: "{{ workload.items }}", iterator: i, spec: {mode: parallel, max_in_flight: 2}}
    tool:
      kind: python
      input: {i: "{{ i }}"}
      code: |
        import time
        time.sleep(0.3 if i < 5 else 2.5)
        result = i
    next: {arcs: [{step: last}]}
  - step: last
    tool: {kind: python, code: "result = 'done'"}
"""


async def start(temporal, task_queue, text, **kw):
    playbook = load_playbook_text(textwrap.dedent(text)).playbook
    return await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=60, **kw)


async def test_running_while_loop_iterations_complete_then_completed_only_after_lifecycle_event(
        temporal, task_queue):
    store = open_event_store()
    async with build_worker(temporal.client, task_queue=task_queue, event_store=store):
        handle = await start(temporal, task_queue, SLOW_LOOP)
        seen_iteration_done = False
        while True:
            # events first, status second: an execution that finished in between shows a
            # terminal status with events that may not include the end yet, never the reverse
            events = await read_events(temporal.client, handle.id, store=store, limit=1000)
            status = await read_status(temporal.client, handle.id, store)
            assert tuple(status) == STATUS_FIELDS        # exactly the minimal model, no variables
            types = [e["event_type"] for e in events]
            if "playbook.finished" in types:
                assert status["state"] == "COMPLETED"
            if status["state"] != "RUNNING":
                break
            if "loop.iteration.done" in types:
                seen_iteration_done = True              # per-iteration events never close it
            await asyncio.sleep(0.1)
        assert seen_iteration_done
        assert status["state"] == "COMPLETED"
        assert status["terminal_event"] == "playbook.finished"
        assert status["completion_inferred"] is False
        events = await read_events(temporal.client, handle.id, store=store, limit=1000)
        assert [e["event_type"] for e in events].count("playbook.finished") == 1   # terminal exactly once
    # no worker any more: the status comes from Temporal's close status + the stored lifecycle event
    again = await read_status(temporal.client, handle.id, store)
    assert again["state"] == "COMPLETED" and again["terminal_event"] == "playbook.finished"
    stored = await read_events(temporal.client, handle.id, store=store, limit=1000)
    assert stored == events


async def test_last_visible_step_finishing_does_not_complete_while_a_branch_runs(temporal, task_queue):
    store = open_event_store()
    async with build_worker(temporal.client, task_queue=task_queue, event_store=store):
        handle = await start(temporal, task_queue, """
        workflow:
          - step: start
            tool: {kind: noop}
            next: {spec: {mode: inclusive}, arcs: [{step: quick_end}, {step: slow}]}
          - step: quick_end
            tool: {kind: python, code: "result = 1"}
          - step: slow
            tool: {kind: python, code: "import time; time.sleep(3); result = 2"}
        """)
        for _ in range(100):
            events = await read_events(temporal.client, handle.id, store=store, types=["task.done"], entity=None)
            if any(e["entity_id"] == "quick_end_task" for e in events):
                break
            await asyncio.sleep(0.05)
        status = await read_status(temporal.client, handle.id, store)
        assert status["state"] == "RUNNING"       # command/task completion is not execution completion
        await handle.result()
        assert (await read_status(temporal.client, handle.id, store))["state"] == "COMPLETED"


async def test_failed_only_after_lifecycle_event_and_cancelled_only_after_execution_cancelled(
        temporal, task_queue):
    store = open_event_store()
    async with build_worker(temporal.client, task_queue=task_queue, event_store=store):
        failing = await start(temporal, task_queue, """
        workflow:
          - step: boom
            tool: {kind: python, code: "raise ValueError('x')"}
        """)
        await workflow_output(failing)   # closed Failed, its output in the failure
        status = await read_status(temporal.client, failing.id, store)
        assert (status["state"], status["terminal_event"]) == ("FAILED", "playbook.finished")

        sleeper = await start(temporal, task_queue, """
        workflow:
          - step: nap
            tool: {kind: shell, cmd: "sleep 30"}
        """)
        for _ in range(100):
            if (await read_status(temporal.client, sleeper.id, store))["current_step"] == "nap":
                break
            await asyncio.sleep(0.05)
        await sleeper.signal("cancel", "test says stop")
        await sleeper.cancel()
        for _ in range(100):
            status = await read_status(temporal.client, sleeper.id, store)
            if status["state"] != "RUNNING":
                break
            await asyncio.sleep(0.1)
        assert (status["state"], status["terminal_event"]) == ("CANCELLED", "execution.cancelled")
        cancelled = await read_events(temporal.client, sleeper.id, store=store, types=["execution.cancelled"])
        assert cancelled and cancelled[0]["payload"]["reason"] == "test says stop"


def test_lower_layer_events_in_the_store_never_close_an_execution(tmp_path):
    """Without live state only lifecycle signals count: step.exit on 'end', command.completed,
    batch.completed and mixed-case step statuses leave a started execution RUNNING."""
    store = open_event_store(str(tmp_path / "events.db"))
    ex = f"exec-{uuid.uuid4().hex[:8]}"

    def ev(seq, event_type, entity, status):
        return {"execution_id": ex, "event_id": f"{ex}:{seq}", "seq": seq, "event_type": event_type,
                "entity_type": "step", "entity_id": entity, "status": status,
                "timestamp": f"2026-01-01T00:00:0{seq}Z", "payload": {}}

    store.write([ev(1, "playbook.started", ex, "in_progress"), ev(2, "step.done", "end", "COMPLETED"),
                 ev(3, "step.exit", "end", "completed"), ev(4, "command.completed", "end", "success"),
                 ev(5, "batch.completed", "end", "success"), ev(6, "task.done", "end", "Completed")])
    status = asyncio.run(read_status(None, ex, store))
    assert status["state"] == "RUNNING" and status["terminal_event"] is None
    store.write([ev(7, "playbook.finished", ex, "success")])
    store.write([ev(7, "playbook.finished", ex, "success")])      # idempotent by event_id
    assert len(store.read(ex, limit=100)) == 7
    status = asyncio.run(read_status(None, ex, store))
    assert status["state"] == "COMPLETED" and status["terminal_event"] == "playbook.finished"


def test_legacy_names_filter_to_canonical_events(tmp_path):
    store = open_event_store(str(tmp_path / "events.db"))
    ex = "exec-legacy"
    rows = [("step.done", "success"), ("step.failed", "error"), ("playbook.finished", "error"),
            ("task.attempt.failed", "error")]
    store.write([{"execution_id": ex, "event_id": f"{ex}:{i}", "seq": i, "event_type": t, "entity_id": "s",
                  "status": s, "timestamp": "t", "payload": {}} for i, (t, s) in enumerate(rows, 1)])
    assert [e["event_type"] for e in store.read(ex, types=["step.exit"])] == ["step.done", "step.failed"]
    assert [e["event_type"] for e in store.read(ex, types=["playbook.failed"])] == ["playbook.finished"]
    assert store.read(ex, types=["playbook.completed"]) == []
    assert [e["event_type"] for e in store.read(ex, types=["retry.processed"])] == ["task.attempt.failed"]
    with pytest.raises(ValueError, match="unknown event type"):
        store.read(ex, types=["nonsense.thing"])


async def test_noetl_state_search_attribute_follows_the_execution(temporal, task_queue):
    """Where the cluster has our search attributes, the Temporal UI can filter by NoetlState."""
    from noetl_temporal.workflow.search_attributes import NOETL_STATE

    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start(temporal, task_queue, """
        workflow:
          - step: boom
            tool: {kind: python, code: "raise ValueError('x')"}
        """, search_attributes=True)
        await workflow_output(handle)
    desc = await handle.describe()
    assert desc.typed_search_attributes.get(NOETL_STATE) == "FAILED"


async def test_an_execution_started_without_persisting_events_stores_none_and_still_reports(
        temporal, task_queue):
    """``start_execution(persist_events=False)`` (the benchmarks' ``--no-event-store``
    diagnostic): the run completes, the store has none of its events, and the workflow
    itself still answers for them (a query, here after the close)."""
    store = open_event_store()
    async with build_worker(temporal.client, task_queue=task_queue, event_store=store):
        quiet = await start(temporal, task_queue, SLOW_LOOP.replace("2.5", "0.3"), persist_events=False)
        stored = await start(temporal, task_queue, SLOW_LOOP.replace("2.5", "0.3"))
        for handle in (quiet, stored):
            assert (await workflow_output(handle))["state"] == "COMPLETED"
        live = [e["event_type"] for e in await read_events(temporal.client, quiet.id, limit=1000, live=True)]
        assert live[0] == "playbook.execution.requested" and "playbook.finished" in live, live
        assert store.read(quiet.id, limit=10) == []
        assert [e["event_type"] for e in store.read(stored.id, limit=1000)] == [
            e["event_type"] for e in await read_events(temporal.client, stored.id, limit=1000)]
