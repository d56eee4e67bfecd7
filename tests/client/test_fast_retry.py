"""Retry controls on the fast path (``spec.local``), on the dev server through the CLI (as a
subprocess): the workflow's own retry loop takes ``set-retry`` (more attempts than its rule,
a shorter delay) and ``retry-now`` (an hour's backoff cut short), across a worker restart; a step that is not
running is refused with the reason (docs/approvals.md, "Retrying a step now")."""

from __future__ import annotations

import asyncio
import contextlib
import json
import textwrap

import pytest

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.observe import read_events
from noetl_temporal.conversion.playbook_result import workflow_output
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.hosting.worker import build_worker
from tests.support.cli_process import cli

pytestmark = pytest.mark.temporal

# fetch succeeds at its 3rd attempt; its rule allows 2, an hour apart
LOCAL = textwrap.dedent("""
    metadata: {name: local-backoff}
    workflow:
      - step: fetch
        tool:
          kind: shell
          cmd: "echo x >> {{ workload.mark }}; [ $(wc -l < {{ workload.mark }}) -ge 3 ] || exit 3"
          spec:
            local: true
            policy: {rules: [{when: "{{ output.status == 'error' }}", then: {do: retry, attempts: 2, delay: 3600}}]}
        next: {arcs: [{step: load}]}
      - step: load
        tool: {kind: noop}
""")


async def _until_accepted(*args: str) -> dict:
    """Send the control until the step is where it applies (refused meanwhile: running)."""
    for _ in range(60):
        code, out, err = await cli(*args)
        if code == 0:
            return json.loads(out)
        assert code == 2 and "is not waiting to retry: its task is running" in err, err
        await asyncio.sleep(0.2)
    raise AssertionError(f"never accepted: {args}")


async def test_the_fast_path_takes_set_retry_and_retry_now_across_a_worker_restart(temporal, task_queue, tmp_path):
    mark = tmp_path / "attempts"
    playbook = load_playbook_text(LOCAL, source="<test>").playbook
    address = ("--address", temporal.address)
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=7200,
                                       payload={"mark": str(mark)})
        try:
            for _ in range(400):
                if mark.exists():
                    break
                await asyncio.sleep(0.05)
            code, out, err = await cli("retry-now", handle.id, "load", *address)
            assert code == 2 and "step 'load' is not running, so it has no retry to change" in err, err
            code, out, err = await cli("set-retry", handle.id, "fetch", "--attempts", "3", "--reason",
                                       "one more today", "--by", "oncall", *address)
            assert code == 0, err
            assert json.loads(out)["fast_path"] is True and json.loads(out)["attempts"] == 3
        except BaseException:
            await handle.terminate("test failed")
            raise
    # the worker that took the change is gone: a new one replays it and goes on with it
    async with build_worker(temporal.client, task_queue=task_queue):
        try:
            # attempt 2 is an hour away (the rule's delay): now
            now = await _until_accepted("retry-now", handle.id, "fetch", "--reason", "the source is back",
                                        "--by", "oncall", *address)
            assert now["attempt"] == 2 and now["fast_path"] is True
            # attempt 3 would be an hour after it too: a second apart instead (the wait under way, or the next)
            code, out, err = await cli("set-retry", handle.id, "fetch", "--delay", "1", "--by", "oncall", *address)
            assert code == 0 and json.loads(out)["delay"] == 1, err
            output = await asyncio.wait_for(workflow_output(handle), 60)
            events = await read_events(temporal.client, handle.id)   # the query needs a worker
        finally:
            with contextlib.suppress(Exception):
                await handle.terminate("test over")
    assert output["state"] == "COMPLETED", output   # attempt 3: past the rule's 2, within the operator's 3
    assert mark.read_text().count("x") == 3
    policy, delay = [e for e in events if e["event_type"] == "step.retry.policy"]
    assert policy["payload"]["by"] == "oncall" and policy["payload"]["attempts"] == 3
    assert policy["payload"]["reason"] == "one more today" and policy["payload"]["at"]
    assert delay["payload"]["delay"] == 1 and delay["payload"]["attempts"] is None
    assert [e["payload"]["by"] for e in events if e["event_type"] == "step.retry.now"] == ["oncall"]
    history = await handle.fetch_history()
    accepted = [e for e in history.events if e.HasField("workflow_execution_update_accepted_event_attributes")]
    assert len(accepted) == 3 and all(b"oncall" in e.SerializeToString() for e in accepted)
    code, out, err = await cli("retry-now", handle.id, "fetch", *address)
    assert code == 1 and "is already" in err, err
