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
