"""A failed sub-playbook is redriven inside its parent's redrive (docs/operations.md): the
child's steps that completed are reused (their counter files prove no tool ran again), its
failed step reruns, and the parent goes on; the new child names the old one."""

from __future__ import annotations

import pytest

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.control import read_input
from noetl_temporal.client.redrive_start import redrive
from noetl_temporal.conversion.playbook_result import workflow_output
from noetl_temporal.dsl import load_playbook
from noetl_temporal.engine import behaviours
from noetl_temporal.hosting.worker import build_worker
from tests.api.conftest import wait_for

pytestmark = pytest.mark.temporal


def _counting(step: str, *, fails: bool = False) -> str:
    code = [f"open(dir + '/{step}', 'a').write('x')"]
    if fails:
        code.append("import pathlib\nif not pathlib.Path(dir, 'flag').exists(): raise RuntimeError('no flag')")
    code.append("result = 1")
    body = "\n".join(code).replace("\n", "\n        ")
    return (f"  - step: {step}\n    tool:\n      kind: python\n      input: {{dir: \"{{{{ workload.dir }}}}\"}}\n"
            f"      code: |\n        {body}\n")


ON_DONE = "    next: {{arcs: [{{step: {}, when: \"{{{{ event.name == 'step.done' }}}}\"}}]}}\n"

CHILD = "metadata: {name: kid}\nworkflow:\n" + _counting("c1") + ON_DONE.format("c2") + _counting("c2", fails=True)
PARENT = ("metadata: {name: mom}\nworkflow:\n" + _counting("p1") + ON_DONE.format("sub")
          + "  - step: sub\n    tool: {kind: playbook, path: child.yaml, input: {dir: \"{{ workload.dir }}\"}}\n"
          + ON_DONE.format("p3") + _counting("p3"))


def _counts(directory) -> dict[str, int]:
    return {name: len((directory / name).read_text()) if (directory / name).exists() else 0
            for name in ("p1", "c1", "c2", "p3")}


async def test_a_failed_child_is_redriven_inside_the_parents_redrive(temporal, task_queue, tmp_path):
    (tmp_path / "child.yaml").write_text(CHILD)
    (tmp_path / "parent.yaml").write_text(PARENT)
    playbook = load_playbook(tmp_path / "parent.yaml").playbook
    async with build_worker(temporal.client, task_queue=task_queue):
        old = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120,
                                    source=str(tmp_path / "parent.yaml"), payload={"dir": str(tmp_path)})
        assert (await workflow_output(old))["state"] == "FAILED"
        assert _counts(tmp_path) == {"p1": 1, "c1": 1, "c2": 1, "p3": 0}
        (tmp_path / "flag").write_text("fixed")
        started = await redrive(temporal.client, old.id, task_queue=task_queue, search_attributes=True)
        assert started["reused_steps"] == ["p1"] and list(started["redriven_children"]) == ["sub"]
        old_child = started["redriven_children"]["sub"]
        inp = await read_input(temporal.client, started["execution_id"])   # a worker without it refuses the run
        assert behaviours.REDRIVE_CHILDREN in inp.behaviours and list(inp.redrive["children"]) == ["sub:run:1:task:sub_task"]
        output = await workflow_output(temporal.client.get_workflow_handle(started["execution_id"]))
        assert output["state"] == "COMPLETED", output
        # c1 completed in the old child: reused, its tool did not run again; c2 reran
        assert _counts(tmp_path) == {"p1": 1, "c1": 1, "c2": 2, "p3": 1}
        async def children() -> list[str]:
            return [wf.id async for wf in temporal.client.list_workflows(
                f"NoetlParentExecutionId = '{started['execution_id']}'")]
        [new_child] = await wait_for(children, timeout=30, every=0.5, what="the new child in visibility")
        described = await temporal.client.get_workflow_handle(new_child).describe()
        assert await described.memo_value("noetl.redriven_from") == old_child
        child_output = await workflow_output(temporal.client.get_workflow_handle(new_child))
        assert child_output["steps"]["c1"].get("reused") is True and not child_output["steps"]["c2"].get("reused")


#: the child fails at once while a chain of slower steps goes on beside it, long enough for the
#: parent to continue as new (after the child ended: a run hands over only with nothing in flight)
PADDED = ("metadata: {name: mom}\nworkflow:\n" + _counting("p1")
          + "    next: {spec: {mode: inclusive}, arcs: [{step: sub}, {step: pad1}]}\n"
          + "  - step: sub\n    tool: {kind: playbook, path: child.yaml, input: {dir: \"{{ workload.dir }}\"}}\n"
          + "".join(f"  - step: pad{i}\n    tool: {{kind: python, code: \"import time\\ntime.sleep(0.3)\\nresult = {i}\"}}\n"
                    + (f"    next: {{arcs: [{{step: pad{i + 1}}}]}}\n" if i < 6 else "") for i in range(1, 7)))


async def _runs(temporal, workflow_id: str) -> int:
    """How many runs the workflow had (its latest run's chain of continued runs)."""
    from temporalio.api.enums.v1 import EventType

    count, run_id = 0, None
    while True:
        count += 1
        async for event in temporal.client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history_events():
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
                run_id = event.workflow_execution_started_event_attributes.continued_execution_run_id
                break
        if not run_id:
            return count


async def test_a_child_started_in_an_earlier_run_of_its_parent_is_redriven_too(temporal, task_queue, tmp_path):
    (tmp_path / "child.yaml").write_text(CHILD)
    (tmp_path / "parent.yaml").write_text(PADDED)
    playbook = load_playbook(tmp_path / "parent.yaml").playbook
    async with build_worker(temporal.client, task_queue=task_queue):
        old = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120,
                                    source=str(tmp_path / "parent.yaml"), payload={"dir": str(tmp_path)},
                                    continue_as_new_after_events=40)
        output = await workflow_output(old)
        assert output["state"] == "FAILED" and output["steps"]["sub"]["status"] == "FAILED", output["steps"]
        assert output["steps"].get("pad6", {}).get("status") == "COMPLETED", {k: v["status"] for k, v in output["steps"].items()}
        assert await _runs(temporal, old.id) > 1   # the parent continued as new
        # ... after it started the child: its latest run's history does not hold the child's start
        from temporalio.api.enums.v1 import EventType
        latest = [e async for e in temporal.client.get_workflow_handle(old.id).fetch_history_events()]
        assert not any(e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED for e in latest)
        assert _counts(tmp_path) == {"p1": 1, "c1": 1, "c2": 1, "p3": 0}
        (tmp_path / "flag").write_text("fixed")
        started = await redrive(temporal.client, old.id, task_queue=task_queue)
        assert list(started["redriven_children"]) == ["sub"]
        output = await workflow_output(temporal.client.get_workflow_handle(started["execution_id"]))
        assert output["state"] == "COMPLETED", output["steps"]
        assert _counts(tmp_path) == {"p1": 1, "c1": 1, "c2": 2, "p3": 0}   # c1 reused, c2 reran
