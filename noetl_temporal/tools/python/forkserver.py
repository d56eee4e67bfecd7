"""Worker side of the python tool's fork server (``zygote``): one per event loop.

Starting an interpreter costs tens of milliseconds; forking a small one that has
already imported the runner costs about one. So each event loop starts one fork server
(a fresh interpreter, started with ``vfork``, never a fork of the worker) and asks it
for a forked child per task. Isolation is that of a process per task: a child serves
one task and exits; it has its own session; a timeout or a cancellation kills its group
(through the fork server, which alone may use the pid: it reaps the child); it dies
with the fork server, which dies with the worker.

The fork server is started when the first task needs it, and again when it died (the
next task starts a new one; tasks in flight at its death fail as killed). Its
environment is fixed at start, so only tasks whose environment equals it are served
(a task with ``env:`` of its own gets a process of its own, ``spawn``); after a
change of the worker's ``os.environ`` a new one is started and the old one retires once
its tasks are done.

``NOETL_PYTHON_FORKSERVER=0`` disables it (a process per task, as before).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import logging
import os
import signal
import socket
import sys
import weakref
from pathlib import Path

from .. import _proc
from .spawn import RUNNER_PATH, TaskPipes, interpreter_flags

log = logging.getLogger(__name__)

# perf: the fork server itself: an interpreter start per task (~17 ms -> ~1.5 ms) — benchmark: probes.python_overhead
ENV_SWITCH = "NOETL_PYTHON_FORKSERVER"
#: the fork server's program, run as a script: ``ps`` then shows its path, not its source
#: (as ``-c <text>`` did, on the fork server and every task process forked from it)
ZYGOTE_PATH = str(Path(__file__).with_name("zygote.py"))
#: where the fork server waits: a directory no task owns (children enter theirs)
IDLE_CWD = os.path.abspath(os.sep)
#: how long to wait for the fork server to leave when it is closed
CLOSE_WAIT = 5.0
_IDS = itertools.count(1)


def enabled() -> bool:
    if os.environ.get(ENV_SWITCH, "").strip().lower() in ("0", "false", "no", "off"):
        return False
    return sys.platform.startswith("linux") and hasattr(socket, "CMSG_SPACE")


class ForkedChild:
    """A task's process as the fork server reports it; quacks like an asyncio Process
    for ``_proc.wait_child`` / ``_proc.reap`` (``signal_group`` goes through the server).
    It has no pid: only the fork server, which reaps it, may signal it by pid."""

    def __init__(self, server: ForkServer, task_id: str) -> None:
        self.server = server
        self.task_id = task_id
        self.returncode: int | None = None
        self._exited = asyncio.get_running_loop().create_future()

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)  # many waiters; a cancelled one must not end it

    def signal_group(self, sig: int) -> None:
        if self.returncode is None:
            self.server.send_nowait(f"kill {self.task_id} {int(sig)}")

    def kill(self) -> None:
        self.signal_group(signal.SIGKILL)

    def answered(self) -> None:
        """Its whole answer and output are in (EOF on every pipe but a background one's)
        and it is only leaving: the task need not wait for its teardown."""
        self.exited(0)

    def exited(self, returncode: int) -> None:
        if self.returncode is None:
            self.returncode = returncode
            self._exited.set_result(returncode)


class ForkServer:
    def __init__(self, proc: asyncio.subprocess.Process, sock: socket.socket, tasks: socket.socket,
                 env: dict[str, str]) -> None:
        self.proc = proc
        self.sock = sock
        self.tasks = tasks
        self.env = env
        self.children: dict[str, ForkedChild] = {}
        self.retired = False
        self.dead = False
        loop = asyncio.get_running_loop()
        loop.add_reader(sock.fileno(), self._readable)
        # An empty context: the server outlives the activity whose task started it.
        self._watch = loop.create_task(self._watch_proc(), context=contextvars.Context())

    @property
    def pid(self) -> int:
        return self.proc.pid

    @classmethod
    async def start(cls, env: dict[str, str]) -> ForkServer:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        tasks, spares = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            for sock in (ours, tasks):
                sock.setblocking(False)
            fds = (theirs.fileno(), spares.fileno())
            argv = [sys.executable, *interpreter_flags(env), ZYGOTE_PATH, RUNNER_PATH, str(os.getpid()),
                    *map(str, fds)]
            proc = await _proc.start_on(argv, cwd=IDLE_CWD, env=env, stdin=asyncio.subprocess.DEVNULL,
                                        stdout=asyncio.subprocess.DEVNULL, stderr=None,
                                        pass_fds=fds, child_sets_pdeathsig=True)
        except BaseException:
            ours.close()
            tasks.close()
            raise
        finally:
            theirs.close()
            spares.close()
        return cls(proc, ours, tasks, env)

    # ---------------------------------------------------------------- tasks

    async def fork(self, pipes: TaskPipes) -> ForkedChild:
        """Ask for a child served through ``pipes`` (whose child ends are closed once sent)."""
        child = ForkedChild(self, str(next(_IDS)))
        self.children[child.task_id] = child
        try:
            await self._send(self.tasks, f"run {child.task_id}", pipes.child_fds)
        except OSError as exc:  # the caller may try another server with the same pipes
            self.children.pop(child.task_id, None)
            raise OSError(f"the python fork server is gone: {exc}") from None
        pipes.close_child_ends()  # only the child may hold them, or EOF never comes
        return child

    @staticmethod
    async def _send(sock: socket.socket, text: str, fds: tuple[int, ...]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                socket.send_fds(sock, [text.encode()], list(fds))
                return
            except BlockingIOError:  # many tasks queued for the spares: wait for room
                ready = loop.create_future()
                loop.add_writer(sock.fileno(), ready.set_result, None)
                try:
                    await ready
                finally:
                    loop.remove_writer(sock.fileno())

    def send_nowait(self, text: str) -> None:
        with contextlib.suppress(OSError):  # a full socket or a dead server: nothing to signal
            self.sock.send(text.encode())

    def _readable(self) -> None:
        while self.sock.fileno() >= 0:  # a message handled below may have closed it
            try:
                msg = self.sock.recv(256)
            except BlockingIOError:
                return
            except OSError:
                msg = b""
            if not msg:  # the fork server is gone; the process watcher settles the rest
                asyncio.get_running_loop().remove_reader(self.sock.fileno())
                return
            self._handle(msg.decode().split(" ", 2))

    def _handle(self, words: list[str]) -> None:
        what, task_id = words[0], words[1]
        child = self.children.get(task_id)
        if child is None:
            return
        if what == "exit":
            self.children.pop(task_id, None)
            child.exited(int(words[2]))
            if self.retired and not self.children:
                self.close()

    # ---------------------------------------------------------------- life

    async def _watch_proc(self) -> None:
        try:
            returncode = await self.proc.wait()
        except asyncio.CancelledError:  # the loop is shutting down without aclose()
            self.close()
            # Wait for it to leave while the loop still runs, so its exit is not reported
            # to a closed loop.
            try:
                await asyncio.wait_for(self.proc.wait(), CLOSE_WAIT)
            except BaseException:  # noqa: BLE001 - still there: kill it, we are leaving anyway
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
            raise
        self._died(returncode)

    def _died(self, returncode: int) -> None:
        """Its children died with it (parent-death signal): they were killed."""
        if not self.dead and not self.retired and returncode != 0:
            log.warning("the python fork server (pid %s) %s; starting a new one for the next task",
                        self.proc.pid, _proc.describe_exit(returncode))
        self.dead = True
        self.close()
        for child in list(self.children.values()):
            child.exited(-signal.SIGKILL)
        self.children.clear()

    def retire(self) -> None:
        """Take no new task; close once the running ones are done."""
        self.retired = True
        if not self.children:
            self.close()

    def close(self) -> None:
        """EOF to the fork server: it kills its children and exits."""
        if self.sock.fileno() >= 0:
            with contextlib.suppress(ValueError, RuntimeError):
                asyncio.get_running_loop().remove_reader(self.sock.fileno())
            self.sock.close()
        self.tasks.close()  # waiting spares read EOF and leave

    async def aclose(self) -> None:
        self.retired = True
        self.close()
        try:
            await asyncio.wait_for(asyncio.shield(self._watch), CLOSE_WAIT)
        except (TimeoutError, asyncio.CancelledError):
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()


class _Servers:
    """The fork server of one event loop, started once even when many tasks ask at once."""

    def __init__(self) -> None:
        self.current: ForkServer | None = None
        self.lock = asyncio.Lock()
        self.retired: set[ForkServer] = set()

    async def get(self, env: dict[str, str]) -> ForkServer:
        server = self.current
        if server is not None and not server.dead and server.env == env:
            return server
        async with self.lock:
            server = self.current
            if server is not None and not server.dead and server.env == env:
                return server
            if server is not None:
                server.retire()
                if not server.dead:
                    self.retired.add(server)
            self.retired = {s for s in self.retired if not s.dead}
            self.current = await ForkServer.start(env)
            return self.current


_SERVERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Servers] = weakref.WeakKeyDictionary()


async def fork_runner(env: dict[str, str], pipes: TaskPipes) -> ForkedChild:
    """A forked child serving the task on ``pipes`` from this loop's fork server."""
    loop = asyncio.get_running_loop()
    servers = _SERVERS.get(loop)
    if servers is None:
        servers = _SERVERS[loop] = _Servers()
    server = await servers.get(env)
    try:
        return await server.fork(pipes)
    except OSError:  # it died between the check and the request: once more with a new one
        server.dead = True
        server.close()
        return await (await servers.get(env)).fork(pipes)


def server_pid() -> int | None:
    """Pid of the running loop's fork server (diagnostics and tests)."""
    servers = _SERVERS.get(asyncio.get_running_loop())
    server = servers.current if servers else None
    return server.pid if server is not None and not server.dead else None


async def aclose_forkserver() -> None:
    """Stop the running loop's fork server(s) (call on worker shutdown); a later python
    task on the loop starts a new one."""
    servers = _SERVERS.pop(asyncio.get_running_loop(), None)
    if servers is None:
        return
    for server in [*servers.retired, *([servers.current] if servers.current else [])]:
        await server.aclose()
