"""The python tool's fork server and in-worker mode: real processes, nothing mocked.

A forked child must behave exactly like a process started for the task (one task, then
gone; own session; killed with its group on timeout and cancellation; output captured;
the task's working directory; nothing of the worker or of earlier tasks inherited), and
the fork server must never outlive its worker or event loop, and come back when killed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from noetl_temporal.tools import ToolCall, _workdirs, aclose_clients, run_tool
from noetl_temporal.tools.python import forkserver
from noetl_temporal.tools.shell import SHELL
from tests.support.processes import pid_alive, wait_dead

PROBE = ("import os, sys, threading\n"
         "result = {'pid': os.getpid(), 'ppid': os.getppid(), 'sid': os.getsid(0), 'cwd': os.getcwd(),"
         " 'path0': sys.path[0], 'argv': sys.argv, 'stdin': sys.stdin.read(),"
         " 'threads': threading.active_count(),"
         " 'worker_modules': sorted(m for m in ('asyncio', 'temporalio', 'noetl_temporal') if m in sys.modules),"
         " 'fds': sorted(int(f) for f in os.listdir('/proc/self/fd'))}")


async def py(call: ToolCall, code: str, **config) -> dict:
    return await run_tool("python", {"code": code, **config}, call)


async def probe(call: ToolCall, **config) -> dict:
    out = await py(call, PROBE, **config)
    assert out["status"] == "ok", out
    return out["result"]


#: a task's code: its parent's parent (a spawned runner runs under the reaper, ``_proc.reaped``)
GRANDPARENT = ("import os\n"
               "grandparent = int(open(f'/proc/{os.getppid()}/stat').read().rsplit(')', 1)[-1].split()[1])\n")


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[-1].split()
            except OSError:
                continue
            if int(stat[1]) == pid and stat[0] != "Z":
                found.append(int(entry))
    return found


async def test_a_forked_child_serves_one_task_in_a_clean_process(call: ToolCall) -> None:
    first = await probe(call)
    server = forkserver.server_pid()
    assert server is not None and first["ppid"] == server  # forked by the fork server, not the worker
    assert first["ppid"] != os.getpid()
    assert first["sid"] == first["pid"]  # a session (and process group) of its own
    # its own empty temporary directory, afterwards removed or kept empty for the next task
    assert os.path.basename(first["cwd"]).startswith("noetl-py-")
    assert not os.path.exists(first["cwd"]) or (first["cwd"] in _workdirs._free and not os.listdir(first["cwd"]))
    assert first["path0"] == "" and first["argv"] == ["<python step_a.task_0>"] and first["stdin"] == ""
    # nothing of the worker: no threads, no event loop, no worker modules; no descriptor
    # of the server: stdin/stdout/stderr and the (close-on-exec) response pipe only
    assert first["threads"] == 1 and first["worker_modules"] == []
    assert len([fd for fd in first["fds"] if fd > 2]) <= 2, first["fds"]  # response pipe + listdir's own
    assert await wait_dead(first["pid"]), "a forked process outlived its task"
    second = await probe(call)
    assert second["pid"] != first["pid"] and second["ppid"] == server  # never reused, same server


async def test_the_warm_up_leaves_nothing_a_task_can_see(call: ToolCall) -> None:
    """Spares go through a small task before theirs (``runner.warm``), off its path."""
    code = ("import sys\n"
            "mod = sys.modules['__noetl_task__']\n"
            "print('only this')\n"
            "result = {'main': 'main' in globals(), 'n': 'n' in globals(), 'own_module': mod.__dict__ is globals(),"
            " 'argv': sys.argv, 'line_buffered': sys.stdout.line_buffering}")
    for _ in range(3):  # the first spare (warmed at start) and replacements after a task's exit
        out = await py(call, code)
        assert out["status"] == "ok", out
        assert out["result"] == {"main": False, "n": False, "own_module": True,
                                 "argv": ["<python step_a.task_0>"], "line_buffered": True}
        assert out["py"]["stdout"] == "only this\n" and out["py"]["stderr"] == ""
        await asyncio.sleep(0.05)


async def test_a_burst_takes_fresh_spares_without_waiting_for_a_warm_up(call: ToolCall) -> None:
    outs = await asyncio.gather(*(py(call, "import os\nresult = os.getpid()") for _ in range(20)))
    assert all(o["status"] == "ok" for o in outs)
    assert len({o["result"] for o in outs}) == 20  # a process each


async def test_output_and_workdir_imports(call: ToolCall, tmp_path: Path) -> None:
    (tmp_path / "noetl_fork_helper.py").write_text("VALUE = 42\n")
    call.workdir = str(tmp_path)
    code = "import os, sys, noetl_fork_helper\nprint('out')\nprint('err', file=sys.stderr)\n" \
           "result = [os.getcwd(), noetl_fork_helper.VALUE]"
    out = await py(call, code)
    assert out["status"] == "ok", out
    assert out["result"] == [str(tmp_path), 42]
    assert out["py"]["stdout"] == "out\n" and out["py"]["stderr"] == "err\n" and out["py"]["returncode"] == 0


async def test_leaked_globals_and_module_state_do_not_reach_the_next_task(call: ToolCall) -> None:
    polluter = ("import json, builtins, os, sys\n"
                "json.dumps = lambda *a, **k: 'hijacked'\n"
                "builtins.LEAK = 'leaked'\n"
                "os.environ['NOETL_LEAK'] = '1'\n"
                "sys.path.insert(0, '/nowhere')\n"
                "os.chdir('/')\n"
                "leaked_global = 1\n"
                "result = 'polluted'")
    assert (await py(call, polluter))["result"] == "polluted"
    check = ("import json, builtins, os, sys\n"
             "result = [json.dumps([1]), hasattr(builtins, 'LEAK'), os.environ.get('NOETL_LEAK'),"
             " '/nowhere' in sys.path, 'leaked_global' in globals(), os.getcwd() == '/']")
    assert (await py(call, check))["result"] == ["[1]", False, None, False, False, False]


async def test_crash_exit_and_hang_leave_the_server_and_the_next_task_unharmed(call: ToolCall) -> None:
    await probe(call)
    server = forkserver.server_pid()
    seg = await py(call, "import ctypes\nctypes.string_at(0)")  # a real segfault in C code
    assert seg["error"]["code"] == "SIGSEGV", seg
    exited = await py(call, "import os\nos._exit(9)")
    assert exited["error"]["code"] == "ProcessExit" and exited["py"]["returncode"] == 9
    sysexit = await py(call, "import sys\nsys.exit(4)")
    assert sysexit["error"]["code"] == "SystemExit"
    t0 = time.monotonic()
    hung = await py(call, "while True:\n    pass", timeout=1)
    assert hung["error"]["kind"] == "timeout" and time.monotonic() - t0 < 15
    assert forkserver.server_pid() == server and pid_alive(server)  # the same fork server throughout
    after = await probe(call)
    assert after["ppid"] == server


async def test_a_task_with_its_own_env_gets_its_own_process(call: ToolCall) -> None:
    await probe(call)
    out = await py(call, GRANDPARENT + "result = [grandparent, os.environ['NOETL_FORK_X']]", env={"NOETL_FORK_X": 1})
    assert out["result"] == [os.getpid(), "1"]  # started for it by the worker, under a reaper


async def test_an_environment_change_starts_a_new_server_and_retires_the_old(
        call: ToolCall, monkeypatch: pytest.MonkeyPatch) -> None:
    await probe(call)
    old = forkserver.server_pid()
    monkeypatch.setenv("NOETL_FORK_MARK", "after")
    out = await py(call, "import os\nresult = [os.getppid(), os.environ.get('NOETL_FORK_MARK')]")
    new = forkserver.server_pid()
    assert new != old and out["result"] == [new, "after"]
    assert await wait_dead(old, 15), "the retired fork server was kept"


async def test_disabled_fork_server_starts_a_process_per_task(call: ToolCall, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(forkserver.ENV_SWITCH, "0")
    out = await py(call, GRANDPARENT + "result = [grandparent, os.getsid(0) == os.getppid()]")
    # The worker starts a reaper in a session of its own, the reaper starts the runner.
    assert out["result"] == [os.getpid(), True]


async def test_a_killed_server_is_replaced_and_its_running_task_fails(call: ToolCall, tmp_path: Path) -> None:
    await probe(call)
    server = forkserver.server_pid()
    call.workdir = str(tmp_path)
    task = asyncio.ensure_future(py(call, "import os, time\nopen('pid', 'w').write(str(os.getpid()))\ntime.sleep(60)"))
    pid_file = tmp_path / "pid"
    for _ in range(500):
        if pid_file.exists() and pid_file.read_text():
            break
        await asyncio.sleep(0.02)
    child = int(pid_file.read_text())
    os.kill(server, signal.SIGKILL)
    out = await asyncio.wait_for(task, 10)
    assert out["status"] == "error" and out["error"]["code"] == "SIGKILL", out
    assert await wait_dead(child), "a forked child outlived its fork server"
    call.workdir = None
    after = await probe(call)
    assert after["ppid"] not in (server, os.getpid()) and after["ppid"] == forkserver.server_pid()


async def test_timeout_kills_a_forked_process_and_its_group(call: ToolCall, tmp_path: Path) -> None:
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
    assert await wait_dead(pid) and await wait_dead(grandchild), "the forked process group survived its timeout"


async def test_closing_leaves_no_process(call: ToolCall) -> None:
    await probe(call)
    server = forkserver.server_pid()
    end = time.monotonic() + 10
    while not (spares := children_of(server)):
        assert time.monotonic() < end, "the fork server keeps children forked ahead of time"
        await asyncio.sleep(0.05)
    await aclose_clients()  # what a worker calls on shutdown
    assert await wait_dead(server)
    for pid in spares:
        assert await wait_dead(pid), f"spare {pid} survived the fork server's shutdown"
    assert (await py(call, "result = 'again'"))["result"] == "again"  # the next task starts a new one
    assert forkserver.server_pid() not in (None, server)


async def test_a_finished_event_loop_takes_its_server_along(call: ToolCall) -> None:
    async def worker() -> int:
        c = ToolCall(execution_id="e", step="s", task="t")
        assert (await run_tool("python", {"code": "result = 1"}, c))["result"] == 1
        return forkserver.server_pid()

    server = await asyncio.to_thread(asyncio.run, worker())  # no explicit close
    assert await wait_dead(server, 15), "a fork server outlived its event loop"


async def test_fifty_in_flight(call: ToolCall) -> None:
    outs = await asyncio.gather(*[py(call, "import os\nresult = [n * n, os.getpid()]", input={"n": n})
                                  for n in range(50)])
    assert [o["result"][0] for o in outs] == [n * n for n in range(50)]
    assert len({o["result"][1] for o in outs}) == 50  # one process each


# ------------------------------------------------------------------ in-worker mode


async def test_in_worker_runs_in_the_worker(call: ToolCall) -> None:
    out = await py(call, "import os\ndef main(n):\n    return [n * 2, os.getpid()]", input={"n": 21}, in_worker=True)
    assert out["status"] == "ok", out
    assert out["result"] == [42, os.getpid()]
    assert "__noetl_task__" not in __import__("sys").modules  # the task's module is not kept


async def test_in_worker_errors_keep_the_envelope(call: ToolCall) -> None:
    out = await py(call, "x = 1\nraise ValueError('bad')", in_worker=True)
    assert out["error"]["code"] == "ValueError" and out["error"]["message"] == "ValueError: bad (line 2)"
    assert out["error"]["details"]["line"] == 2
    ex = await py(call, "import sys\nsys.exit(3)", in_worker=True)  # caught: the worker lives on
    assert ex["error"]["code"] == "SystemExit"
    slow = await py(call, "import time\ntime.sleep(1.5)\nresult = 1", in_worker=True, timeout=0.3)
    assert slow["error"]["kind"] == "timeout" and "in_worker" in slow["error"]["message"]
    bad = await py(call, "result = 1", in_worker=True, env={"A": "1"})
    assert bad["error"]["kind"] == "config"
    assert (await py(call, "result = 1", in_worker="yes"))["error"]["kind"] == "config"


async def test_in_worker_code_compiled_once_behaves_as_in_a_process(call: ToolCall) -> None:
    """The in-worker mode reuses the compiled code of a task it ran before: a second run
    gets fresh globals, a syntax error is answered as a process answers it, and the code
    does not inherit the worker module's ``from __future__ import annotations``."""
    code = "count = globals().get('count', 0) + 1\ndef main(x: int):\n    return [count, main.__annotations__['x'] is int]"
    for _ in range(2):
        out = await py(call, code, input={"x": 1}, in_worker=True)
        assert out["result"] == [1, True], out
    assert out["result"] == (await py(call, code, input={"x": 1}))["result"]
    broken = "def main(:\n    pass"
    assert (await py(call, broken, in_worker=True))["error"] == (await py(call, broken))["error"]


