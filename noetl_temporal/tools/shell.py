"""``kind: shell``: run commands with ``/bin/sh -c``.

``cmd`` (string), ``cmds`` (list, run in order, stop at the first failure) or
``command`` (alias of either). One deadline covers the whole list. The task's secrets
reach the commands through the environment, never their argv (``_shellsecrets``). Each command runs in
its own process group so a timeout kills what it spawned too (SIGTERM, then SIGKILL), and in a
process that owns everything it starts (a subreaper: ``python.runner.reaping``), so nothing it
left in the background, however detached, outlives it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from typing import Any

from ..errors import ToolConfigError, ToolError, ToolTimeout
from ..templates.text import text_of
from ..tool_kinds.shell import SHELL as DECLARATION
from . import _proc
from ._shellsecrets import hide_secrets
from .base import ToolCall, ToolResult, fail_with, resolve_timeout, scrubber
from .python import forkserver, spawn

#: the environment variable holding the invocation's idempotency key (docs/tools.md)
IDEMPOTENCY_ENV = "NOETL_IDEMPOTENCY_KEY"

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 300.0
OUTPUT_LIMIT = 1024 * 1024  # per stream, over all commands
SHELL = "/bin/sh"


def _commands(config: dict) -> list[str]:
    raw = next((config[k] for k in ("cmds", "cmd", "command") if config.get(k) is not None), None)
    if raw is None:
        raise ToolConfigError("shell task has no command", fix="add 'cmd: <command>' or 'cmds: [...]'")
    items = raw if isinstance(raw, list) else [raw]
    if not items or not all(isinstance(c, str) and c.strip() for c in items):
        raise ToolConfigError(f"shell commands must be non-empty strings, got {raw!r}")
    return items


def _env(config: dict) -> dict[str, str]:
    extra = config.get("env") or {}
    if not isinstance(extra, dict):
        raise ToolConfigError("shell task 'env' must be a mapping")
    inherit = config.get("inherit_env", True)
    env = dict(os.environ) if inherit not in (False, "false", "False", 0) else {"PATH": os.defpath}
    for k, v in extra.items():
        if v is None:
            env.pop(str(k), None)
        else:
            env[str(k)] = text_of(v)   # templates render native values; the shell knows text
    return env


def _cwd(config: dict, call: ToolCall) -> str | None:
    """``cwd``, else the task's workdir (created on demand), else the worker's directory."""
    cwd = config.get("cwd")
    if cwd is not None:
        if not os.path.isdir(str(cwd)):
            raise ToolConfigError(f"shell 'cwd' {cwd!r} is not a directory")
        return str(cwd)
    if call.workdir:
        os.makedirs(call.workdir, exist_ok=True)
    return call.workdir


class ShellTool:
    declaration = DECLARATION  # its settings and traits: tool_kinds/shell.py
    kind = declaration.kind

    async def run(self, config: dict, call: ToolCall) -> Any:
        commands = _commands(config)
        env, cwd = _env(config), _cwd(config, call)
        if call.idempotency_key is not None:   # docs/tools.md, "Idempotency key"
            env[IDEMPOTENCY_ENV] = call.idempotency_key
        timeout = resolve_timeout(config, call, DEFAULT_TIMEOUT)
        deadline = time.monotonic() + timeout
        out, err = _proc.capture(OUTPUT_LIMIT, scrubber(call)), _proc.capture(OUTPUT_LIMIT, scrubber(call))
        returncode = 0
        for index, command in enumerate(commands):
            try:
                command, hidden = hide_secrets(command, call.secrets)   # secrets in env, not in ps
                returncode = await _run_one(command, {**env, **hidden}, cwd, deadline, call, out, err)
            except TimeoutError:
                result = _result(out, err, None)
                raise fail_with(
                    ToolTimeout(f"shell command #{index + 1} ran past the {timeout:g} s timeout; "
                                f"process group killed: {_short(command, call)}"),
                    result, shell={"returncode": None},
                ) from None
            if returncode != 0:
                result = _result(out, err, returncode)
                tail = [ln for ln in err.text().splitlines() if ln.strip()][-5:]
                msg = f"shell command #{index + 1} {_proc.describe_exit(returncode)}: {_short(command, call)}"
                if tail:
                    msg += "\n" + "\n".join(tail)
                raise fail_with(
                    ToolError(msg, kind="shell", retryable=False, code=returncode,
                              details={"command_index": index}),
                    result, shell={"returncode": returncode},
                )
        return ToolResult(_result(out, err, returncode), shell={"returncode": returncode})


async def _run_one(command: str, env: dict, cwd: str | None, deadline: float, call: ToolCall,
                   out: _proc.Capture, err: _proc.Capture) -> int:
    """Run one command in a process that owns everything it starts (docs/tools.md, "A task
    owns its processes"): forked by the python tool's fork server (about a millisecond), else
    under a reaper of its own (an interpreter's start)."""
    if forkserver.enabled():
        try:
            return await _run_forked(command, env, cwd, deadline, call, out, err)
        except _ForkUnavailable as exc:
            log.warning("python fork server unavailable for a shell command (%s); starting a reaper", exc)
    proc, pumps = await _proc.spawn([SHELL, "-c", command], cwd=cwd, env=env, out=out, err=err)
    try:
        return await _proc.wait_child(proc, deadline, call, term_first=True, what="shell")
    finally:
        await _proc.reap(proc)  # no-op unless we were cancelled
        await pumps.finish()


class _ForkUnavailable(Exception):
    """The fork server could not take the command: it never started, so running it another
    way is safe. Any error once it was handed over is the task's: a second start would run
    the command twice, and the task's own deadline (``TimeoutError``) is an ``OSError`` too."""


async def _run_forked(command: str, env: dict, cwd: str | None, deadline: float, call: ToolCall,
                      out: _proc.Capture, err: _proc.Capture) -> int:
    """The command run as a process forked from the fork server (``runner.reaping.run_command``:
    the process becomes the command). Its exit status comes in the fork server's report of
    its exit, sent once the server has killed what the command left."""
    request = json.dumps({"exec": [SHELL, "-c", command], "env": env, "cwd": cwd or os.getcwd()}).encode()
    pipes = spawn.TaskPipes()
    try:
        rest = request[_proc.write_now(pipes.stdin, request):]
        proc = await forkserver.fork_runner(spawn.base_env(), pipes)
    except OSError as exc:
        pipes.close()
        raise _ForkUnavailable(str(exc)) from None
    except BaseException:
        pipes.close()
        raise
    # The response pipe stays empty (close-on-exec: the process became the command).
    pumps = pipes.attach(out.feed, err.feed, _ignore)
    feeder = asyncio.ensure_future(_proc.write_all(pipes.stdin, rest)) if rest else None
    if feeder is None:
        os.close(pipes.stdin)
    try:
        return await _proc.wait_child(proc, deadline, call, term_first=True, what="shell")  # type: ignore[arg-type]
    finally:
        await _proc.reap(proc)  # type: ignore[arg-type]  # no-op unless we were cancelled
        if feeder is not None:
            feeder.cancel()
        await pumps.finish()


def _ignore(_: bytes) -> None:
    pass


def _result(out: _proc.Capture, err: _proc.Capture, returncode: int | None) -> dict:
    return {
        "stdout": out.text(),
        "stderr": err.text(),
        "returncode": returncode,
        "stdout_truncated": out.truncated,
        "stderr_truncated": err.truncated,
    }


def _short(command: str, call: ToolCall, limit: int = 200) -> str:
    # (secrets are moved out of the command, but a form of one may remain: masked before the cut)
    return scrubber(call).head(" ".join(command.split()), limit)
