"""A task owns all of its processes: whatever it started dies when it ends, however it
detached (``setsid()``, ``nohup ... &``, ``setsid cmd &``), and when its worker is killed.

Real processes throughout: each detached process writes its pid to a file, and the test
checks ``/proc`` for it once the task is over.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from noetl_temporal.tools import ToolCall, _proc, run_tool
from tests.support.processes import pid_alive, processes_with_arg, wait_dead

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or _proc.die_with_parent() is None,
                                reason="subreapers and parent-death signals are Linux features")

#: python code that forks a child which leaves the task's session (setsid) and sleeps
DETACHING_PYTHON = textwrap.dedent("""
    import os, time
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:  # and a grandchild, whose parent then exits: a double fork
            with open({path!r} + ".grand", "w") as f:
                f.write(str(os.getpid()))
            time.sleep(60)
            os._exit(0)
        with open({path!r}, "w") as f:
            f.write(str(os.getpid()))
        time.sleep(60)
        os._exit(0)
    while not os.path.exists({path!r}) or not os.path.exists({path!r} + ".grand"):
        time.sleep(0.01)
    result = {{"child": pid}}
    {tail}
""")

#: shell commands that leave the task in the background, each writing its pid
DETACHING_SHELL = ("nohup sh -c 'echo $$ > {d}/nohup.pid; exec sleep 60' >/dev/null 2>&1 & "
                   "setsid sh -c 'echo $$ > {d}/setsid.pid; exec sleep 60' >/dev/null 2>&1 & "
                   "while [ ! -s {d}/nohup.pid ] || [ ! -s {d}/setsid.pid ]; do sleep 0.02; done; echo started")


def _pids(*paths: Path) -> list[int]:
    return [int(p.read_text()) for p in paths]


async def _assert_all_gone(pids: list[int]) -> None:
    try:
        for pid in pids:
            assert await wait_dead(pid, 2), f"process {pid} the task started outlived the task"
    finally:
        for pid in pids:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("forkserver", [True, False], ids=["forked", "spawned"])
async def test_python_task_setsid_children_die_when_it_completes(forkserver: bool, call: ToolCall, tmp_path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    if not forkserver:
        monkeypatch.setenv("NOETL_PYTHON_FORKSERVER", "0")
    path = tmp_path / "child.pid"
    out = await run_tool("python", {"code": DETACHING_PYTHON.format(path=str(path), tail="")}, call)
    assert out["status"] == "ok", out
    await _assert_all_gone(_pids(path, Path(f"{path}.grand")))


@pytest.mark.parametrize("forkserver", [True, False], ids=["forked", "spawned"])
async def test_python_task_setsid_children_die_on_timeout(forkserver: bool, call: ToolCall, tmp_path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    if not forkserver:
        monkeypatch.setenv("NOETL_PYTHON_FORKSERVER", "0")
    path = tmp_path / "child.pid"
    code = DETACHING_PYTHON.format(path=str(path), tail="time.sleep(60)")
    out = await run_tool("python", {"code": code, "timeout": 3}, call)
    assert out["status"] == "error" and out["error"]["kind"] == "timeout", out
    await _assert_all_gone(_pids(path, Path(f"{path}.grand")))


@pytest.mark.parametrize("forkserver", [True, False], ids=["forked", "reaper"])
async def test_shell_task_background_processes_die_when_it_completes(forkserver: bool, call: ToolCall, tmp_path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    if not forkserver:  # the command under a reaper process of its own
        monkeypatch.setenv("NOETL_PYTHON_FORKSERVER", "0")
    out = await run_tool("shell", {"cmd": DETACHING_SHELL.format(d=tmp_path)}, call)
    assert out["status"] == "ok", out
    assert out["result"]["stdout"].strip() == "started"
    await _assert_all_gone(_pids(tmp_path / "nohup.pid", tmp_path / "setsid.pid"))


@pytest.mark.parametrize("forkserver", [True, False], ids=["forked", "reaper"])
async def test_shell_task_background_processes_die_on_timeout(forkserver: bool, call: ToolCall, tmp_path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    if not forkserver:
        monkeypatch.setenv("NOETL_PYTHON_FORKSERVER", "0")
    cmd = DETACHING_SHELL.format(d=tmp_path) + "; sleep 60"
    out = await run_tool("shell", {"cmd": cmd, "timeout": 3}, call)
    assert out["status"] == "error" and out["error"]["kind"] == "timeout", out
    await _assert_all_gone(_pids(tmp_path / "nohup.pid", tmp_path / "setsid.pid"))


# A stand-in worker: runs one task that detaches processes, then waits for the test to kill it.
WORKER = textwrap.dedent("""
    import asyncio, os, sys
    from noetl_temporal.tools import ToolCall, run_tool

    kind, config = sys.argv[1], {}
    if kind in ("python-spawned", "shell-reaper"):
        os.environ["NOETL_PYTHON_FORKSERVER"] = "0"
    asyncio.run(run_tool("shell" if kind.startswith("shell") else "python", eval(sys.argv[2]),
                         ToolCall(execution_id="e", step="s", task="t")))
