"""A worker killed mid-pipeline: another worker finishes the execution, and every task
that had completed ran exactly once (the pipeline resumes at the task that was running)."""

from __future__ import annotations

import asyncio
import os
import signal
import textwrap

import pytest

from noetl_temporal.client.connect import start_execution
from noetl_temporal.dsl import load_playbook_text
from tests.support.cli_process import spawn_worker

pytestmark = pytest.mark.temporal



async def test_worker_killed_mid_pipeline_resumes_at_the_running_task(temporal, task_queue, tmp_path):
    log = tmp_path / "log"
    marker = tmp_path / "second-attempt"
    playbook = load_playbook_text(textwrap.dedent(f"""
    workflow:
      - step: pipe
        tool:
          - name: t1
            kind: shell
            cmd: echo t1 >> {log}
          - name: t2
            kind: python
            code: |
              import os, time
              with open({str(log)!r}, "a") as fh:
                  fh.write("t2-start\\n")
              if not os.path.exists({str(marker)!r}):
                  open({str(marker)!r}, "w").close()
                  time.sleep(60)          # the worker dies while this runs
              with open({str(log)!r}, "a") as fh:
                  fh.write("t2-done\\n")
              result = "ok"
          - name: t3
            kind: shell
            cmd: echo t3 >> {log}
    """)).playbook
    first = spawn_worker(temporal.address, task_queue)
    second = None
    try:
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue,
                                       heartbeat_timeout_s=2, execution_timeout_s=90)
        for _ in range(300):
            if log.exists() and "t2-start" in log.read_text():
                break
            await asyncio.sleep(0.1)
        assert "t2-start" in log.read_text(), first.stderr.read().decode() if first.poll() is not None else ""
        os.killpg(first.pid, signal.SIGKILL)          # the worker and everything it started
        first.wait()
        second = spawn_worker(temporal.address, task_queue)
        output = await asyncio.wait_for(handle.result(), timeout=60)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert output["state"] == "COMPLETED"
    lines = log.read_text().split()
    assert lines.count("t1") == 1                     # completed before the crash: not rerun
    assert lines.count("t2-start") == 2               # the running task ran again ...
    assert lines.count("t2-done") == 1                # ... and completed once
    assert lines.count("t3") == 1
    assert lines.index("t3") > lines.index("t2-done")
