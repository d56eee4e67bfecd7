"""Runner processes of the python tool, and a small warm pool of them.

Starting an interpreter costs tens of milliseconds (most of it ``site``), paid by every
``kind: python`` task. So each event loop keeps a few runner processes started ahead of
time (``NOETL_PYTHON_POOL``, default 2, 0 disables): a task takes one if there is one,
and the pool is refilled in the background.

Isolation is the same as for a process started for the task:

* a pooled process has run nothing but the runner's start-up; it waits for its request
  on stdin, and the code, parameters and working directory only arrive with it (the
  runner enters the task's directory first). It serves exactly that one task and exits:
  a process is taken out of the pool, never put back;
* it is started by the same ``_proc.start`` (own session, ``PR_SET_PDEATHSIG``), and the
  task then kills its whole group on timeout or cancellation, as for any other runner;
* its environment is fixed when it starts, so a task may take it only when the task's
  environment equals it: a task with ``env:`` of its own, or any task after the
  worker's ``os.environ`` changed, gets a process started for it. Stale idle processes
  are dropped and replaced.

Idle processes end with :func:`aclose_pool` (``tools.aclose_clients()`` calls it), when
their loop shuts down (``asyncio.run`` cancels the pool's keeper task, which kills them
on its way out), with the worker (``PR_SET_PDEATHSIG``), and on EOF of their stdin,
which is what they see when the worker is gone on a platform without parent-death
signals.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import signal
import sys
import weakref
from collections.abc import Callable
from pathlib import Path

from . import _proc

log = logging.getLogger(__name__)

RUNNER = (Path(__file__).with_name("_pyrunner.py")).read_text(encoding="utf-8")
#: environment variable with the number of idle processes kept per event loop
POOL_ENV = "NOETL_PYTHON_POOL"
DEFAULT_SIZE = 2
MAX_SIZE = 16
#: where pooled processes start (the runner enters the task's directory later): a
#: directory no task owns, so nothing is imported from it and nothing keeps it busy
IDLE_CWD = os.path.abspath(os.sep)
#: how long to wait for killed processes to be reaped when the pool closes
CLOSE_WAIT = 5.0
#: the refill after a take waits for the task's process to finish, at most this long:
#: starting an interpreter (the fork blocks the event loop, start-up takes a CPU) must
#: not slow down the task that just got a warm one
REFILL_DELAY = 0.05


def base_env() -> dict[str, str]:
    """The environment of a task without ``env:``, i.e. of a pooled process."""
    env = dict(os.environ)
    env.setdefault("PYTHONIOENCODING", "utf-8")  # prints of any text work under a C/latin-1 locale
    return env


def pool_size() -> int:
    raw = os.environ.get(POOL_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_SIZE
    try:
        return max(0, min(int(raw), MAX_SIZE))
    except ValueError:
        log.warning("%s=%r is not a number; using %d", POOL_ENV, raw, DEFAULT_SIZE)
        return DEFAULT_SIZE


class Runner:
    """A started runner process and the parent's ends of its pipes (owned until attached)."""

    __slots__ = ("proc", "env", "_fds")

    def __init__(self, proc: asyncio.subprocess.Process, env: dict[str, str],
                 out_fd: int, err_fd: int, resp_fd: int) -> None:
        self.proc = proc
        self.env = env
        self._fds: tuple[int, int, int] | None = (out_fd, err_fd, resp_fd)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def attach(self, out: Callable[[bytes], None], err: Callable[[bytes], None],
               response: Callable[[bytes], None]) -> _proc.Pumps:
        """Start reading stdout, stderr and the response pipe; the pumps own them now."""
        assert self._fds is not None, "a runner serves one task"
        out_fd, err_fd, resp_fd = self._fds
        self._fds = None
        pumps = _proc.Pumps()
        pumps.add(out_fd, out)
        pumps.add(err_fd, err)
        pumps.add(resp_fd, response)
        return pumps

    def discard(self) -> None:
        """Kill an unused runner (its whole group) and close the parent's ends."""
        _proc.kill_group(self.proc, signal.SIGKILL)
        if self._fds is not None:
            for fd in self._fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._fds = None
        if self.proc.stdin is not None:
            self.proc.stdin.close()


