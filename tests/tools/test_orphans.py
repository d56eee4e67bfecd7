"""Tool subprocesses die with the worker: a SIGKILLed parent leaves no child running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from noetl_temporal.tools import _proc
from tests.support.processes import pid_alive, wait_dead

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or _proc.die_with_parent() is None,
                                reason="parent-death signals are a Linux feature")

# A stand-in worker: runs one tool whose child sleeps, prints the child's pid, waits.
PARENT = textwrap.dedent("""
    import asyncio, sys
    from noetl_temporal.tools import ToolCall, run_tool

    async def main(kind, config):
        call = ToolCall(execution_id="e", step="s", task="t")
        task = asyncio.ensure_future(run_tool(kind, config, call))
        await task

    kind = sys.argv[1]
    if kind == "shell":
        config = {"cmd": "echo $$ > " + sys.argv[2] + "; exec sleep 60"}
    else:
        config = {"code": "import os, time\\nopen(%r, 'w').write(str(os.getpid()))\\ntime.sleep(60)" % sys.argv[2]}
    asyncio.run(main(kind, config))
""")


def _child_pid(path: str, parent: subprocess.Popen) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if os.path.exists(path) and open(path).read().strip():
            return int(open(path).read().strip())
        assert parent.poll() is None, parent.stderr.read().decode() if parent.stderr else "parent exited"
        time.sleep(0.05)
    raise AssertionError("the tool child never started")


@pytest.mark.parametrize("kind", ["shell", "python"])
async def test_child_dies_when_the_worker_is_killed(kind: str, tmp_path) -> None:
    pidfile = str(tmp_path / "child.pid")
    parent = subprocess.Popen([sys.executable, "-c", PARENT, kind, pidfile], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    child = None
    try:
        child = _child_pid(pidfile, parent)
        assert pid_alive(child)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        assert await wait_dead(child, 5), f"{kind} child {child} outlived its killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if child is not None and pid_alive(child):
            os.kill(child, signal.SIGKILL)
