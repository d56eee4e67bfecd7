"""A task owns every process it started: the subreaper and the sweep of its descendants.

A process that asks ``prctl(PR_SET_CHILD_SUBREAPER)`` (Linux) inherits every orphan among
its descendants: a child that called ``setsid()``, ``nohup cmd &``, a double fork. None
of them can leave its subtree, so when the task ends, killing that subtree (read from
``/proc/<pid>/task/<tid>/children``) kills everything the task started, however it
detached. The python runner, the fork server and the reaper that wraps shell commands and
spawned runners (``reaper_main``) all do this.

Standard library only, and loaded by path as one module (the runner package, the fork
server and the reaper program each load it without ``noetl_temporal``).

Limits: a descendant that makes itself a subreaper keeps its own orphans (it is killed,
and they then come to us, so the next round of the sweep gets them); a process that
another user owns cannot be signalled; on a system without ``/proc`` or ``prctl`` nothing
is swept.
"""

import os
import signal
import sys

# Not `from typing import TYPE_CHECKING`: the runner imports as little as it can (see answer.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
#: rounds of the sweep: each kills what it sees, the next catches what was forked meanwhile
SWEEP_ROUNDS = 50
#: rounds in a row that find the same processes before the sweep gives up on them
SAME_ROUNDS = 3

_PRCTL: "Any" = None  # libc's prctl (False: not available)


def prctl(option, value):
    """``prctl(option, value)`` through libc; False where it is not available."""
    global _PRCTL
    if _PRCTL is None:
        _PRCTL = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                fn = ctypes.CDLL(None, use_errno=True).prctl
                fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
                _PRCTL = fn
            except (OSError, AttributeError, ImportError):
                pass
    if not _PRCTL:
        return False
    return _PRCTL(option, value, 0, 0, 0) == 0


def become_subreaper():
    """Orphans among our descendants become our children (Linux 3.4+); whether it took."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


def children(pid):
    """Pids of ``pid``'s children (those of every thread); [] when it is gone."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out.extend(int(p) for p in f.read().split())
        except (OSError, ValueError):
            continue
    return out


def descendants(pid, skip=()):
    """Every process below ``pid`` (children first found first), leaving out the subtrees
    of the pids in ``skip``."""
    found, todo = [], [p for p in children(pid) if p not in skip]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children(p))
    return found


def sweep(skip=(), sig=signal.SIGKILL, patience=2.0):
    """Kill every descendant of this process but the subtrees in ``skip``, and reap our own
    children among them, round after round until none is left (a round kills what the last
    one's victims forked meanwhile). Gives up after ``patience`` seconds, or when
    ``SAME_ROUNDS`` rounds in a row, 10 ms apart, change nothing (a process we may not
    signal: another user's set-uid program). Whether any was found."""
    import time

    me = os.getpid()
    deadline = time.monotonic() + patience
    any_found, last, same = False, None, 0
    for _ in range(SWEEP_ROUNDS):
        found = descendants(me, skip)
        if not found:
            return any_found
        if time.monotonic() > deadline:
            return True
        if set(found) == last:
            # Killed but not gone yet (on a loaded machine a killed process may wait to be
            # scheduled before it dies), or one we may not signal: wait a little, a few times.
            same += 1
            if same > SAME_ROUNDS:
                return True
            time.sleep(0.01)
        else:
            same = 0
        any_found, last = True, set(found)
        for p in found:
            try:
                os.kill(p, sig)
            except OSError:
                pass
        _reap_killed([p for p in children(me) if p not in skip], deadline)
    return any_found


def _reap_killed(pids, deadline):
    """Reap our killed children (their orphans are then ours), until ``deadline`` at most."""
    import time

    while pids and time.monotonic() < deadline:
        left = []
        for p in pids:
            try:
                if os.waitpid(p, os.WNOHANG)[0] == 0:
                    left.append(p)
            except ChildProcessError:
                pass
        pids = left
        if pids:
            time.sleep(0.002)


