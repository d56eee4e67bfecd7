"""Long executions continue as new: state, in-flight work and events carry over."""

from __future__ import annotations

import asyncio
import textwrap

import pytest
from temporalio.client import WorkflowExecutionStatus

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.observe import read_events, read_status
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.hosting.worker import build_worker
from noetl_temporal.store.event_store import open_event_store

pytestmark = pytest.mark.temporal

LONG = """
workload: {items: "{{ range(24) | list }}"}
executor: {spec: {final_step: wrap}}
workflow:
  - step: init
    tool: {kind: noop}
    set: {ctx.round: 0}
    next: {arcs: [{step: each}]}
  - step: each
    loop:
      in: "{{ range(24) | list }}"
      iterator: i
      spec: {mode: parallel, max_in_flight: 3}
    tool:
      - {name: square, kind: shell, cmd: "echo $(( {{ i }} * {{ i }} ))"}
      - {name: keep, kind: noop, result: "{{ square.stdout | trim | int }}"}
    next: {arcs: [{step: again}]}
  - step: again
    tool: {kind: shell, cmd: "echo round"}
    set: {ctx.round: "{{ ctx.round + 1 }}"}
    next: {arcs: [{step: again, when: "{{ ctx.round < 6 }}"}, {step: slow_gate}]}
  - step: slow_gate
    spec:
      lifecycle: {timeout_s: 30}
      policy: {admit: {on_deny: wait, rules: [{when: "{{ ctx.go }}", then: {allow: true}}]}}
    tool: {kind: shell, cmd: "echo opened"}
  - step: wrap
    tool: {kind: noop, result: "{{ each.results | sum }}"}
"""


async def test_execution_continues_as_new_and_keeps_state_events_and_signals(temporal, task_queue):
    playbook = load_playbook_text(textwrap.dedent(LONG)).playbook
    store = open_event_store()
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120,
                                       continue_as_new_after_events=40)
        latest = temporal.client.get_workflow_handle(handle.id)
        for _ in range(300):   # the gate waits for a ctx patch, across runs
            denied = await read_events(temporal.client, handle.id, store=store, types=["policy.admit.evaluated"],
                                       entity="slow_gate")
            if denied:
                break
            await asyncio.sleep(0.1)
        assert denied and denied[0]["payload"]["allowed"] is False
        assert (await read_status(temporal.client, handle.id, store))["state"] == "RUNNING"
        await latest.execute_update("patch_ctx", {"go": True})
        output = await asyncio.wait_for(latest.result(), timeout=60)
    assert output["state"] == "COMPLETED"
    assert output["steps"]["wrap"]["result"] == sum(i * i for i in range(24))
    assert output["steps"]["again"]["runs"] == 6 and output["ctx"]["round"] == 6
    # the first run really continued as new (more than once)
    first = temporal.client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id)
    assert (await first.describe()).status == WorkflowExecutionStatus.CONTINUED_AS_NEW
    runs = [w async for w in temporal.client.list_workflows(f"WorkflowId = '{handle.id}'")]
    assert len(runs) >= 3
    # one gap-free event log across all runs, terminal exactly once
    events = await read_events(temporal.client, handle.id, store=store, limit=10_000)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert [e["event_type"] for e in events].count("playbook.finished") == 1
    assert sum(1 for e in events if e["event_type"] == "loop.iteration.done") == 24
    final = await read_status(temporal.client, handle.id, store)
    assert final["state"] == "COMPLETED" and final["terminal_event"] == "playbook.finished"


async def test_in_flight_tasks_are_capped_per_execution(temporal, task_queue, tmp_path):
    """Many parallel branches never exceed the execution's pending-task cap (Temporal allows
    2,000); the rest wait their turn and all complete."""
    import dataclasses

    from noetl_temporal.workflow.types import RunInput

    counter = tmp_path / "inflight"
    counter.write_text("0 0")
    code = textwrap.indent(textwrap.dedent(f"""\
        import fcntl, time
        def bump(d):
            with open({str(counter)!r}, "r+") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)
                now, peak = map(int, fh.read().split())
                now += d
                fh.seek(0); fh.truncate(); fh.write(f"{{now}} {{max(peak, now)}}")
        bump(1); time.sleep(0.3); bump(-1)
        result = 1
        """), " " * 8)
    arcs = ", ".join(f"{{step: b{i}}}" for i in range(6))
    text = "workflow:\n  - step: start\n    tool: {kind: noop}\n" \
           f"    next: {{spec: {{mode: inclusive}}, arcs: [{arcs}]}}\n"
    for i in range(6):
        text += f"  - step: b{i}\n    tool:\n      kind: python\n      code: |\n{code}"
    playbook = load_playbook_text(text).playbook
    inp = RunInput(execution_id=f"exec-cap-{task_queue}", playbook=playbook.model_dump(mode="json", by_alias=True),
                   max_pending=2)
    async with build_worker(temporal.client, task_queue=task_queue):
        output = await temporal.client.execute_workflow("NoetlPlaybook", inp, id=inp.execution_id,
                                                        task_queue=task_queue)
    assert output["state"] == "COMPLETED"
    assert all(output["steps"][f"b{i}"]["status"] == "COMPLETED" for i in range(6))
    now, peak = map(int, counter.read_text().split())
    assert (now, peak) == (0, 2)
    assert dataclasses.fields(RunInput)  # RunInput stays a plain dataclass


async def test_inline_work_continues_as_new_after_a_bounded_amount_of_it(temporal, task_queue):
    """``bounded-run-work``: a noop loop makes few history events (Temporal never suggests
    continuing), yet each run ends after ``RUN_YIELDS_MAX`` yields, so a query to the closed
    workflow replays one short run; the log stays one gap-free sequence across the runs."""
    from noetl_temporal.workflow.run_length import RUN_YIELDS_MAX

    items = 2_600   # about 130 items a yield (engine/budget.py): over RUN_YIELDS_MAX yields
    playbook = load_playbook_text(textwrap.dedent(f"""
        workflow:
          - step: each
            loop: {{in: "{{{{ range({items}) | list }}}}", iterator: i}}
            tool: {{kind: noop, result: "{{{{ i }}}}"}}
            next: {{arcs: [{{step: total}}]}}
          - step: total
            tool: {{kind: noop, result: "{{{{ each.results | sum }}}}"}}
        """)).playbook
    store = open_event_store()
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120)
        latest = temporal.client.get_workflow_handle(handle.id)
        output = await asyncio.wait_for(latest.result(), timeout=110)
        assert (await latest.query("status"))["state"] == "COMPLETED"   # a rebuild of the last run
    assert output["state"] == "COMPLETED" and output["steps"]["total"]["result"] == sum(range(items))
    first = temporal.client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id)
    assert (await first.describe()).status == WorkflowExecutionStatus.CONTINUED_AS_NEW
    history = await first.fetch_history()
    assert len(history.events) < 100 < RUN_YIELDS_MAX * 10   # not what Temporal would suggest
    events = await read_events(temporal.client, handle.id, store=store, limit=100_000)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert sum(1 for e in events if e["event_type"] == "loop.iteration.done") == items
