"""Issue 38: while bombs run on a worker, a small playbook on the same worker still completes
in seconds, and cancelling the bomb takes effect.

Two bombs at once: a workflow-side template that compared two 9 MB strings in a 990x990
loop (every workflow task failed with "Potential deadlock detected", the execution stayed
PENDING forever, ignoring cancel): it now ends FAILED, located, in seconds; and a python task
that spins forever: its own process, which cancel stops."""

from __future__ import annotations

import asyncio
import textwrap
import time

from noetl_temporal.client.connect import start_execution
from noetl_temporal.conversion.playbook_result import workflow_output
from noetl_temporal.dsl import load_playbook_text
from tests.support.capped_worker import MEMORY_CAP, CappedWorker, cancel_and_wait

COMPARE_BOMB = """
workflow:
  - step: start
    tool: {kind: noop}
    next:
      arcs:
        - step: end
          set:
            ctx.n: "{% set a = 'x' * 9000000 %}{% set b = 'x' * 9000000 %}{% for i in range(990) %}{% for j in range(990) %}{% if a == b %}{% endif %}{% endfor %}{% endfor %}1"
  - step: end
    tool: {kind: noop}
"""

SPIN = """
workflow:
  - step: spin
    tool:
      kind: python
      code: |
        def main():
            while True:
                pass
"""

SMALL = """
workflow:
  - step: start
    tool: {kind: noop, result: {n: 1}}
    next: {arcs: [{step: end}]}
  - step: end
    tool: {kind: shell, cmd: "echo {{ start.n }}"}
"""


def _book(text: str):
    return load_playbook_text(textwrap.dedent(text), "<test>").playbook


async def test_a_small_playbook_completes_beside_bombs_and_cancel_takes_effect(temporal, task_queue, tmp_path):
    client = temporal.client
    with CappedWorker(temporal.address, task_queue, tmp_path / "worker.log") as worker:
        assert worker.limit() == MEMORY_CAP
        spin = await start_execution(client, _book(SPIN), task_queue=task_queue, execution_timeout_s=120,
                                     heartbeat_timeout_s=2)
        bomb = await start_execution(client, _book(COMPARE_BOMB), task_queue=task_queue, execution_timeout_s=120)
        await asyncio.sleep(1)   # both bombs are running
        started = time.monotonic()
        small = await start_execution(client, _book(SMALL), task_queue=task_queue, execution_timeout_s=60)
        output = await asyncio.wait_for(workflow_output(small), timeout=60)
        assert output["state"] == "COMPLETED", output
        assert time.monotonic() - started < 45   # beside two bombs at load 8 (docs/testing.md)

        bombed = await asyncio.wait_for(workflow_output(bomb), timeout=30)
        assert bombed["state"] == "FAILED", bombed
        error = str(bombed.get("error") or bombed)
        assert "too much work" in error and "MAX_OPS" in error, error

        info, took = await cancel_and_wait(client, spin.id)
        assert info.state == "CANCELLED", info
        assert took < 60
        assert worker.alive(), f"the capped worker died: {worker.tail()}"