def run_command(req, answer_fd=None):
    """In a task's process forked by the fork server, a command instead of python code (the
    shell tool): become ``req["exec"]`` (an argv) with ``req["env"]`` in ``req["cwd"]``
    (never returns). ``answer_fd`` is close-on-exec: the worker reads EOF there, and the
    command's exit status from the fork server's report of this process's exit.

    No fork, no wait: this process already is what a task's process must be (in a session
    of its own, dying with the fork server), and the fork server, a subreaper, reaps it and
    kills every process it left, however detached (they come to the fork server once their
    parent is gone), before it reports the exit (``zygote.Zygote.reap``). Forking a child
    here and waiting for it, as before, cost a fork of this interpreter and a process's
    wake-up more per task: 8–14 ms a shell task against 3–6 ms (docs/performance.md, "A
    shell task's cost under the subreaper")."""
    argv, env = req["exec"], req.get("env")
    try:
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores them; a command must not
            signal.signal(sig, signal.SIG_DFL)
        if req.get("cwd"):
            os.chdir(req["cwd"])
        os.execve(argv[0], argv, env if env is not None else os.environ)
    except BaseException as exc:  # noqa: BLE001 - reported on the task's stderr
        try:
            os.write(2, f"cannot run {argv[0]}: {exc}\n".encode())
        finally:
            os._exit(127)


# ---------------------------------------------------------------- the reaper program

#: a word in the reaper's command line that it replaces with its own pid: the program it
#: runs may check that its parent is still there (the python runner does)
REAPER_PID = "{reaper_pid}"


def _exit_like(status):
    """Leave with the command's own exit: its status, or death by its signal."""
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        try:
            signal.signal(-code, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {-code})
        except (OSError, ValueError):
            pass
        os.kill(os.getpid(), -code)
    os._exit(code if code >= 0 else 128 - code)


def reaper_main(argv, worker, grace):
    """Run ``argv`` as our child and own everything it starts (never returns).

    Started in a session of its own, with the worker's pid, as the shell tool's and a
    spawned runner's parent. It is a subreaper, so every process the command starts stays
    below it. It dies with the worker: ``SIGTERM`` is its parent-death signal, which it
    waits for rather than dies of. Its signals, all waited for with ``sigwaitinfo``:

    * ``SIGCHLD`` and the command exited: sweep what it left, leave with its status;
    * ``SIGTERM`` from the worker (a timeout): ``SIGTERM`` to every descendant, ``grace``
      seconds for the command, then sweep with ``SIGKILL``; from the parent-death signal
      (the worker is gone): sweep at once;
    * ``SIGUSR1`` (the worker cancels or gives up): sweep with ``SIGKILL`` and die of it.
    """
    waited = {signal.SIGCHLD, signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    become_subreaper()
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != worker:  # it died before the request was in place
        os._exit(137)
    me = str(os.getpid())
    argv = [me if a == REAPER_PID else a for a in argv]
    pid = os.fork()
    if pid == 0:
        try:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, waited)
            for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores them; a command must not
                signal.signal(sig, signal.SIG_DFL)
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    _let_go_of_descriptors()
    status = None
    while True:
        info = signal.sigwaitinfo(waited)
        if info.si_signo == signal.SIGCHLD:
            status = _reap(pid, status)
            if status is not None:
                sweep()
                _exit_like(status)
        elif info.si_signo == signal.SIGUSR1 or os.getppid() != worker:
            sweep()
            os.kill(os.getpid(), signal.SIGKILL)
        else:  # SIGTERM (or HUP/INT) from the worker: a timeout's polite stop
            for p in descendants(os.getpid()):
                try:
                    os.kill(p, signal.SIGTERM)
                except OSError:
                    pass
            if signal.sigtimedwait({signal.SIGCHLD}, grace) is not None:
                status = _reap(pid, status)
            sweep()
            if status is None:
                try:
                    status = os.waitpid(pid, 0)[1]
                except ChildProcessError:
                    status = signal.SIGKILL
            _exit_like(status)


def _let_go_of_descriptors():
    """The command has the pipes; the worker reads EOF when it and its descendants are
    done with them, not when we are."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, 1 << 16)


def _reap(pid, status):
    """Reap exited children; the command's wait status once it has exited."""
    while True:
        try:
            got, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if got == 0:
            return status
        if got == pid:
            status = st