async def start_runner(env: dict[str, str], *, cwd: str, warm: bool = False) -> Runner:
    """Start ``python -c RUNNER <fd>``; ``warm`` for a process that will wait in the pool.

    A warm process sets its parent-death signal itself, before anything else, and exits
    if this process is already gone by then: the same guarantee as the ``preexec_fn`` a
    task's own process gets, without the ``fork`` that blocks the event loop (about 5 ms
    for a worker-sized process) every time the pool is refilled.
    """
    r_fd, w_fd = os.pipe()
    argv = [sys.executable, "-c", RUNNER, str(w_fd)]
    if warm:
        argv += ["warm", str(os.getpid())]
    try:
        proc, out_fd, err_fd = await _proc.start(argv, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE,
                                                 pass_fds=(w_fd,), child_sets_pdeathsig=warm)
    except BaseException:
        os.close(r_fd)
        raise
    finally:
        os.close(w_fd)  # only the child may hold the write end, or EOF never comes
    return Runner(proc, env, out_fd, err_fd, r_fd)


class Pool:
    """The idle runners of one event loop and the task that keeps them topped up."""

    def __init__(self) -> None:
        self.idle: list[Runner] = []
        self._wake = asyncio.Event()
        self._keeper: asyncio.Task | None = None
        self._dying: set[asyncio.Task] = set()
        self.closed = False

    def take(self, env: dict[str, str]) -> Runner | None:
        """An idle runner whose environment is ``env``, or None; wakes the refill."""
        base = base_env()
        size = pool_size()
        self._prune(base, size)
        if size == 0 or env != base:
            return None  # such a task gets a process of its own; no refill on its behalf
        runner = self.idle.pop(0) if self.idle else None  # the oldest is the most warmed up
        self._ensure_keeper()
        if runner is None or REFILL_DELAY <= 0:
            asyncio.get_running_loop().call_soon(self._wake.set)  # after the task's first steps
        else:
            asyncio.get_running_loop().call_later(REFILL_DELAY, self._wake.set)
        return runner

    def refill(self) -> None:
        if self._keeper is not None and not self._keeper.done():
            self._wake.set()

    def pids(self) -> list[int]:
        return [r.pid for r in self.idle]

    def _prune(self, base: dict[str, str], size: int) -> None:
        keep: list[Runner] = []
        for runner in self.idle:
            if runner.proc.returncode is None and runner.env == base and len(keep) < size:
                keep.append(runner)
            else:
                self._drop(runner)
        self.idle = keep

    def _drop(self, runner: Runner) -> None:
        runner.discard()
        waiter = _background(runner.proc.wait())
        self._dying.add(waiter)
        waiter.add_done_callback(self._dying.discard)

    def _ensure_keeper(self) -> None:
        if self._keeper is None or self._keeper.done():
            self._keeper = _background(self._keep())

    async def _keep(self) -> None:
        try:
            while not self.closed:
                await self._wake.wait()
                self._wake.clear()
                while not self.closed:
                    base = base_env()
                    size = pool_size()
                    self._prune(base, size)
                    if len(self.idle) >= size:
                        break
                    try:
                        runner = await start_runner(base, cwd=IDLE_CWD, warm=True)
                    except Exception as exc:  # noqa: BLE001 - e.g. out of processes: retry when asked again
                        log.warning("cannot start a pooled python process: %s", exc)
                        break
                    self.idle.append(runner)
        finally:
            await self._kill_idle()

    async def _kill_idle(self) -> None:
        idle, self.idle = self.idle, []
        for runner in idle:
            self._drop(runner)
        if self._dying:
            await asyncio.wait(set(self._dying), timeout=CLOSE_WAIT)

    async def aclose(self) -> None:
        """Kill every idle runner and wait until they are gone; stop refilling."""
        self.closed = True
        keeper = self._keeper
        if keeper is not None and not keeper.done():
            keeper.cancel()
            await asyncio.wait({keeper})  # its finally kills the idle runners
        await self._kill_idle()


def _background(coro) -> asyncio.Task:
    # An empty context: the pool outlives the activity whose task happened to start it.
    return asyncio.get_running_loop().create_task(coro, context=contextvars.Context())


_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pool] = weakref.WeakKeyDictionary()


def take(env: dict[str, str]) -> Runner | None:
    """An idle runner of the running loop's pool for a task with environment ``env``."""
    loop = asyncio.get_running_loop()
    pool = _POOLS.get(loop)
    if pool is None:
        if pool_size() == 0:
            return None
        pool = _POOLS[loop] = Pool()
    return pool.take(env)


def refill() -> None:
    """A task's process is done: top the running loop's pool up now."""
    pool = _POOLS.get(asyncio.get_running_loop())
    if pool is not None:
        pool.refill()


def idle_pids() -> list[int]:
    """Pids of the running loop's idle runners (diagnostics and tests)."""
    pool = _POOLS.get(asyncio.get_running_loop())
    return pool.pids() if pool is not None else []


async def aclose_pool() -> None:
    """Kill the running loop's idle runners (call on worker shutdown). A later python
    task on the loop starts a new pool."""
    pool = _POOLS.pop(asyncio.get_running_loop(), None)
    if pool is not None:
        await pool.aclose()
