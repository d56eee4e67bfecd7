"""A waiting approval survives its worker: SIGKILL the worker while the step waits; an
answer sent with no worker says so (no traceback) and is held by Temporal; a new worker
takes it, and the timeout timer is still the one first started."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap

import pytest

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.observe import read_status
from noetl_temporal.dsl import load_playbook_text

from .workers import WorkerProcess

pytestmark = [pytest.mark.temporal, pytest.mark.chaos]

GATE = """
metadata: {name: gate-restart}
workflow:
  - step: sign_off
    tool:
      kind: approve
      prompt: "Go?"
      fields: {approved: {type: boolean, required: true}}
      timeout: 120
    next: {arcs: [{step: go, when: "{{ sign_off.approved }}"}]}
  - step: go
    tool: {kind: shell, cmd: "echo went"}
"""


async def cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "noetl_temporal.cli", *args, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=dict(os.environ))
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


async def test_an_approval_survives_a_worker_kill(temporal, task_queue):
    playbook = load_playbook_text(textwrap.dedent(GATE), source="<test>").playbook
    worker = WorkerProcess(temporal.address, task_queue)
    with worker:
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120)
        for _ in range(600):
            try:
                if (await read_status(temporal.client, handle.id)).get("waiting"):
                    break
            except Exception:
                pass
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the approval never waited")
        worker.kill()
        code, out, err = await cli("approve", handle.id, "sign_off", "--set", "approved=true", "--by", "ops",
                                   "--address", temporal.address)
        assert code == 2 and out == "", (code, out, err)
        assert "no worker took the request for step 'sign_off'" in err and "holds it for the next worker" in err
        assert "Traceback" not in err
        worker.start()   # takes the held answer: nothing to send again
        output = await asyncio.wait_for(handle.result(), timeout=60)
    assert output["state"] == "COMPLETED" and output["steps"]["go"]["result"]["stdout"] == "went\n"
    assert output["steps"]["sign_off"]["result"]["answered_by"] == "ops"
    history = await handle.fetch_history()
    timers = [e for e in history.events if e.HasField("timer_started_event_attributes")]
    assert len(timers) == 1   # the same durable timer across the restart, not a new one
