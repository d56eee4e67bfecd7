"""Issue 38: a task's templates that use a task-only filter never render on the worker's main
process (docs/durability.md, "Task-side renders").

``{{ ('.' * 100000 ~ 'a.') | urlize }}`` in a python task's ``input`` or a shell task's
``cmd`` was rendered inside the workflow: urlize's quadratic regex held the GIL in one C
call and froze the worker (a small playbook beside it took 8.4 s, the bomb had not ended
after 100 s, and a cancel could not be served). Now the activity renders it in a render
child under CPU and memory rlimits: the task fails with a located error naming the limit,
a small playbook on the same worker completes meanwhile, and a cancel of a bomb's execution
takes effect. Real dev server, real worker; ``scale`` tier (``fuzz/``).
"""

from __future__ import annotations

import asyncio
import textwrap
import time

from noetl_temporal.cli.locations import locate_message
from noetl_temporal.client.connect import start_execution
from noetl_temporal.conversion.playbook_result import workflow_output
from noetl_temporal.dsl import load_playbook_text
from tests.support.capped_worker import MEMORY_CAP, CappedWorker, cancel_and_wait

BOMB = "{{ ('.' * 100000 ~ 'a.') | urlize }}"

PYTHON_BOMB = f"""
workflow:
  - step: render
    tool:
      kind: python
      input:
        text: "{BOMB}"
      code: |
        result = {{"n": len(text)}}
"""

SHELL_BOMB = f"""
workflow:
  - step: render
    tool:
      kind: shell
      cmd: "echo {BOMB} | wc -c"
"""

# What the child renders arrives in the task: the usual small case, and the names read.
SMALL_TASK_ONLY = """
workload:
  words: "one two three four"
workflow:
  - step: render
    tool:
      kind: python
      input:
        wrapped: "{{ workload.words | wordwrap(8) }}"
        attempt: "{{ _attempt }}"
      code: |
        result = {"lines": wrapped.split("\\n"), "attempt": attempt}
"""

SMALL = """
workflow:
  - step: start
    tool: {kind: noop, result: {n: 1}}
    next: {arcs: [{step: end}]}
  - step: end
    tool: {kind: shell, cmd: "echo {{ start.n }}"}
"""


def _loaded(text: str):
    return load_playbook_text(textwrap.dedent(text), "bomb.yaml")


async def _failed_located(handle, loaded, setting: str, started: float) -> str:
    output = await asyncio.wait_for(workflow_output(handle), timeout=60)
    assert output["state"] == "FAILED", output
    assert time.monotonic() - started < 45, "not stopped by the render child's limits"
    print(f"bomb FAILED after {time.monotonic() - started:.1f} s")
    error = str(output["result"]["reason"])
    assert f"render.tool.render_task.{setting}: the render went over the task-side render's" in error, error
    assert "CPU limit" in error or "time limit" in error, error
    assert "truncate" in error, error   # the fix
    located = locate_message(loaded, error[error.index("render.tool."):])
    assert located is not None and located.startswith("bomb.yaml:"), located
    return error


async def test_task_only_renders_run_in_a_child_and_the_worker_stays_responsive(temporal, task_queue, tmp_path):
    client = temporal.client
    python_bomb, shell_bomb = _loaded(PYTHON_BOMB), _loaded(SHELL_BOMB)
    with CappedWorker(temporal.address, task_queue, tmp_path / "worker.log") as worker:
        assert worker.limit() == MEMORY_CAP
        small_case = await start_execution(client, _loaded(SMALL_TASK_ONLY).playbook, task_queue=task_queue,
                                           execution_timeout_s=60)
        output = await asyncio.wait_for(workflow_output(small_case), timeout=30)
        assert output["state"] == "COMPLETED", output
        assert output["steps"]["render"]["result"] == {"lines": ["one two", "three", "four"], "attempt": 1}, output

        started = time.monotonic()
        bombs = [await start_execution(client, book.playbook, task_queue=task_queue, execution_timeout_s=120)
                 for book in (python_bomb, shell_bomb)]
        await asyncio.sleep(1)   # both render children are running
        small_started = time.monotonic()
        small = await start_execution(client, _loaded(SMALL).playbook, task_queue=task_queue, execution_timeout_s=60)
        output = await asyncio.wait_for(workflow_output(small), timeout=30)
        assert output["state"] == "COMPLETED", output
        assert time.monotonic() - small_started < 20
        print(f"small playbook beside two bombs: {time.monotonic() - small_started:.1f} s")

        await _failed_located(bombs[0], python_bomb, "input.text", started)
        await _failed_located(bombs[1], shell_bomb, "cmd", started)
        assert worker.alive(), f"the capped worker died: {worker.tail()}"


async def test_cancelling_a_bomb_s_execution_takes_effect(temporal, task_queue, tmp_path):
    client = temporal.client
    with CappedWorker(temporal.address, task_queue, tmp_path / "worker.log") as worker:
        assert worker.limit() == MEMORY_CAP
        bomb = await start_execution(client, _loaded(PYTHON_BOMB).playbook, task_queue=task_queue,
                                     execution_timeout_s=120, heartbeat_timeout_s=2)
        await asyncio.sleep(1.5)   # its render child is running
        info, took = await cancel_and_wait(client, bomb.id, polls=150)
        assert info.state == "CANCELLED", info
        assert took < 30
        print(f"cancel took effect in {took:.1f} s")
        assert worker.alive(), f"the capped worker died: {worker.tail()}"
