"""The command line says what a person needs when they need it: driven as a subprocess.

``run`` names its execution when it starts (a run waiting at a gate is controlled from
another terminal), ``status`` of a run waiting at a gate names that gate, ``--version``,
each control command's help lists only its own flags, an HTML error body is one progress
line, and ``dev`` logs a cancelled task in one line, not a traceback.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import logging
import os
import re
import signal
import sys
import textwrap
import time

import httpx
import pytest

import noetl_temporal
from noetl_temporal.client.devserver import free_port
from noetl_temporal.hosting.activity_logs import CancelledActivityFilter
from tests.cli.test_cli_control import GATE, cli

pytestmark = pytest.mark.temporal

CLI = [sys.executable, "-m", "noetl_temporal.cli"]


async def _spawn(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(*CLI, *args, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE, env=dict(os.environ),
                                                start_new_session=True)


async def _line_matching(stream: asyncio.StreamReader, pattern: str, seen: list[str], timeout: float = 60) -> re.Match:
    deadline = time.monotonic() + timeout
    while True:
        line = (await asyncio.wait_for(stream.readline(), timeout=max(deadline - time.monotonic(), 0.1))).decode()
        assert line, f"the stream ended before {pattern!r}: {''.join(seen)}"
        seen.append(line)
        match = re.search(pattern, line)
        if match:
            return match


async def test_run_names_its_execution_at_the_start_and_status_names_the_gate(temporal, task_queue, tmp_path):
    (tmp_path / "gate.yaml").write_text(textwrap.dedent(GATE))
    proc = await _spawn("run", str(tmp_path / "gate.yaml"), "--address", temporal.address, "--task-queue", task_queue)
    try:
        seen: list[str] = []
        started = await _line_matching(proc.stderr, r"^execution (\S+) started", seen)
        execution_id = started.group(1)
        control = await _line_matching(proc.stderr, r"control it: ", seen)
        assert f"{execution_id} --address {temporal.address}" in control.string
        assert proc.returncode is None   # said while the run goes on, not at its end
        # the run waits at the gate: status names the gate, not `start` (the step that finished last)
        for _ in range(100):
            code, out, err = await cli("status", execution_id, "--address", temporal.address, "--json")
            status = json.loads(out)
            if status["current_step"] == "gated":
                break
            await asyncio.sleep(0.1)
        assert (status["state"], status["current_step"]) == ("RUNNING", "gated"), status
        code, out, err = await cli("ctx", execution_id, "approved=true", "who=ops", "--address", temporal.address)
        assert code == 0, err
        out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
        assert proc.returncode == 0, err.decode()
        assert f"execution {execution_id}: COMPLETED" in out.decode()
    finally:
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()


async def test_version():
    code, out, err = await cli("--version")
    assert code == 0, err
    installed = importlib.metadata.version("noetl-temporal")
    assert out.strip() == f"noetl-temporal {installed}" and noetl_temporal.__version__ == installed


@pytest.mark.parametrize(("command", "has", "has_not"), [
    ("cancel", {"--reason", "--no-cascade"}, {"--task-queue"}),
    ("pause", {"--reason"}, {"--no-cascade", "--task-queue"}),
    ("resume", set(), {"--reason", "--no-cascade", "--task-queue"}),
    ("ctx", set(), {"--reason", "--no-cascade", "--task-queue"}),
])
async def test_control_help_lists_only_the_flags_that_apply(command, has, has_not):
    code, out, _ = await cli(command, "--help")
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", out))
    assert code == 0 and has <= flags and not flags & has_not, flags
    assert {"--address", "--namespace", "--profile"} <= flags


async def test_an_html_error_body_is_one_progress_line(temporal, task_queue, tmp_path, http_server):
    (tmp_path / "proxy.yaml").write_text(textwrap.dedent(f"""
        workflow:
          - step: call
            tool: {{kind: http, method: GET, url: "{http_server.url('/html-error')}",
                    spec: {{policy: {{rules: [{{then: {{do: fail}}}}]}}}}}}
    """))
    proc = await _spawn("run", str(tmp_path / "proxy.yaml"), "--address", temporal.address, "--task-queue", task_queue)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=90)
    assert proc.returncode == 1, err.decode()
    failed = [line for line in err.decode().splitlines() if "step.failed" in line]
    assert len(failed) == 1, err.decode()
    assert "HTTP 502 Bad Gateway" in failed[0] and "nginx" in failed[0], failed
    assert "<" not in failed[0] and len(failed[0]) < 260, failed
    assert "<html" not in err.decode().lower() and "</center>" not in err.decode()


async def test_dev_logs_a_cancelled_task_in_one_line(tmp_path):
    """Terminating a run (the Temporal UI's Terminate) while its shell task runs: the worker
    learns it at the task's next heartbeat, cancels the task, and the SDK used to log it as a
    failed activity with its whole stack. A cancelled run's task may take that path too,
    depending on timing; either way no traceback."""
    from temporalio.client import Client

    port, temporal_port = free_port(), free_port()
    env = {**os.environ, "NOETL_STORE": str(tmp_path)}
    proc = await asyncio.create_subprocess_exec(
        *CLI, "dev", "--port", str(port), "--temporal-port", str(temporal_port), "--ui-port", str(free_port()),
        "--catalog-path", str(tmp_path / "catalog.db"), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env, start_new_session=True)
    logged: list[str] = []

    async def collect() -> None:
        while line := await proc.stderr.readline():
            logged.append(line.decode())

    collector = asyncio.ensure_future(collect())
    try:
        await _line_matching(proc.stdout, r"^API: ", [], timeout=90)
        client = await Client.connect(f"127.0.0.1:{temporal_port}")
        pb = "workflow:\n  - step: nap\n    tool: {kind: shell, cmd: 'sleep 60'}\n"
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            ids = [(await http.post("/executions", json={"playbook": pb})).json()["execution_id"] for _ in range(2)]
            for execution_id in ids:
                for _ in range(100):
                    if (await http.get(f"/executions/{execution_id}/status")).json()["current_step"] == "nap":
                        break
                    await asyncio.sleep(0.1)
            await asyncio.sleep(0.5)   # the shell tasks are running
            cancelled = await http.post(f"/executions/{ids[0]}/cancel", json={"reason": "enough"})
            assert cancelled.json()["state"] == "CANCELLED", cancelled.text
        await client.get_workflow_handle(ids[1]).terminate(reason="operator stop")
        deadline = time.monotonic() + 60   # heard at the task's next heartbeat
        while not any(ids[1] in line and "cancelled" in line for line in logged) and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        await asyncio.wait_for(proc.wait(), timeout=60)
        await collector
    text = "".join(logged)
    for raw in ("Traceback", "sdk_core", "task_token", "Unknown child process"):
        assert raw not in text, text
    terminated = [line for line in logged if ids[1] in line and "cancelled" in line]
    assert len(terminated) == 1, text
    assert re.search(r"task nap:run:1\S* of execution \S+ cancelled: its execution has ended", terminated[0]), text
    assert len([line for line in logged if ids[0] in line and "cancelled" in line]) <= 1, text


def test_the_filter_leaves_other_records_alone():
    record = logging.LogRecord("temporalio.activity", logging.WARNING, __file__, 1, "Completing activity as failed",
                               (), (ValueError, ValueError("real failure"), None))
    assert CancelledActivityFilter().filter(record) and record.exc_info is not None
    try:
        raise asyncio.CancelledError("Activity cancelled")
    except asyncio.CancelledError:
        cancelled = logging.LogRecord("temporalio.activity", logging.WARNING, __file__, 1,
                                      "Completing activity as failed", (), sys.exc_info())
    cancelled.temporal_activity = {"activity_id": "nap:run:1:task:t:1", "workflow_id": "wf-1"}
    assert CancelledActivityFilter().filter(cancelled) and cancelled.exc_info is None
    assert cancelled.getMessage().startswith("task nap:run:1:task:t:1 of execution wf-1 cancelled: ")
