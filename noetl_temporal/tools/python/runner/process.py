"""The process around one request: dying with the parent, entering the task's directory,
reading the request, running it, and answering on the response descriptor before leaving
with ``os._exit`` (never returning: user threads or atexit hooks cannot hang the task)."""

import os
import sys

from . import answer, reaping
from .failures import _text
from .running import _run


def _die_with_parent(parent):
    """SIGKILL when the parent dies (Linux), then make sure it has not died already.

    Every runner asks for the signal itself, before anything else: a spawned one is
    started without a ``preexec_fn`` (so the worker can use ``vfork``), and a forked
    one (``zygote``) asks for it towards the fork server it came from.
    """
    reaping.prctl(reaping.PR_SET_PDEATHSIG, 9)  # SIGKILL
    if os.getppid() != parent:
        os._exit(137)


def _line_buffered_output():
    """Line buffering keeps printed lines even when the code crashes or calls os._exit."""
    import io  # loaded by the interpreter at start-up: costs nothing

    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):  # always, in a runner process
            stream.reconfigure(line_buffering=True)


def serve(fd, path0):
    """Read one request from stdin, run it, answer on ``fd`` and leave (never returns)."""
    pid = os.getpid()
    os.set_inheritable(fd, False)  # user subprocesses must not hold the response pipe open
    raw = sys.stdin.buffer.read()
    if not raw:  # no request: the worker is gone or gave up on the task
        os._exit(0)
    req = answer.json.loads(raw)  # bound by _use_json, before any request
    reaping.become_subreaper()  # whatever the code starts stays below us (see reaping)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # the request is consumed; user `input()` sees EOF
    os.close(null)
    if "exec" in req:  # a shell command, not python code
        reaping.run_command(req, fd)
    _line_buffered_output()
    sys.argv = [req["filename"]]
    resp = _enter(req.get("cwd"))
    if resp is None:
        if path0 is not None:
            sys.path.insert(0, path0)
        resp = _run(req)
    if os.getpid() != pid:  # a fork made by the user code ran to here: only one may answer
        os._exit(0)
    # Before the answer: once the worker has it the task is over, and so is all it started.
    reaping.sweep()
    data = answer._answer(resp, req)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001,S110 - user may have closed or replaced it
            pass
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    # Output first, then the answer: once the parent has the answer and EOF on all
    # three pipes the task is done, without waiting for this process's teardown.
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os._exit(0)


def _enter(cwd):
    """Change into the task's directory; an error response if that is impossible."""
    if not cwd:
        return None
    try:
        os.chdir(cwd)
    except OSError as exc:
        return {"ok": False, "kind": "python", "type": type(exc).__name__, "line": None,
                "message": f"cannot enter the task's working directory {cwd!r}: {_text(exc)}"}
    return None
