"""A runner process started for one python task (``python -S -c RUNNER``), and the pipes
every runner is served through.

The fork server (``forkserver``) serves most tasks; a process of its own is started for a
task whose environment differs from the fork server's (``env:`` of its own), and for
every task when the fork server is unavailable or disabled (``NOETL_PYTHON_FORKSERVER=0``).
It costs a fresh interpreter per task (about 17 ms) but isolates exactly alike: its own
session (the task kills the whole group on timeout and cancellation) and the
parent-death signal, which the runner asks for itself, first thing, so the worker can
start it with ``vfork`` instead of a ``fork`` that blocks the event loop.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

from .. import _proc

#: the runner package (``runner/``), loaded by path: it runs outside ``noetl_temporal``. The
#: one definition: the fork server hands the same path to its program (``forkserver.py``)
RUNNER_PATH = str(Path(__file__).with_name("runner") / "__init__.py")
#: a spawned runner's program: load the runner package by path under a private name (its
#: modules import each other relatively; nothing comes from ``sys.path``) and run it. The
#: loader functions are the frozen importlib's, loaded at start-up: ``importlib.util``
#: is not, and each import is start-up time every spawned task pays.
RUNNER = f"""import sys
from _frozen_importlib import module_from_spec
from _frozen_importlib_external import spec_from_file_location
spec = spec_from_file_location("_noetl_pyrunner", {RUNNER_PATH!r}, submodule_search_locations=[{str(Path(RUNNER_PATH).parent)!r}])
runner = sys.modules[spec.name] = module_from_spec(spec)
spec.loader.exec_module(runner)
runner.child_main()
"""
#: ``0`` in a runner's environment: start it as a plain interpreter, ``.pth`` hooks and all
LAZY_PTH_SWITCH = "NOETL_PYTHON_LAZY_PTH"


def interpreter_flags(env: dict[str, str]) -> list[str]:
    """``-S`` for a runner or fork server: it runs ``site`` itself and leaves the import
    hooks of ``.pth`` files until an import needs them (``runner.start_site``), unless
    its environment says ``NOETL_PYTHON_LAZY_PTH=0``."""
    if env.get(LAZY_PTH_SWITCH, "").strip().lower() in ("0", "false", "no", "off"):
        return []
    return ["-S"]


_BASE: tuple[dict, dict[str, str]] | None = None  # (os.environ's raw data, the env built from it)


def base_env() -> dict[str, str]:
    """The environment of a task without ``env:`` (the fork server's). Built again only
    when ``os.environ`` changed: copying it decodes every entry, on every task."""
    global _BASE
    # os.environ's private bytes -> bytes mapping: cheap to compare (not in the stubs).
    raw = os.environ._data  # type: ignore[attr-defined]
    if _BASE is None or _BASE[0] != raw:
        env = dict(os.environ)
        env.setdefault("PYTHONIOENCODING", "utf-8")  # prints of any text work under a C/latin-1 locale
        _BASE = (dict(raw), env)
    return dict(_BASE[1])


class TaskPipes:
    """The four pipes of one runner: the parent's ends and the child's ends.

    ``child_fds`` (stdin read end, stdout, stderr and response write ends) go to the
    runner and must be closed here once it has them; ``attach`` hands the parent's read
    ends to pumps; ``stdin`` is the write end the request is fed through.
    """

    def __init__(self) -> None:
        fds: list[int] = []
        try:
            for _ in range(4):
                fds.extend(os.pipe())
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        in_r, self.stdin, self._out, out_w, self._err, err_w, self._resp, resp_w = fds
        self.child_fds: tuple[int, ...] = (in_r, out_w, err_w, resp_w)

    def close_child_ends(self) -> None:
        for fd in self.child_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.child_fds = ()

    def close(self) -> None:
        """Everything (the runner could not be started)."""
        self.close_child_ends()
        for fd in (self.stdin, self._out, self._err, self._resp):
            with contextlib.suppress(OSError):
                os.close(fd)

    def attach(self, out: Callable[[bytes], None], err: Callable[[bytes], None],
               response: Callable[[bytes], None]) -> _proc.Pumps:
        pumps = _proc.Pumps()
        pumps.add(self._out, out)
        pumps.add(self._err, err)
        pumps.add(self._resp, response)
        return pumps


async def spawn_runner(env: dict[str, str], cwd: str, pipes: TaskPipes):
    """Start ``python -S -c RUNNER <response fd> <worker pid>`` on ``pipes``; the process
    (``-S``: see :func:`interpreter_flags`)."""
    in_r, out_w, err_w, resp_w = pipes.child_fds
    # Under the reaper (``_proc.reaped``): it owns what the code starts, past the runner's
    # own death too; the runner's parent is then the reaper.
    runner = [sys.executable, *interpreter_flags(env), "-c", RUNNER, str(resp_w)]
    argv = _proc.reaped([*runner, _proc.REAPER_PID]) if _proc.can_reap() else [*runner, str(os.getpid())]
    try:
        proc = await _proc.start_on(argv, cwd=cwd, env=env, stdin=in_r, stdout=out_w, stderr=err_w,
                                    pass_fds=(resp_w,), child_sets_pdeathsig=True)
        return _proc.as_reaped(proc)
    finally:
        pipes.close_child_ends()  # only the child may hold them, or EOF never comes
