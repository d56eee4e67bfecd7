"""Large playbooks on the dev server: long inline chains and big loops never hold the
workflow thread long enough for Temporal's deadlock detector (2 s per activation)."""

from __future__ import annotations

import pytest

from benchmarks.engine_scale import fanout
from benchmarks.task_durations import run_histories
from noetl_temporal.client.end_to_end import run_with_client
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.workflow.pacing import YIELD_ACTIVITY

pytestmark = pytest.mark.temporal


def chain_playbook(n: int) -> str:
    """``s0 -> s1 -> ... -> s<n-1>``, every step a noop (the shape issue 15 reported)."""
    lines = ["apiVersion: noetl.io/v2", "kind: Playbook", f"metadata: {{name: chain_{n}}}", "workflow:"]
    for i in range(n):
        nxt = f"\n    next: {{arcs: [{{step: s{i + 1}}}]}}" if i < n - 1 else ""
        lines.append(f"  - step: s{i}\n    tool: {{kind: noop, result: {i}}}{nxt}")
    return "\n".join(lines) + "\n"


async def _history_facts(client, workflow_id: str) -> dict[str, int]:
    """Counted over every run of the execution (``bounded-run-work`` continues inline work as new)."""
    facts = {"events": 0, "yields": 0, "task_failures": 0, "breaks": 0, "runs": 0}
    async for history in run_histories(client, workflow_id):
        facts["runs"] += 1
        for event in history.events:
            facts["events"] += 1
            if event.HasField("marker_recorded_event_attributes"):
                details = event.marker_recorded_event_attributes.details
                if "data" in details and YIELD_ACTIVITY.encode() in details["data"].payloads[0].data:
                    facts["yields"] += 1
            if event.HasField("workflow_task_failed_event_attributes"):
                facts["task_failures"] += 1
            if event.HasField("activity_task_scheduled_event_attributes"):
                facts["breaks"] += 1
    return facts


async def test_a_5000_step_noop_chain_completes_in_short_activations(temporal, task_queue):
    playbook = load_playbook_text(chain_playbook(5000), source="<chain>").playbook
    report = await run_with_client(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120)
    assert report.state == "COMPLETED", report.error
    assert len(report.steps) == 5000
    assert report.steps["s4999"]["result"] == 4999
    facts = await _history_facts(temporal.client, report.workflow_id)
    # No workflow task failed (a deadlock-detector hit fails the task and retries it).
    assert facts["task_failures"] == 0, facts
    # The work was split into several activations by the engine's budget, and every fourth
    # yield a normal activity ended the workflow task (``paced-workflow-tasks``: not one task of 5-8 s).
    assert facts["yields"] >= 5, facts
    assert facts["breaks"] >= facts["yields"] // 3 - 1 >= 1, facts
    # and every 16 yields a fresh run took over (``bounded-run-work``: a rebuild replays one run)
    # (a yield is a local activity's marker, or a break's normal activity)
    assert facts["runs"] >= (facts["yields"] + facts["breaks"]) // 16 >= 2, facts


async def test_a_4000_way_fan_out_and_join_completes_in_short_activations(temporal, task_queue):
    """Which steps a join waits for was worked out pair by pair (seconds for thousands of
    upstreams, in the first activation: the deadlock detector failed it, again and again,
    and the run never started); tokens were found by comparing every field."""
    playbook = load_playbook_text(fanout(4002, "noop"), source="<fan-out>").playbook  # 4,000 branches
    report = await run_with_client(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120)
    assert report.state == "COMPLETED", report.error
    assert report.steps["join"]["result"] == 4000  # one run, every branch's token joined
    facts = await _history_facts(temporal.client, report.workflow_id)
    assert facts["task_failures"] == 0, facts


BIG_LOOP_THEN_GATE = """
workflow:
  - step: each
    loop: {in: "{{ range(6000) | list }}", iterator: i, spec: {mode: parallel, max_in_flight: 50}}
    tool: {kind: noop, result: "{{ i * 2 }}"}
    next: {arcs: [{step: gate}]}
  - step: gate
    spec:
      policy: {admit: {on_deny: wait, rules: [{when: "{{ ctx.go }}", then: {allow: true}}]}}
    tool: {kind: noop, result: "{{ each.results | sum }}"}
"""


async def test_a_big_loop_keeps_workflow_memory_bounded_and_events_gap_free(temporal, task_queue):
    """30,000 events: the workflow forgets the persisted ones (it keeps a bounded tail),
    readers still get one gap-free log from the store plus the live tail."""
    import asyncio

    from noetl_temporal.client.connect import start_execution
    from noetl_temporal.client.observe import read_events
    from noetl_temporal.hosting.worker import build_worker
    from noetl_temporal.store.event_store import open_event_store
    from noetl_temporal.workflow.event_flush import EVENTS_KEPT_IN_MEMORY

    playbook = load_playbook_text(BIG_LOOP_THEN_GATE, source="<loop>").playbook
    store = open_event_store()
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120)
        for _ in range(600):   # wait for the gate to be denied: the loop is done
            if await read_events(temporal.client, handle.id, store=store, types=["policy.admit.evaluated"]):
                break
            await asyncio.sleep(0.1)
        detail = await handle.query("detail")
        in_memory = await handle.query("events", args=[0, 100_000])
        assert detail["event_count"] > 30_000
        assert len(in_memory) <= EVENTS_KEPT_IN_MEMORY + 2 * 500 + 100, len(in_memory)
        assert in_memory[0]["seq"] > 1    # the head is only in the store now
        live = await read_events(temporal.client, handle.id, store=store, limit=100_000)
        assert [e["seq"] for e in live] == list(range(1, len(live) + 1))
        await handle.execute_update("patch_ctx", {"go": True})
        output = await asyncio.wait_for(handle.result(), timeout=60)
    assert output["state"] == "COMPLETED"
    assert output["steps"]["gate"]["result"] == sum(i * 2 for i in range(6000))
    events = await read_events(temporal.client, handle.id, store=store, limit=100_000)
    assert [e["seq"] for e in events] == list(range(1, output["event_count"] + 1))
    assert len({e["event_id"] for e in events}) == len(events)
