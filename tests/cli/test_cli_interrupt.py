"""Ctrl-C of `noetl-temporal run` while tasks run: each cancelled task is at most one line,
`task <id> of execution <id> cancelled: <why>` (docs/observability.md), never the SDK
core's raw log ("[sdk_core::...] Activity not found on completion ... task_token ...") or
asyncio's "Unknown child process pid". Driven as a subprocess; the filters' own cases below."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import re
import signal
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from noetl_temporal.hosting.activity_logs import LateCompletionFilter, ReapedChildFilter

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "noetl_temporal.cli"]

SLEEPY = """
    workflow:
      - step: start
        next: {spec: {mode: inclusive}, arcs: [{step: nap}, {step: pynap}]}
        tool: {kind: noop}
      - step: nap
        loop: {in: "{{ [1, 2, 3] }}", iterator: i, spec: {mode: parallel}}
        tool:
          - name: sh
            kind: shell
            cmd: sleep 60
      - step: pynap
        tool: {kind: python, code: "import time\\ntime.sleep(60)"}
"""


@pytest.mark.temporal
async def test_ctrl_c_of_run_logs_each_cancelled_task_in_one_line(tmp_path):
    (tmp_path / "sleepy.yaml").write_text(textwrap.dedent(SLEEPY))
    env = {k: v for k, v in os.environ.items() if k != "TEMPORAL_ADDRESS"}
    env["NOETL_STORE"] = str(tmp_path)
    proc = await asyncio.create_subprocess_exec(
        *CLI, "run", str(tmp_path / "sleepy.yaml"), cwd=REPO, env=env, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE, start_new_session=True)
    logged: list[str] = []
    try:
        async with asyncio.timeout(90):
            started = set()
            while not {"nap", "pynap"} <= started:
                line = (await proc.stderr.readline()).decode()
                assert line, "".join(logged)
                logged.append(line)
                if match := re.search(r"step\.started\s+(\S+)", line):
                    started.add(match[1])
        await asyncio.sleep(1.5)   # the four tasks are running
        os.killpg(proc.pid, signal.SIGINT)   # what Ctrl-C sends: the terminal's whole group
        async with asyncio.timeout(60):
            logged.append((await proc.stderr.read()).decode())
            await proc.wait()
    finally:
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = "".join(logged)
    assert proc.returncode == 130, text
    for raw in ("sdk_core", "task_token", "TaskToken", "Unknown child process", "Traceback"):
        assert raw not in text, text
    tasks = re.findall(r"^task (\S+) of execution \S+ cancelled: ", text, re.M)
    assert len(tasks) == len(set(tasks)) and set(tasks) <= {
        "nap:run:1:iter:0:task:sh:1", "nap:run:1:iter:1:task:sh:1", "nap:run:1:iter:2:task:sh:1",
        "pynap:run:1:task:pynap_task:1"}, text


def _token(workflow_id: str, activity_id: str) -> str:
    def field(number: int, text: str) -> bytes:
        data = text.encode()
        return bytes([number << 3 | 2, len(data)]) + data
    raw = field(1, "namespace-id") + field(2, workflow_id) + bytes([4 << 3, 6]) + field(6, activity_id)
    return f"TaskToken({base64.b64encode(raw).decode()})"


def _core_record(message: str, fields: dict) -> logging.LogRecord:
    record = logging.LogRecord("temporalio.core", logging.WARNING, "(sdk-core)", 0, f"[sdk_core::x] {message} "
                               f"{fields}", (), None)
    record.temporal_log = SimpleNamespace(message=message, fields=fields)
    return record


def test_the_core_s_late_completion_becomes_the_task_s_line_once():
    late = _core_record("Activity not found on completion. This may happen ...",
                        {"task_token": _token("wf-late", "a:run:1:task:t:1"), "details": "Status {...}"})
    assert LateCompletionFilter().filter(late)
    assert late.getMessage() == "task a:run:1:task:t:1 of execution wf-late cancelled: its execution had ended"
    again = _core_record("Activity not found on completion.", {"task_token": _token("wf-late", "a:run:1:task:t:1")})
    assert not LateCompletionFilter().filter(again)   # that task has its line
    other = _core_record("Failed to poll", {"task_token": _token("wf-late", "b")})
    assert LateCompletionFilter().filter(other) and "Failed to poll" in other.getMessage()


def test_an_unknown_child_pid_is_dropped_and_other_asyncio_records_kept():
    reaped = logging.LogRecord("asyncio", logging.WARNING, __file__, 1,
                               "Unknown child process pid %d, will report returncode 255", (1234,), None)
    other = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "Task exception was never retrieved", (), None)
    assert not ReapedChildFilter().filter(reaped) and ReapedChildFilter().filter(other)
