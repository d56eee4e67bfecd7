"""The CLI's control and observation commands against a running dev server."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap

import pytest

from noetl_temporal.client.connect import start_execution
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.hosting.worker import build_worker

pytestmark = pytest.mark.temporal


async def cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "noetl_temporal.cli", *args, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=dict(os.environ))
    out, err = await proc.communicate()
    return proc.returncode, out.decode(), err.decode()


GATE = """
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: gated}]}
  - step: gated
    spec: {policy: {admit: {on_deny: wait, rules: [{when: "{{ ctx.approved }}", then: {allow: true}}]}}}
    tool: {kind: shell, cmd: "sleep 0.2; echo approved by {{ ctx.who }}"}
"""


async def test_ctx_patch_opens_a_gate_and_status_events_report_it(temporal, task_queue):
    playbook = load_playbook_text(textwrap.dedent(GATE)).playbook
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=60)
        # the gate is denied and waits: the execution stays RUNNING, not completed
        for _ in range(100):
            code, out, _ = await cli("events", handle.id, "--address", temporal.address, "--json",
                                     "--type", "policy.admit.evaluated")
            if out.strip():
                break
            await asyncio.sleep(0.05)
        assert json.loads(out.splitlines()[0])["payload"]["allowed"] is False
        code, out, err = await cli("status", handle.id, "--address", temporal.address, "--json")
        assert code == 0 and json.loads(out)["state"] == "RUNNING", err
        code, out, err = await cli("ctx", handle.id, "approved=true", "who=ops", "--address", temporal.address)
        assert code == 0, err
        output = await asyncio.wait_for(handle.result(), timeout=30)
        assert output["state"] == "COMPLETED"
        assert output["steps"]["gated"]["result"]["stdout"].strip() == "approved by ops"
        code, out, err = await cli("events", handle.id, "--address", temporal.address, "--follow")
        assert code == 0 and "playbook.finished" in out


async def test_cancel_and_pause_commands(temporal, task_queue):
    playbook = load_playbook_text(textwrap.dedent("""
    workflow:
      - step: nap
        tool: {kind: shell, cmd: "sleep 30"}
    """)).playbook
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=60,
                                       heartbeat_timeout_s=2)
        code, out, err = await cli("pause", handle.id, "--address", temporal.address, "--reason", "lunch")
        assert code == 0, err
        code, out, err = await cli("cancel", handle.id, "--address", temporal.address, "--reason", "done")
        assert code == 0, err
        assert json.loads(out)["state"] in ("CANCELLED", "RUNNING"), out   # RUNNING: still ending
        for _ in range(100):
            code, out, err = await cli("status", handle.id, "--address", temporal.address, "--json")
            if json.loads(out)["state"] != "RUNNING":
                break
            await asyncio.sleep(0.2)
        assert json.loads(out)["state"] == "CANCELLED", out
        code, out, err = await cli("pause", handle.id, "--address", temporal.address)
        assert code == 1 and "CANCELLED" in err
    code, out, err = await cli("status", "exec-does-not-exist", "--address", temporal.address)
    assert code == 1 and "no execution" in err
