"""Subprocess plumbing shared by the shell and python tools.

Every child runs in its own session (process group), so a timeout or a cancelled
activity kills the whole tree the task started, not just the direct child. Output is
drained concurrently and capped, so a chatty child can neither block on a full pipe
nor make the worker hold unbounded memory.

A task owns every process it started, however it detached (``setsid``, ``nohup ... &``, a
double fork): a shell command is run by a process forked from the python tool's fork server
(``shell``, ``runner.reaping.run_command``), and where that is not available it, like a
spawned python runner, runs under a *reaper*
(:func:`reaped`, the program in ``python/runner/reaping.py``), a subreaper that kills
everything below it when the command ends, on timeout, on cancel, and when the worker
dies (its parent-death signal). The fork server and its task processes are subreapers
themselves (``python.zygote``). Each child asks the kernel for a signal when its parent dies
(``prctl(PR_SET_PDEATHSIG)``). The signal is tied to the thread that spawned the child,
the event loop's thread, which lives as long as the worker.

The output pipes are created here rather than by asyncio (``stdout=PIPE``): asyncio's
``Process.wait()`` only returns once every pipe it owns is closed, so a background
grandchild that inherited stdout (``sleep 60 &``) would hold the task open. With our
own pipes, ``wait()`` means "the child exited" and draining gets a short grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from .base import ToolCall, beat

#: seconds between heartbeats while a child runs (tests may lower it)
HEARTBEAT_INTERVAL = 5.0
#: how long to keep reading pipes after the child exited: a background grandchild
#: that inherited stdout would otherwise keep us waiting forever
DRAIN_GRACE = 2.0
#: after SIGTERM on timeout, how long before SIGKILL
KILL_GRACE = 2.0


class Masker(Protocol):
    """What a capture needs of ``keychain.Scrubber``: mask a text, mask a window of it."""

    longest: int

    def text(self, value: str) -> str: ...

    def window(self, value: str, start: int, end: int) -> str: ...


class Capture:
    """Keeps the head and the tail of a byte stream up to ``limit`` bytes in total.

    With ``mask`` (a task's secrets, a ``keychain.Scrubber``) it masks *before* it cuts:
    each part keeps ``mask.longest`` (the longest text a secret is matched in) more bytes
    than it shows, so a secret that straddles a cut is whole when it is masked, and it is
    replaced whole even where the cut falls inside it. The cut is made where it would be
    without secrets (masking shortens the text: cutting the masked text at the same
    length reached into the kept margin and showed most of a secret cut there).
    """

    def __init__(self, limit: int, mask: Masker | None = None) -> None:
        self.limit = limit
        self._tail_limit = limit // 4  # the end of stderr is where the error is
        self._mask = mask
        self._margin = mask.longest if mask is not None else 0
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - self._tail_limit + self._margin - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            keep = self._tail_limit + self._margin
            if len(self._tail) > keep:
                del self._tail[: len(self._tail) - keep]

    @property
    def truncated(self) -> bool:
        return self.total > len(self._head) + len(self._tail)

    def _shown(self, part: bytearray, keep: int, at_end: bool) -> str:
        text = part.decode("utf-8", "replace")
        if len(part) <= keep:
            return text if self._mask is None else self._mask.text(text)
        # where the cut falls in characters: the kept bytes, decoded alone
        kept = len((part[-keep:] if at_end else part[:keep]).decode("utf-8", "replace"))
        start, end = (len(text) - kept, len(text)) if at_end else (0, kept)
        return text[start:end] if self._mask is None else self._mask.window(text, start, end)

    def text(self) -> str:
        if not self.truncated:
            whole = (self._head + self._tail).decode("utf-8", "replace")
            return self._mask.text(whole) if self._mask is not None else whole
        head = self._shown(self._head, self.limit - self._tail_limit, at_end=False)
        tail = self._shown(self._tail, self._tail_limit, at_end=True)
        shown = min(len(self._head), self.limit - self._tail_limit) + min(len(self._tail), self._tail_limit)
        dropped = self.total - shown
        return f"{head}\n... [{dropped} bytes truncated] ...\n{tail}"


def capture(limit: int, mask: Masker | None = None) -> Capture:
    """A :class:`Capture` that masks a task's secrets (its ``tools.base.scrubber``) before cutting."""
    return Capture(limit, mask if mask else None)


class Pumps:
    """Readers of raw pipe ends, each feeding a sink until EOF.

    Plain ``add_reader`` callbacks rather than asyncio pipe transports and stream
    readers: a python task has three pipes, and their set-up was a large part of the
    worker's cost per task.
    """

    def __init__(self) -> None:
        self.tasks: list[asyncio.Future] = []  # one per pipe, done at its EOF
        self._fds: list[int] = []

    def add(self, fd: int, feed: Callable[[bytes], None]) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        eof = loop.create_future()
        os.set_blocking(fd, False)
        self._fds.append(fd)
        self.tasks.append(eof)
        loop.add_reader(fd, self._read, fd, feed, eof)
        return eof

    def _read(self, fd: int, feed: Callable[[bytes], None], eof: asyncio.Future) -> None:
        try:
            chunk = os.read(fd, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if chunk:
            feed(chunk)
            return
        self._drop(fd)
        if not eof.done():
            eof.set_result(None)

    def _drop(self, fd: int) -> None:
        if fd in self._fds:
            self._fds.remove(fd)
            asyncio.get_running_loop().remove_reader(fd)
            with contextlib.suppress(OSError):
                os.close(fd)

    async def finish(self) -> None:
        """Let readers hit EOF; give up after ``DRAIN_GRACE`` seconds."""
        pending = [t for t in self.tasks if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=DRAIN_GRACE)
        self.close()

    def close(self) -> None:
        for fd in list(self._fds):
            self._drop(fd)
        for t in self.tasks:
            if not t.done():
                t.cancel()


_PR_SET_PDEATHSIG = 1


def _load_prctl():
    """libc's ``prctl``, looked up now: a forked child must not have to load anything."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


_PRCTL = _load_prctl()


def die_with_parent():
    """A ``preexec_fn`` that makes the child receive SIGKILL when this process dies (Linux);
    ``None`` where that is not available."""
    if _PRCTL is None:
        return None
    parent = os.getpid()
    prctl = _PRCTL

    def preexec() -> None:  # runs in the child between fork and exec: keep it tiny
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request was in place
            os._exit(137)

    return preexec


async def start(argv: Sequence[str], *, cwd: str | None, env: dict[str, str],
                stdin: int = asyncio.subprocess.DEVNULL, pass_fds: Sequence[int] = (),
                child_sets_pdeathsig: bool = False) -> tuple[asyncio.subprocess.Process, int, int]:
    """Start ``argv`` in a new session, dying with this process, its stdout/stderr on
    fresh pipes; returns the process and the read ends (the caller owns them)."""
    r_out, w_out = os.pipe()
    r_err, w_err = os.pipe()
    try:
        proc = await start_on(argv, cwd=cwd, env=env, stdin=stdin, stdout=w_out, stderr=w_err,
                              pass_fds=pass_fds, child_sets_pdeathsig=child_sets_pdeathsig)
    except BaseException:
        os.close(r_out)
        os.close(r_err)
        raise
    finally:
        os.close(w_out)  # only the child may hold the write ends, or EOF never comes
        os.close(w_err)
    return proc, r_out, r_err


# perf: a full fork of the worker per subprocess (vfork instead: ~7 ms of event loop a task) — benchmark: benchmarks.engine_scale
async def start_on(argv: Sequence[str], *, cwd: str | None, env: dict[str, str], stdin: int, stdout: int,
                   stderr: int | None, pass_fds: Sequence[int] = (),
                   child_sets_pdeathsig: bool = False) -> asyncio.subprocess.Process:
    """Start ``argv`` in a new session on the given descriptors, dying with this process.

    ``child_sets_pdeathsig``: the program asks for the parent-death signal itself, first
    thing (the python runner does). Without a ``preexec_fn`` the child is started with
    ``vfork``, which blocks the event loop for a fraction of a millisecond instead of
    the several a ``fork`` of a large worker takes.
    """
    return await asyncio.create_subprocess_exec(
        *argv, stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd, env=env,
        pass_fds=tuple(pass_fds), start_new_session=True,
        preexec_fn=None if child_sets_pdeathsig else die_with_parent(),
    )


def write_now(fd: int, data: bytes) -> int:
    """Write what fits into a pipe's buffer without waiting; the number of bytes written."""
    os.set_blocking(fd, False)
    try:
        return os.write(fd, data[:65536]) if data else 0
    except BlockingIOError:
        return 0


async def write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to a pipe without blocking the loop, then close it. A reader that
    died early is not an error here: its exit tells what happened."""
    loop = asyncio.get_running_loop()
    view = memoryview(data)
    try:
        os.set_blocking(fd, False)
        while view:
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                ready = loop.create_future()
                loop.add_writer(fd, ready.set_result, None)
                try:
                    await ready
                finally:
                    loop.remove_writer(fd)
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        os.close(fd)


#: the reaper's module (standard library only), loaded by path like the python runner
REAPING_PATH = str(Path(__file__).with_name("python") / "runner" / "reaping.py")
#: ``python -S -c REAPER <worker pid> <grace> <argv...>``: own everything ``argv`` starts
REAPER = f"""import sys
from _frozen_importlib import module_from_spec
from _frozen_importlib_external import spec_from_file_location
spec = spec_from_file_location("_noetl_reaping", {REAPING_PATH!r})
reaping = module_from_spec(spec)
spec.loader.exec_module(reaping)
reaping.reaper_main(sys.argv[3:], int(sys.argv[1]), float(sys.argv[2]))
"""
#: in a reaped argv, the reaper's own pid (the python runner checks its parent with it)
REAPER_PID = "{reaper_pid}"


class Reaped:
    """A command run under the reaper, as the asyncio process of the reaper. Signals go to
    the reaper, which passes them on to the whole subtree: ``SIGTERM`` politely (then
    ``SIGKILL`` after ``KILL_GRACE``), anything else as ``SIGKILL``."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc
        self.pid = proc.pid

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    async def wait(self) -> int:
        return await self._proc.wait()

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            self._proc.send_signal(signal.SIGTERM if sig == signal.SIGTERM else signal.SIGUSR1)

    def kill(self) -> None:
        self.signal_group(signal.SIGKILL)


def can_reap() -> bool:
    """Whether commands run under the reaper here (Linux: ``prctl``)."""
    return _PRCTL is not None


def reaped(argv: Sequence[str]) -> list[str]:
    """``argv`` run under the reaper (Linux), or as it is where there is no ``prctl``."""
    if not can_reap():
        return list(argv)
    return [sys.executable, "-S", "-c", REAPER, str(os.getpid()), repr(KILL_GRACE), *argv]


def as_reaped(proc: asyncio.subprocess.Process) -> asyncio.subprocess.Process:
    """The process of a command started with :func:`reaped` (duck-typed for ``wait_child``)."""
    return Reaped(proc) if _PRCTL is not None else proc  # type: ignore[return-value]


async def spawn(argv: Sequence[str], *, cwd: str | None, env: dict[str, str], out: Capture, err: Capture,
                stdin: int = asyncio.subprocess.DEVNULL, pass_fds: Sequence[int] = ()
                ) -> tuple[asyncio.subprocess.Process, Pumps]:
    """Start ``argv`` under the reaper in a new session, stdout/stderr pumped into the captures.

    The reaper asks for its parent-death signal itself, so no ``preexec_fn``: the child
    starts with vfork, which keeps the worker's event loop free (a fork of a large worker
    blocks it for several milliseconds per task)."""
    proc, r_out, r_err = await start(reaped(argv), cwd=cwd, env=env, stdin=stdin, pass_fds=pass_fds,
                                     child_sets_pdeathsig=_PRCTL is not None)
    proc = as_reaped(proc)
    pumps = Pumps()
    pumps.add(r_out, out.feed)
    pumps.add(r_err, err.feed)
    return proc, pumps


async def reap(proc: asyncio.subprocess.Process) -> None:
    """Kill and wait for a child that is still running (used on cancellation)."""
    if proc.returncode is None:
        kill_group(proc)
        with contextlib.suppress(ProcessLookupError):
            await asyncio.shield(proc.wait())


def kill_group(proc: asyncio.subprocess.Process, sig: int = signal.SIGKILL) -> None:
    """Signal the child's whole process group (it is a session leader)."""
    signal_group = getattr(proc, "signal_group", None)
    if signal_group is not None:  # not our child (a fork server's): its parent signals it
        signal_group(sig)
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
    with contextlib.suppress(ProcessLookupError):
        if sig == signal.SIGKILL:
            proc.kill()  # in case the child left its group


async def wait_child(
    proc: asyncio.subprocess.Process,
    deadline: float,
    call: ToolCall,
    *,
    term_first: bool,
    what: str,
) -> int:
    """Wait for exit with heartbeats; past ``deadline`` kill the group, raise TimeoutError."""
    started = time.monotonic()
    waiter = asyncio.ensure_future(proc.wait())
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if term_first:
                    kill_group(proc, signal.SIGTERM)
                    await asyncio.wait({waiter}, timeout=KILL_GRACE)
                kill_group(proc, signal.SIGKILL)
                await waiter
                raise TimeoutError
            done, _ = await asyncio.wait({waiter}, timeout=min(remaining, HEARTBEAT_INTERVAL))
            if done:
                return waiter.result()
            beat(call, {"tool": what, "elapsed_s": round(time.monotonic() - started, 1)})
    finally:
        if not waiter.done():
            waiter.cancel()


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        return f"was killed by {signal_name(-returncode)}"
    return f"exited with status {returncode}"