async def test_in_worker_task_cancelled_before_a_thread_takes_it_never_runs(call: ToolCall, tmp_path: Path) -> None:
    from noetl_temporal.tools.python.inworker import IN_WORKER_THREADS

    # every thread busy for a while, then one more task, cancelled while it queues
    busy = [asyncio.ensure_future(py(call, "import time\ntime.sleep(0.8)\nresult = 1", in_worker=True))
            for _ in range(IN_WORKER_THREADS)]
    marker = tmp_path / "ran"
    queued = asyncio.ensure_future(py(call, f"open({str(marker)!r}, 'w').write('x')\nresult = 1", in_worker=True))
    await asyncio.sleep(0.2)
    queued.cancel()
    with pytest.raises(asyncio.CancelledError):
        await queued
    assert [(await b)["result"] for b in busy] == [1] * IN_WORKER_THREADS
    await asyncio.sleep(0.3)  # a thread is free: a task still queued would run now
    assert not marker.exists(), "a cancelled in-worker task ran after all"
    assert (await py(call, "result = 2", in_worker=True))["result"] == 2  # and the threads serve on


# In a fresh interpreter of its own: a script that runs in-worker tasks and prints.
IN_WORKER_SCRIPT = ("import asyncio, os\n"
                    "from noetl_temporal.tools import ToolCall, run_tool\n"
                    "async def go(code, timeout, **input):\n"
                    "    out = await run_tool('python', {'code': code, 'input': input, 'in_worker': True,"
                    " 'timeout': timeout}, ToolCall(execution_id='e', step='s', task='t'))\n"
                    "    return out.get('result'), (out.get('error') or {}).get('kind')\n")


