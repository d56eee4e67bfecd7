"""The warm pool of python runner processes: real processes, nothing mocked.

A pooled process must behave exactly like one started for the task (one task, then
gone; own session; killed with its group on timeout and cancellation; output captured;
the task's working directory), and idle ones must never outlive the pool.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from noetl_temporal.tools import ToolCall, _pypool, aclose_clients, run_tool
from tests.support.processes import pid_alive, wait_dead


@pytest.fixture(autouse=True)
def _pool_of_two(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_pypool.POOL_ENV, "2")


async def py(call: ToolCall, code: str, **config) -> dict:
    return await run_tool("python", {"code": code, **config}, call)


async def full_pool(call: ToolCall, size: int = 2, seconds: float = 20.0) -> list[int]:
    """Run a task (which starts the pool) and wait until ``size`` processes are idle."""
    out = await py(call, "result = 1")
    assert out["status"] == "ok", out
    end = time.monotonic() + seconds
    while len(_pypool.idle_pids()) < size:
        assert time.monotonic() < end, f"the pool never filled: {_pypool.idle_pids()}"
        await asyncio.sleep(0.02)
    return _pypool.idle_pids()


async def test_a_pooled_process_serves_one_task_in_the_tasks_directory(call: ToolCall) -> None:
    idle = await full_pool(call)
    code = ("import os, sys\nprint('out')\nprint('err', file=sys.stderr)\n"
            "result = [os.getpid(), os.getcwd(), sys.path[0], sys.argv, sys.stdin.read()]")
    out = await py(call, code)
    assert out["status"] == "ok", out
    pid, cwd, path0, argv, stdin = out["result"]
    assert pid in idle
    # its own fresh temporary directory, removed afterwards, as for a process of its own
    assert os.path.basename(cwd).startswith("noetl-py-") and not os.path.exists(cwd)
    assert path0 == "" and argv == ["<python step_a.task_0>"] and stdin == ""
    assert out["py"]["stdout"] == "out\n" and out["py"]["stderr"] == "err\n"
    assert await wait_dead(pid), "a pooled process outlived its task"
    again = await py(call, "import os\nresult = os.getpid()")
    assert again["result"] != pid  # never reused


async def test_a_pooled_process_imports_from_the_workdir(call: ToolCall, tmp_path: Path) -> None:
    idle = await full_pool(call)
    (tmp_path / "noetl_pool_helper.py").write_text("VALUE = 42\n")
    call.workdir = str(tmp_path)
    out = await py(call, "import os, noetl_pool_helper\nresult = [os.getpid(), os.getcwd(), noetl_pool_helper.VALUE]")
    assert out["status"] == "ok", out
    assert out["result"][0] in idle
    assert out["result"][1:] == [str(tmp_path), 42]


async def test_idle_processes_wait_outside_any_task_directory(call: ToolCall) -> None:
    for pid in await full_pool(call):
        assert os.readlink(f"/proc/{pid}/cwd") == os.path.abspath(os.sep)
        assert os.getpgid(pid) == pid  # a session (and group) of its own


async def test_a_task_with_its_own_env_gets_its_own_process(call: ToolCall) -> None:
    idle = await full_pool(call)
    out = await py(call, "import os\nresult = [os.getpid(), os.environ['NOETL_POOL_X']]", env={"NOETL_POOL_X": 1})
    assert out["result"][1] == "1"
    assert out["result"][0] not in idle
    assert _pypool.idle_pids() == idle  # untouched


async def test_no_pooled_process_serves_after_an_environment_change(
        call: ToolCall, monkeypatch: pytest.MonkeyPatch) -> None:
    idle = await full_pool(call)
    monkeypatch.setenv("NOETL_POOL_MARK", "after")
    code = "import os\nresult = [os.getpid(), os.environ.get('NOETL_POOL_MARK')]"
    out = await py(call, code)
    assert out["result"][1] == "after" and out["result"][0] not in idle
    for pid in idle:
        assert await wait_dead(pid), "a stale pooled process was kept"
    fresh = await full_pool(call)
    assert not set(fresh) & set(idle)
    out = await py(call, code)
    assert out["result"] == [fresh[0], "after"]  # refilled with the new environment


async def test_size_from_the_environment_and_zero_disables(call: ToolCall, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_pypool.POOL_ENV, "3")
    idle = await full_pool(call, size=3)
    await asyncio.sleep(0.3)
    assert len(_pypool.idle_pids()) == 3  # bounded
    monkeypatch.setenv(_pypool.POOL_ENV, "0")
    out = await py(call, "import os\nresult = os.getpid()")
    assert out["result"] not in idle
    await asyncio.sleep(0.3)
    assert _pypool.idle_pids() == []
    for pid in idle:
        assert await wait_dead(pid)
    monkeypatch.setenv(_pypool.POOL_ENV, "not a number")
    assert _pypool.pool_size() == _pypool.DEFAULT_SIZE
    monkeypatch.setenv(_pypool.POOL_ENV, "100000")
    assert _pypool.pool_size() == _pypool.MAX_SIZE


async def test_a_dead_idle_process_is_never_handed_out(call: ToolCall) -> None:
    idle = await full_pool(call)
    os.kill(idle[0], signal.SIGKILL)
    assert await wait_dead(idle[0])
    await asyncio.sleep(0.2)  # the loop learns about the exit
    out = await py(call, "import os\nresult = os.getpid()")
    assert out["status"] == "ok", out
    assert out["result"] != idle[0]


async def test_timeout_kills_a_pooled_process_and_its_group(call: ToolCall, tmp_path: Path) -> None:
    idle = await full_pool(call)
    call.workdir = str(tmp_path)
    code = (
        "import os, subprocess, time\n"
        "p = subprocess.Popen(['sleep', '60'])\n"
        "open('pids', 'w').write(f'{os.getpid()} {p.pid}')\n"
        "print('started', flush=True)\n"
        "time.sleep(60)"
    )
    out = await py(call, code, timeout=1)
    assert out["error"]["kind"] == "timeout"
    assert out["py"]["stdout"] == "started\n"
    pid, grandchild = map(int, (tmp_path / "pids").read_text().split())
    assert pid in idle
    assert await wait_dead(pid) and await wait_dead(grandchild), "the pooled process group survived its timeout"


async def test_cancellation_kills_a_pooled_process(call: ToolCall, tmp_path: Path) -> None:
    idle = await full_pool(call)
    call.workdir = str(tmp_path)
    task = asyncio.ensure_future(py(call, "import os, time\nopen('pid', 'w').write(str(os.getpid()))\ntime.sleep(60)"))
    pid_file = tmp_path / "pid"
    for _ in range(500):
        if pid_file.exists() and pid_file.read_text():
            break
        await asyncio.sleep(0.02)
    pid = int(pid_file.read_text())
    assert pid in idle
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_dead(pid)


async def test_closing_the_pool_leaves_no_process(call: ToolCall) -> None:
    idle = await full_pool(call)
    await aclose_clients()  # what a worker calls on shutdown
    assert _pypool.idle_pids() == []
    for pid in idle:
        assert not pid_alive(pid), f"pooled process {pid} survived the pool's shutdown"
    # the next task starts a new pool
    assert (await py(call, "result = 'again'"))["result"] == "again"
    assert await full_pool(call)
    await _pypool.aclose_pool()
    assert _pypool.idle_pids() == []


async def test_a_finished_event_loop_takes_its_pool_along(call: ToolCall) -> None:
    async def worker() -> list[int]:
        return await full_pool(ToolCall(execution_id="e", step="s", task="t"))

    idle = await asyncio.to_thread(asyncio.run, worker())  # no explicit close
    assert len(idle) == 2
    for pid in idle:
        assert await wait_dead(pid), "a pooled process outlived its event loop"
