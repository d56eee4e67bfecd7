"""``noetl-temporal redrive`` as a subprocess against the dev server: a 10-step execution that
failed at step 7 is redriven once the cause is fixed, and only steps 7-10 run again (the
counter files count every invocation); ``--from``; the refusals (docs/operations.md)."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.control import read_input
from noetl_temporal.conversion.playbook_result import workflow_output
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.engine import behaviours
from noetl_temporal.hosting.worker import build_worker
from noetl_temporal.store.event_store import open_event_store
from noetl_temporal.workflow.search_attributes import REDRIVEN_FROM
from tests.support.redrive import STEPS, counts, ten_steps

pytestmark = pytest.mark.temporal


async def cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "noetl_temporal.cli", *args, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=dict(os.environ))
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


async def failed_at_s7(temporal, task_queue, tmp_path) -> str:
    playbook = load_playbook_text(ten_steps()).playbook
    handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120,
                                   payload={"dir": str(tmp_path)})
    output = await workflow_output(handle)
    assert output["state"] == "FAILED", output
    assert counts(tmp_path)["s8"] == 0 and counts(tmp_path)["s7"] >= 1
    return handle.id


async def test_redrive_after_the_fix_reruns_only_steps_7_to_10_with_the_same_ctx(temporal, task_queue, tmp_path):
    store = open_event_store()
    async with build_worker(temporal.client, task_queue=task_queue, event_store=store):
        old = await failed_at_s7(temporal, task_queue, tmp_path)
        before = counts(tmp_path)
        token = (tmp_path / "s4").read_text().split()[0]   # what s3 put in ctx, as s4 saw it
        (tmp_path / "flag").write_text("fixed")
        code, out, err = await cli("redrive", old, "--wait", "--address", temporal.address)
        assert code == 0, (out, err)
        started = json.loads(out)
        assert started["state"] == "COMPLETED" and started["redriven_from"] == old
        assert started["reused_steps"] == sorted(STEPS[:6])
        after = counts(tmp_path)
        assert {s: after[s] - before[s] for s in STEPS} == {**{s: 0 for s in STEPS[:6]}, "s7": 1, "s8": 1,
                                                              "s9": 1, "s10": 1}
        # s8 rendered ctx.token: the value s3 set in the old execution, not a new one
        assert (tmp_path / "s8").read_text().split() == [token]
        new = started["execution_id"]
        code, out, _ = await cli("events", new, "--address", temporal.address, "--json")
        events = [json.loads(line) for line in out.splitlines()]
        assert events[4]["event_type"] == "execution.redriven_from"
        assert events[4]["payload"]["redriven_from"] == old
        reused = {e["entity_id"] for e in events if e["event_type"] == "step.done" and e["payload"].get("reused")}
        assert reused == set(STEPS[:6])
        ran = {e["step_run_id"].split(":")[0] for e in events if e["event_type"] == "task.started"}
        assert ran == set(STEPS[6:])
        # the old stream ends with the note that it was redriven, and by whom
        old_events = store.read(old, limit=1000)
        assert old_events[-1]["event_type"] == "execution.redriven"
        assert old_events[-1]["payload"]["redriven_by"] == new
        assert old_events[-1]["seq"] == old_events[-2]["seq"] + 1
        code, out, _ = await cli("status", old, "--address", temporal.address, "--json")
        assert code == 0 and json.loads(out)["state"] == "FAILED"   # a redrive is a new execution, not a reset
        assert "redriven_from" not in json.loads(out)
        # status, events and the Temporal UI's current details say what was reused and what reran
        code, out, _ = await cli("status", new, "--address", temporal.address, "--json")
        status = json.loads(out)
        assert code == 0 and status["redriven_from"] == old
        assert status["reused_steps"] == sorted(STEPS[:6]) and status["rerun_steps"] == sorted(STEPS[6:])
        code, out, _ = await cli("status", new, "--address", temporal.address)
        assert f"redriven_from        {old}" in out and "reused_steps         6: s1, s2, s3, s4, s5, s6" in out
        assert "rerun_steps          4: s10, s7, s8, s9" in out
        code, out, _ = await cli("events", new, "--address", temporal.address)
        lines = out.splitlines()
        assert f"from {old}, reusing 6 steps" in next(line for line in lines if "execution.redriven_from" in line)
        assert all(f"reused from {old}" in line for line in lines if "step.done" in line and " s1 " in line)
        assert not any("reused" in line for line in lines if " s7 " in line)
        meta = await temporal.client.get_workflow_handle(new).query("__temporal_workflow_metadata")
        assert f"redrive of `{old}`" in meta.current_details
        assert "reused (recorded results, no tool): `s1`, `s2`, `s3`, `s4`, `s5`, `s6`" in meta.current_details
        assert "reran: `s7`, `s8`, `s9`, `s10`" in meta.current_details
        # the new execution names the old one in its memo (the Temporal UI shows it)
        desc = await temporal.client.get_workflow_handle(new).describe()
        assert (await desc.memo_value("noetl.redriven_from")) == old
        assert desc.typed_search_attributes.get(REDRIVEN_FROM) == old   # ... and its search attribute
        # ... and its input carries the plan, listing the behaviour an older worker refuses
        inp = await read_input(temporal.client, new)
        assert inp.redrive["from_execution_id"] == old and behaviours.REDRIVE in inp.behaviours


async def test_redrive_from_a_step_that_completed_reruns_it_and_what_follows(temporal, task_queue, tmp_path):
    async with build_worker(temporal.client, task_queue=task_queue):
        old = await failed_at_s7(temporal, task_queue, tmp_path)
        (tmp_path / "flag").write_text("fixed")
        before = counts(tmp_path)
        code, out, err = await cli("redrive", old, "--from", "s5", "--wait", "--address", temporal.address)
        assert code == 0, (out, err)
        assert json.loads(out)["reused_steps"] == sorted(STEPS[:4])
        after = counts(tmp_path)
        assert {s: after[s] - before[s] for s in STEPS} == {**{s: 0 for s in STEPS[:4]}, **{s: 1 for s in STEPS[4:]}}


async def test_redrive_refusals_are_clear(temporal, task_queue, tmp_path):
    async with build_worker(temporal.client, task_queue=task_queue):
        old = await failed_at_s7(temporal, task_queue, tmp_path)
        code, _, err = await cli("redrive", old, "--from", "nope", "--address", temporal.address)
        assert code == 1 and "unknown step 'nope' for --from" in err and "s10" in err and "Traceback" not in err
        code, _, err = await cli("redrive", "no-such-execution", "--address", temporal.address)
        assert code == 1 and "no execution 'no-such-execution'" in err and "Traceback" not in err
        # still running: a step that waits for a flag that never comes
        playbook = load_playbook_text("""