def run_script(tmp_path: Path, script: str) -> list[str]:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", IN_WORKER_SCRIPT + script], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])))
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_runaway_in_worker_task_does_not_keep_the_process_from_exiting(tmp_path: Path) -> None:
    # asyncio.run returns after the task's timeout; the interpreter must then exit (the
    # code's thread runs on, so it has to be a daemon thread, not a joined pool thread).
    assert run_script(tmp_path, "print(asyncio.run(go('while True:\\n    pass', 0.3)), flush=True)\n") \
        == ["(None, 'timeout')"]


def test_in_worker_mode_serves_a_forked_copy_of_the_worker(tmp_path: Path) -> None:
    # The threads do not survive a fork; the copy must start its own instead of queueing
    # its tasks for threads that are not there (they would time out).
    add_one = "'def main(n):\\n    return n + 1'"
    assert run_script(tmp_path, f"print('parent', asyncio.run(go({add_one}, 5, n=1)), flush=True)\n"
                                "pid = os.fork()\n"
                                "if pid == 0:\n"
                                f"    print('child', asyncio.run(go({add_one}, 5, n=2)), flush=True)\n"
                                "    os._exit(0)\n"
                                "os.waitpid(pid, 0)\n") == ["parent (2, None)", "child (3, None)"]


WRITES = ("import os\n"
          "before = sorted(os.listdir('.'))\n"
          "open('left-behind.txt', 'w').write('x')\n"
          "result = {'cwd': os.getcwd(), 'before': before}")


