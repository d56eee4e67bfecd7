"""A loop whose iterations call a sub-playbook, redriven (docs/operations.md, "Sub-playbooks"):
the failed iteration's child is redriven inside the parent's redrive (its completed steps
reused, only its failed part rerun), and the other iterations do not run at all. Counter
files, one per item and child step, prove which tools ran. The redrive goes through the CLI."""

from __future__ import annotations

import json

import pytest

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.control import read_input
from noetl_temporal.conversion.playbook_result import workflow_output
from noetl_temporal.dsl import load_playbook
from noetl_temporal.engine import behaviours
from noetl_temporal.hosting.worker import build_worker
from tests.support.cli_process import cli

pytestmark = pytest.mark.temporal

ITEMS = ["a", "b", "c"]
STEPS = ("c1", "c2", "c3", "c4")


def _counting(step: str, *, fails: bool = False) -> str:
    """A python step that appends to ``<dir>/<item>-<step>``; ``fails``: item b's fails without ``<dir>/flag``."""
    code = [f"open(dir + '/' + item + '-{step}', 'a').write('x')"]
    if fails:
        code.append("import pathlib\nif item == 'b' and not pathlib.Path(dir, 'flag').exists(): "
                    "raise RuntimeError('no flag')")
    code.append("result = item")
    body = "\n".join(code).replace("\n", "\n        ")
    return (f"  - step: {step}\n    tool:\n      kind: python\n"
            f"      input: {{dir: \"{{{{ workload.dir }}}}\", item: \"{{{{ workload.item }}}}\"}}\n"
            f"      code: |\n        {body}\n")


def _then(step: str) -> str:
    return f"    next: {{arcs: [{{step: {step}, when: \"{{{{ event.name == 'step.done' }}}}\"}}]}}\n"


CHILD = ("metadata: {name: kid}\nworkflow:\n" + _counting("c1") + _then("c2") + _counting("c2") + _then("c3")
         + _counting("c3", fails=True) + _then("c4") + _counting("c4"))
PARENT = """metadata: {name: mom}
workflow:
  - step: each
    loop: {in: "{{ workload.items }}", iterator: it, spec: {mode: parallel}}
    tool: {kind: playbook, path: child.yaml, input: {dir: "{{ workload.dir }}", item: "{{ it }}"}}
"""


def _counts(directory) -> dict[str, int]:
    return {f"{item}-{step}": len((directory / f"{item}-{step}").read_text())
            if (directory / f"{item}-{step}").exists() else 0 for item in ITEMS for step in STEPS}


async def test_a_failed_iterations_child_is_redriven_and_the_other_iterations_do_not_rerun(
        temporal, task_queue, tmp_path):
    (tmp_path / "child.yaml").write_text(CHILD)
    (tmp_path / "parent.yaml").write_text(PARENT)
    playbook = load_playbook(tmp_path / "parent.yaml").playbook
    async with build_worker(temporal.client, task_queue=task_queue):
        old = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120,
                                    source=str(tmp_path / "parent.yaml"),
                                    payload={"dir": str(tmp_path), "items": ITEMS})
        assert (await workflow_output(old))["state"] == "FAILED"
        once = {key: 1 for key in _counts(tmp_path)}
        assert _counts(tmp_path) == {**once, "b-c4": 0}   # b's child failed at c3 of 4
        (tmp_path / "flag").write_text("fixed")
        code, out, err = await cli("redrive", old.id, "--wait", "--address", temporal.address,
                                   "--task-queue", task_queue)
        assert code == 0, (out, err)
        started = json.loads(out)
        assert started["redriven_children"] == {"each[1]": started["redriven_children"]["each[1]"]}, started
        inp = await read_input(temporal.client, started["execution_id"])   # a worker without it refuses the run
        assert behaviours.REDRIVE_LOOP_CHILDREN in inp.behaviours
        assert list(inp.redrive["children"]) == ["each:run:1:iter:1:task:each_task"]
        output = started["output"]
        assert started["state"] == "COMPLETED", output
        # b's c1 and c2 completed in its old child: reused; c3 reran, c4 ran; a and c ran nothing
        assert _counts(tmp_path) == {**once, "b-c3": 2}
        assert output["steps"]["each"]["result"]["count"] == 3


def test_an_iterations_old_child_is_redriven_only_for_the_same_input():
    """The loop renders its items again: iteration 1's child gets the old plan only if its
    input is the one the old child had (another item there runs whole)."""
    from noetl_temporal.engine.messages import RunTask
    from noetl_temporal.engine.redrive import payload_digest
    from noetl_temporal.workflow.child_runs import _child_redrive
    from noetl_temporal.workflow.types import RunInput

    key = "each:run:1:iter:1:task:each_task"
    child = {"from_execution_id": "kid-old", "reuse": {"c1": "b"}, "payload_sha256": payload_digest({"item": "b"})}
    inp = RunInput(execution_id="mom-new", playbook={}, redrive={"children": {key: child}})

    def task(item: str, iteration: int = 1) -> RunTask:
        return RunTask(task_run_id=f"each:run:1:iter:{iteration}:task:each_task:1", execution_id="mom-new",
                       step="each", step_run_id="each:run:1", task="each_task", kind="playbook",
                       config={"path": "child.yaml", "input": {"item": item}}, iteration=iteration)

    assert _child_redrive(task("b"), inp) is child
    assert _child_redrive(task("x"), inp) is None          # another item at that index
    assert _child_redrive(task("b", iteration=2), inp) is None   # no plan for that iteration
