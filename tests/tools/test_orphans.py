"""Tool subprocesses die with the worker: a SIGKILLed parent leaves no child running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from noetl_temporal.tools import _proc
from noetl_temporal.tools.python.zygote import SPARES
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
        if kind == "python-spawned":  # a process of its own instead of a forked one
            import os
            os.environ["NOETL_PYTHON_FORKSERVER"] = "0"
            kind = "python"
        task = asyncio.ensure_future(run_tool(kind, config, call))
        await task

    kind = sys.argv[1]
    if kind == "shell":
        config = {"cmd": "echo $$ > " + sys.argv[2] + "; exec sleep 60"}
    else:
        config = {"code": "import os, time\\nopen(%r, 'w').write(str(os.getpid()))\\ntime.sleep(60)" % sys.argv[2]}
    asyncio.run(main(kind, config))
""")

# A stand-in worker with a running fork server (and its children forked ahead of time).
# A forked helper keeps copies of every descriptor, so the fork server's sockets stay open
# after the worker dies: only the parent-death signals can end it and its children.
FORK_PARENT = textwrap.dedent("""
    import asyncio, json, os, sys, time
    from noetl_temporal.tools import ToolCall, run_tool
    from noetl_temporal.tools.python import forkserver
    from noetl_temporal.tools.python.zygote import SPARES

    def children(pid):
        out = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[-1].split()
                except OSError:
                    continue
                if int(stat[1]) == pid and stat[0] != "Z":  # not a task's process being reaped
                    out.append(int(entry))
        return out

    async def main(path):
        out = await run_tool("python", {"code": "result = 1"}, ToolCall(execution_id="e", step="s", task="t"))
        assert out["status"] == "ok", out
        server = forkserver.server_pid()
        # The task's process leaves, then its spare is replaced: wait for a set that stays.
        spares = []
        while len(spares) < SPARES or children(server) != spares:
            spares = children(server)
            await asyncio.sleep(0.1)
        holder = os.fork()
        if holder == 0:
            time.sleep(60)
            os._exit(0)
        with open(path + ".tmp", "w") as fh:
            json.dump({"server": server, "spares": spares, "holder": holder}, fh)
        os.rename(path + ".tmp", path)
        await asyncio.sleep(60)

    asyncio.run(main(sys.argv[1]))
""")


def _child_pid(path: str, parent: subprocess.Popen) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        text = Path(path).read_text().strip() if os.path.exists(path) else ""
        if text:
            return int(text)
        assert parent.poll() is None, parent.stderr.read().decode() if parent.stderr else "parent exited"
        time.sleep(0.05)
    raise AssertionError("the tool child never started")


@pytest.mark.parametrize("kind", ["shell", "python", "python-spawned"])
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
        if parent.stderr is not None:
            parent.stderr.close()
        if child is not None and pid_alive(child):
            os.kill(child, signal.SIGKILL)


async def test_the_fork_server_and_its_children_die_when_the_worker_is_killed(tmp_path) -> None:
    info = tmp_path / "server.json"
    parent = subprocess.Popen([sys.executable, "-c", FORK_PARENT, str(info)], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 20
        while not info.exists():
            assert parent.poll() is None, parent.stderr.read().decode() if parent.stderr else "parent exited"
            assert time.monotonic() < deadline, "the fork server never started"
            time.sleep(0.05)
        data = json.loads(info.read_text())
        server, spares, holder = data["server"], data["spares"], data["holder"]
        pids = [server, *spares, holder]
        assert len(spares) >= SPARES >= 1 and all(pid_alive(pid) for pid in pids)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        for pid in [server, *spares]:
            assert await wait_dead(pid, 5), f"fork server process {pid} outlived its killed worker"
        assert pid_alive(holder)  # its sockets were still open: the parent-death signals did it
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if parent.stderr is not None:
            parent.stderr.close()
        for pid in pids:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