async def test_every_task_starts_in_an_empty_directory_even_when_directories_are_reused(call: ToolCall) -> None:
    seen = []
    for _ in range(3):  # each task finds its directory empty, though the last one wrote a file
        out = await py(call, WRITES)
        assert out["status"] == "ok" and out["result"]["before"] == [], out
        seen.append(out["result"]["cwd"])
        assert not os.path.exists(seen[-1])  # it was not empty: removed, never handed out again
    empty = [(await py(call, "import os\nresult = os.getcwd()"))["result"] for _ in range(3)]
    assert len(set(empty)) == 1 and os.path.isdir(empty[0])  # left empty: reused
    assert not set(empty) & set(seen)


async def test_a_reused_directory_is_checked_again_when_handed_out(call: ToolCall) -> None:
    path = (await py(call, "import os\nresult = os.getcwd()"))["result"]
    assert path in _workdirs._free
    Path(path, "late.txt").write_text("a process of the earlier task wrote after it answered")
    out = await py(call, "import os\nresult = [os.getcwd(), os.listdir('.')]")
    assert out["result"][1] == [] and out["result"][0] != path and not os.path.exists(path)


async def test_a_directory_whose_mode_the_task_changed_is_not_reused(call: ToolCall) -> None:
    out = await py(call, "import os\nos.chmod('.', 0o755)\nresult = os.getcwd()")
    assert out["status"] == "ok" and not os.path.exists(out["result"])


async def test_closing_the_tools_removes_kept_directories(call: ToolCall) -> None:
    path = (await py(call, "import os\nresult = os.getcwd()"))["result"]
    assert os.path.isdir(path)
    await aclose_clients()
    assert not os.path.exists(path) and _workdirs._free == []



async def test_ps_shows_the_fork_server_by_name_not_by_its_source(call: ToolCall) -> None:
    """`ps` prints /proc/PID/cmdline: the fork server (and each process forked from it,
    the spare waiting for a task included) used to show zygote.py's whole text, as it was
    started with `python -c <text>`."""
    await probe(call)
    server = forkserver.server_pid()
    assert server is not None
    for pid in (server, *children_of(server)):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().rstrip("\0").split("\0")
        except FileNotFoundError:   # a process of an earlier task, gone since it was listed
            continue
        if argv[0] == SHELL:   # an earlier test's shell task, still leaving: its process is the command
            continue
        assert "-c" not in argv and len(" ".join(argv)) < 400, argv
        assert argv[argv.index(forkserver.ZYGOTE_PATH) + 1] == forkserver.RUNNER_PATH, argv
    # run as a script, its directory is not left on a task's sys.path
    imported = await py(call, "import zygote")
    assert imported["status"] == "error" and "zygote" in str(imported["error"]), imported