""")


def _wait_for_files(paths: list[Path], worker: subprocess.Popen) -> list[int]:
    deadline = time.monotonic() + 30
    while not all(p.exists() and p.read_text().strip() for p in paths):
        assert worker.poll() is None, worker.stderr.read().decode() if worker.stderr else "worker exited"
        assert time.monotonic() < deadline, "the task never started its processes"
        time.sleep(0.05)
    return _pids(*paths)


@pytest.mark.parametrize("kind", ["python", "python-spawned", "shell", "shell-reaper"])
async def test_detached_processes_die_when_the_worker_is_killed(kind: str, tmp_path) -> None:
    if kind.startswith("shell"):
        config = {"cmd": DETACHING_SHELL.format(d=tmp_path) + "; sleep 60"}
        files = [tmp_path / "nohup.pid", tmp_path / "setsid.pid"]
    else:
        path = tmp_path / "child.pid"
        config = {"code": DETACHING_PYTHON.format(path=str(path), tail="time.sleep(60)")}
        files = [path, Path(f"{path}.grand")]
    worker = subprocess.Popen([sys.executable, "-c", WORKER, kind, repr(config)], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    pids: list[int] = []
    try:
        pids = _wait_for_files(files, worker)
        assert all(pid_alive(pid) for pid in pids)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
        await _assert_all_gone(pids)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        if worker.stderr is not None:
            worker.stderr.close()
        for pid in pids:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)


async def test_a_background_process_that_keeps_forking_is_swept_whole(call: ToolCall, tmp_path) -> None:
    # A detached loop that starts a new detached sleeper every 10 ms, and a double fork:
    # everything carries the marker in its argv, so whatever survives is found.
    marker = f"3600.{os.getpid()}{time.monotonic_ns() % 10**6}"
    cmd = (f"setsid sh -c 'while true; do setsid sleep $1 & sleep 0.01; done' loop {marker} >/dev/null 2>&1 & "
           f"sh -c 'setsid sleep {marker} &' ; sleep 0.3; echo started")
    out = await run_tool("shell", {"cmd": cmd}, call)
    assert out["status"] == "ok", out
    started = time.monotonic()
    survivors = processes_with_arg(marker)
    while survivors and time.monotonic() - started < 2:
        time.sleep(0.05)
        survivors = processes_with_arg(marker)
    for pid in sorted(survivors, key=lambda p: Path(f"/proc/{p}/comm").read_text() != "sh\n"):
        with contextlib.suppress(ProcessLookupError, FileNotFoundError):  # the loop first
            os.kill(pid, signal.SIGKILL)
    for pid in processes_with_arg(marker):
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"{len(survivors)} processes the task started outlived it"
