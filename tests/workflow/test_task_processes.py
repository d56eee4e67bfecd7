"""A run's tasks own their processes: after the run COMPLETED, nothing a python or shell
task started in the background (``setsid()``, ``nohup ... &``, ``setsid ... &``) still runs."""

from __future__ import annotations

import json
import os
import signal
import textwrap

import pytest

from tests.support.processes import pid_alive, wait_dead

pytestmark = pytest.mark.temporal


async def test_background_processes_are_gone_when_the_run_completes(run_yaml, tmp_path) -> None:
    code = textwrap.dedent(f"""
        import os, time
        pid = os.fork()
        if pid == 0:
            os.setsid()
            open({str(tmp_path / "py.pid")!r}, "w").write(str(os.getpid()))
            time.sleep(60)
            os._exit(0)
        while not os.path.exists({str(tmp_path / "py.pid")!r}):
            time.sleep(0.01)
        result = "forked"
    """)
    shell = (f"nohup sh -c 'echo $$ > {tmp_path}/nohup.pid; exec sleep 60' >/dev/null 2>&1 & "
             f"setsid sh -c 'echo $$ > {tmp_path}/setsid.pid; exec sleep 60' >/dev/null 2>&1 & "
             f"while [ ! -s {tmp_path}/nohup.pid ] || [ ! -s {tmp_path}/setsid.pid ]; do sleep 0.02; done")
    report = await run_yaml(f"""
    workflow:
      - step: start
        tool: {{kind: python, code: {json.dumps(code)}}}
        next: {{arcs: [{{step: sh}}]}}
      - step: sh
        tool: {{kind: shell, cmd: {json.dumps(shell)}}}
    """)
    pids = [int((tmp_path / name).read_text()) for name in ("py.pid", "nohup.pid", "setsid.pid")]
    try:
        assert report.state == "COMPLETED", report.error
        for pid in pids:
            assert await wait_dead(pid, 2), f"process {pid} outlived the run that started it"
    finally:
        for pid in pids:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