workflow:
  - step: wait
    tool: {kind: python, code: "import time\\ntime.sleep(60)\\nresult = 1"}
""").playbook
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=90)
        code, _, err = await cli("redrive", handle.id, "--address", temporal.address)
        assert code == 1 and f"execution {handle.id} is still running" in err and "noetl-temporal cancel" in err
        await handle.terminate("test over")


LOOP = """
metadata: {name: loop-redrive}
workload: {items: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]}
workflow:
  - step: each
    loop: {in: "{{ workload.items }}", iterator: i, spec: {mode: parallel, max_in_flight: 5}}
    tool:
      kind: python
      input: {dir: "{{ workload.dir }}", i: "{{ i }}"}
      code: |
        import pathlib
        d = pathlib.Path(dir)
        with open(d / 'calls', 'a') as f: f.write(f'{i}\\n')
        if i in (3, 11, 17) and not (d / 'flag').exists():
            raise RuntimeError(f'item {i}: flag file missing')
        result = i * 10
    next: {arcs: [{step: total, when: "{{ event.name == 'loop.done' and event.status == 'ok' }}"}]}
  - step: total
    tool: {kind: python, input: {r: "{{ each.results }}"}, code: "result = sum(r)"}
"""


async def test_a_loop_redrive_reruns_only_the_failed_iterations(temporal, task_queue, tmp_path):
    async with build_worker(temporal.client, task_queue=task_queue):
        playbook = load_playbook_text(LOOP).playbook
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120,
                                       payload={"dir": str(tmp_path)})
        assert (await workflow_output(handle))["state"] == "FAILED"
        before = len((tmp_path / "calls").read_text().split())
        (tmp_path / "flag").write_text("fixed")
        code, out, err = await cli("redrive", handle.id, "--wait", "--address", temporal.address)
        assert code == 0, (out, err)
        output = json.loads(out)["output"]
        assert output["steps"]["total"]["result"] == sum(i * 10 for i in range(20))
        calls = (tmp_path / "calls").read_text().split()[before:]
        assert sorted(int(c) for c in calls) == [3, 11, 17]   # the 17 others were reused


async def test_latest_runs_the_file_as_it_is_now_and_reruns_what_changed(temporal, task_queue, tmp_path):
    source = tmp_path / "ten.yaml"
    source.write_text(ten_steps())
    work = tmp_path / "work"
    work.mkdir()
    async with build_worker(temporal.client, task_queue=task_queue):
        playbook = load_playbook_text(source.read_text()).playbook
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120,
                                       payload={"dir": str(work)}, source=str(source))
        assert (await workflow_output(handle))["state"] == "FAILED"
        (work / "flag").write_text("fixed")
        # the file changes after the run: s2 now takes one more input
        source.write_text(ten_steps().replace("name: s2,", "name: s2, extra: 1,"))
        before = counts(work)
        code, out, err = await cli("redrive", handle.id, "--latest", "--wait", "--address", temporal.address)
        assert code == 0, (out, err)
        started = json.loads(out)
        assert started["definition"] == "latest" and started["changed_steps"] == ["s2"]
        assert started["reused_steps"] == ["s1"]
        after = counts(work)
        assert {s: after[s] - before[s] for s in STEPS} == {"s1": 0, **{s: 1 for s in STEPS[1:]}}
        # --playbook FILE: an invalid one is refused with its located errors, before anything starts
        bad = tmp_path / "bad.yaml"
        bad.write_text("workflow:\n  - step: a\n    tool: {kind: nope}\n")
        code, _, err = await cli("redrive", handle.id, "--playbook", str(bad), "--address", temporal.address)
        assert code == 2 and f"{bad}:3:" in err and "is not a valid playbook" in err
