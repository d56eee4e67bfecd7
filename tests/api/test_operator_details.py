"""What an operator's view of a running execution says, on the dev server (issue 41, "Every
surface tells the truth"; docs/approvals.md):

* a fast-path task (``spec.local``) waiting out its workflow-side backoff is "retrying:
  attempt N waits until T (last error ...)" in ``status`` (the CLI as a subprocess, and
  ``GET /executions/{id}/status``), from the workflow's live status query: the Temporal UI
  shows only a timer there, so its current details say it too; ``GET
  /executions/{id}/steps/controls`` (what the page asks) offers retry-now for it and says the same;
* the Temporal UI's current details (read through the Temporal client, as the UI reads them:
  the ``__temporal_workflow_metadata`` query) name the steps an operator skipped, with who and
  why, and the runs a paused step holds back, while the run goes on and after it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from datetime import datetime

import pytest

from noetl_temporal.client.answers import hold_step, skip
from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.oneline import one_line
from noetl_temporal.hosting.worker import build_worker
from tests.support.cli_process import cli

from ..client.test_step_skip import load
from .conftest import app_client, make_settings

pytestmark = pytest.mark.temporal

LOCAL = """
metadata: {name: local-waits}
workflow:
  - step: fetch
    tool:
      kind: shell
      cmd: "echo 'source unreachable' >&2; exit 3"
      spec:
        local: true
        policy: {rules: [{when: "{{ output.status == 'error' }}", then: {do: retry, attempts: 3, delay: 3600}}]}
"""

HELD = """
metadata: {name: held-and-skipped}
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: fetch}, {step: first}]}
  - step: fetch   # fails, and waits 40 s to retry: skipped by the operator
    tool:
      kind: shell
      cmd: "exit 3"
      spec: {policy: {rules: [{when: "{{ output.status == 'error' }}", then: {do: retry, attempts: 5, delay: 40}}]}}
  - step: first
    tool: {kind: shell, cmd: 'while [ ! -e "{{ workload.flag }}" ]; do sleep 0.1; done'}
    next: {arcs: [{step: second}]}
  - step: second
    tool: {kind: noop}
"""


async def _until(check, what: str, timeout: float = 30.0):
    for _ in range(int(timeout / 0.1)):
        value = await check()
        if value:
            return value
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


async def test_status_says_a_fast_path_task_waits_to_retry(temporal, task_queue, catalog, event_store):
    settings = make_settings(temporal, task_queue, catalog, event_store, execution_timeout_s=7200)
    async with build_worker(temporal.client, task_queue=task_queue), app_client(settings) as http:
        handle = await start_execution(temporal.client, load(LOCAL), task_queue=task_queue, execution_timeout_s=7200)
        try:
            async def waiting() -> dict | None:
                code, out, err = await cli("status", handle.id, "--address", temporal.address, "--json")
                assert code == 0, err
                status = json.loads(out)
                return status if status.get("retrying") else None

            status = await _until(waiting, "the fast-path task's backoff")
            [wait] = status["retrying"]
            assert wait["step"] == "fetch" and wait["iteration"] is None and wait["attempt"] == 2
            assert "source unreachable" in wait["last_error"] and wait["fast_path"] is True
            until = datetime.fromisoformat(wait["until"].replace("Z", "+00:00"))
            started = datetime.fromisoformat(status["started_at"].replace("Z", "+00:00"))
            assert 3500 < (until - started).total_seconds() < 3700   # the rule's hour, from the failed attempt
            code, out, err = await cli("status", handle.id, "--address", temporal.address)
            assert code == 0, err
            line = next(line for line in out.splitlines() if line.startswith("retrying "))
            assert line.split(None, 1)[1] == f"fetch: attempt 2 waits until {wait['until']} (last error: " \
                                             f"{one_line(wait['last_error'], 200)})", out
            r = await http.get(f"/executions/{handle.id}/status")
            assert r.status_code == 200 and r.json()["retrying"] == status["retrying"], r.text
            # the Temporal UI's current details say it too, where the history has only a timer
            details = await _details(handle)
            assert f"retrying: `fetch` attempt 2 waits until {wait['until']} (last error: " in details, details
            # what the page asks: the controls that apply, and the same wait
            r = await http.get(f"/executions/{handle.id}/steps/controls")
            assert r.status_code == 200, r.text
            [offer] = r.json()["steps"]
            assert offer["step"] == "fetch" and offer["iteration"] is None and "retry-now" in offer["controls"]
            assert offer["retrying"] == {k: wait[k] for k in ("attempt", "until", "last_error")}
            assert (await http.get("/executions/nope/steps/controls")).status_code == 404
            spec = (await http.get("/openapi.json")).json()["paths"]["/executions/{execution_id}/steps/controls"]
            assert set(spec["get"]["responses"]) >= {"200", "404", "503"}
            # an operator's retry-now starts attempt 2: while it runs (or once it failed and waits
            # for attempt 3), status says where it is, never the old wait
            code, out, err = await cli("retry-now", handle.id, "fetch", "--reason", "back", "--address",
                                       temporal.address)
            assert code == 0, err

            async def next_wait() -> dict | None:
                body = (await http.get(f"/executions/{handle.id}/status")).json()
                return body if body.get("retrying") and body["retrying"][0]["attempt"] == 3 else None

            await _until(next_wait, "attempt 3's backoff")
            # and a run with nothing waiting keeps the minimal status
            await handle.terminate("test over")
            code, out, err = await cli("status", handle.id, "--address", temporal.address, "--json")
            assert "retrying" not in json.loads(out)
        finally:
            with contextlib.suppress(Exception):
                await handle.terminate("test over")


async def _details(handle) -> str:
    return (await handle.query("__temporal_workflow_metadata")).current_details


async def test_current_details_name_skipped_steps_and_the_runs_a_paused_step_holds(temporal, task_queue, tmp_path):
    flag = tmp_path / "go"
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, load(HELD), task_queue=task_queue, execution_timeout_s=120,
                                       payload={"flag": str(flag)})
        async def paused() -> dict | None:   # accepted once the run started
            with contextlib.suppress(Exception):
                return await hold_step(temporal.client, handle.id, "second", hold=True, reason="db maintenance",
                                       by="ops")
            return None

        await _until(paused, "the pause of `second`")
        flag.touch()   # `first` ends: its token reaches `second`, which the pause holds
        held = await _until(lambda: _has(handle, "(1 run held)"), "the held run in the current details")
        assert "paused by an operator (resume-step): `second` (1 run held)" in held

        async def skipped() -> dict | None:
            with contextlib.suppress(Exception):
                return await skip(temporal.client, handle.id, "fetch", reason="source is down; nothing new today",
                                  by="oncall")
            return None

        await _until(skipped, "fetch to be skippable")
        text = await _until(lambda: _has(handle, "skipped by an operator"), "the skip in the current details")
        assert "skipped by an operator (skip): `fetch` (by oncall: source is down; nothing new today)" in text
        await hold_step(temporal.client, handle.id, "second", hold=False, reason="done", by="ops")
        output = await asyncio.wait_for(handle.result(), timeout=30)
        assert output["state"] == "COMPLETED"
        final = await _details(handle)
    assert final.startswith("**COMPLETED**")
    assert "skipped by an operator (skip): `fetch` (by oncall: source is down; nothing new today)" in final
    assert "paused by an operator" not in final


async def _has(handle, needle: str) -> str | None:
    text = await _details(handle)
    return text if needle in text else None
