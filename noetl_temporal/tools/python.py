"""``kind: python``: run user code in a child interpreter.

A subprocess, not ``exec`` in the worker: a crash, ``os._exit``, ``sys.exit``, a
segfault, a leaked thread or an endless loop in user code must not take the worker (and
every other activity on it) down. The cost is one interpreter per task, usually started
ahead of time by the warm pool (``_pypool``); see ``_pyrunner`` for the child side and
the protocol.

Semantics (NoETL's, per the corpus): ``input`` and ``args`` are merged (``args`` wins),
bound as globals by name and as ``input_data``/``args``; the code sets ``result`` or
defines ``main(...)``, which is then called with parameters bound by name (``async def
main`` is awaited). ``libs: {alias: module}`` imports modules for the code.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from ..errors import ToolConfigError, ToolError, ToolTimeout
from . import _proc, _pypool
from ._pypool import RUNNER  # noqa: F401 - the child's program, re-exported
from .base import ToolCall, ToolResult, fail_with, resolve_timeout, to_jsonable

DEFAULT_TIMEOUT = 300.0
OUTPUT_LIMIT = 64 * 1024  # per stream; user prints are diagnostics, not data


def _code(config: dict) -> str:
    for key in ("code_b64", "code_base64"):
        if config.get(key):
            try:
                return base64.b64decode(config[key]).decode("utf-8")
            except (ValueError, UnicodeDecodeError) as exc:
                raise ToolConfigError(f"'{key}' is not valid base64 UTF-8 text: {exc}") from None
    code = config.get("code")
    if not isinstance(code, str) or not code.strip():
        raise ToolConfigError(
            "python task has no code", fix="add 'code:' with Python that sets `result` or defines main()"
        )
    return code


def _params(config: dict) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for key in ("input", "args"):  # later wins
        value = config.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise ToolConfigError(f"python task '{key}' must be a mapping, got {type(value).__name__}")
        merged.update(value)
    return merged


def _libs(config: dict) -> Any:
    libs = config.get("libs")
    if libs is None or isinstance(libs, (str, list)):
        return libs
    if isinstance(libs, dict):
        for alias, spec in libs.items():
            if not (isinstance(spec, str) or (isinstance(spec, dict) and spec.get("from"))):
                raise ToolConfigError(
                    f"libs.{alias} must be a module name or {{from: pkg, import: name}}, got {spec!r}"
                )
        return libs
    raise ToolConfigError(f"'libs' must be a mapping alias -> module or a list, got {type(libs).__name__}")


def _env(config: dict) -> dict[str, str]:
    extra = config.get("env") or {}
    if not isinstance(extra, dict):
        raise ToolConfigError("python task 'env' must be a mapping")
    env = _pypool.base_env()  # the worker's environment, PYTHONIOENCODING=utf-8 by default
    env.update({str(k): v if isinstance(v, str) else json.dumps(v) for k, v in extra.items()})
    return env


@contextlib.contextmanager
def _workdir(call: ToolCall) -> Iterator[str]:
    if call.workdir:
        os.makedirs(call.workdir, exist_ok=True)
        yield call.workdir
    else:
        with tempfile.TemporaryDirectory(prefix="noetl-py-", ignore_cleanup_errors=True) as tmp:
            yield tmp


async def _feed(stdin: asyncio.StreamWriter | None, data: bytes) -> None:
    if stdin is None:
        return
    # The child may die before reading everything; that is reported via its exit.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    stdin.close()


class PythonTool:
    kind = "python"

    async def run(self, config: dict, call: ToolCall) -> Any:
        code = _code(config)
        request = {
            "code": code,
            "filename": f"<python {call.step}.{call.task}>",
            "params": to_jsonable(_params(config)),
            "libs": _libs(config),
        }
        timeout = resolve_timeout(config, call, DEFAULT_TIMEOUT)
        env = _env(config)
        with _workdir(call) as cwd:
            # The runner enters the directory itself, so a pooled process can serve the task.
            request["cwd"] = os.path.abspath(cwd)
            payload = json.dumps(request).encode()
            return await self._execute(payload, timeout, env, cwd, call)

    async def _execute(self, payload: bytes, timeout: float, env: dict, cwd: str, call: ToolCall) -> Any:
        deadline = time.monotonic() + timeout
        out, err = _proc.Capture(OUTPUT_LIMIT), _proc.Capture(OUTPUT_LIMIT)
        response = bytearray()
        # A warm process when the task's environment is the pool's, else one of its own.
        runner = _pypool.take(env)
        if runner is None:
            runner = await _pypool.start_runner(env, cwd=cwd)
        proc = runner.proc
        pumps = runner.attach(out.feed, err.feed, response.extend)
        feeder = asyncio.ensure_future(_feed(proc.stdin, payload))
        timed_out = False
        try:
            returncode = await _proc.wait_child(proc, deadline, call, term_first=False, what="python")
        except TimeoutError:
            timed_out = True
        finally:
            await _proc.reap(proc)  # no-op unless we were cancelled
            _pypool.refill()
            feeder.cancel()
            await pumps.finish()  # before reporting, so the output is complete
        if timed_out:
            raise fail_with(
                ToolTimeout(f"python code ran past its {timeout:g} s timeout; process group killed"),
                None, py=_py(out, err, None, proc.returncode),
            )
        return self._outcome(bytes(response), returncode, out, err)

    def _outcome(self, raw: bytes, returncode: int, out: _proc.Capture, err: _proc.Capture) -> Any:
        if not raw:
            # No response: the interpreter died under the code (os._exit, a signal, a
            # crash in C code) or the runner itself failed; stderr says which.
            tail = err.text().strip().splitlines()[-5:]
            msg = f"python process {_proc.describe_exit(returncode)} before returning a result"
            if tail:
                msg += ": " + " | ".join(tail)
            code = _proc.signal_name(-returncode) if returncode < 0 else "ProcessExit"
            raise fail_with(
                ToolError(msg, kind="python", retryable=False, code=code, details={"returncode": returncode}),
                None, py=_py(out, err, None, returncode),
            )
        try:
            resp = json.loads(raw)
        except ValueError:  # only if user code wrote into the response pipe itself
            raise fail_with(
                ToolError("the python runner returned a malformed response", kind="python",
                          retryable=False, code="ProtocolError"),
                None, py=_py(out, err, None, returncode),
            ) from None
        if resp.get("ok"):
            return ToolResult(resp.get("result"), py=_py(out, err, None, returncode))
        etype = resp.get("type") or "Exception"
        if resp.get("kind") == "config":
            exc: ToolError = ToolConfigError(
                resp["message"], fix="add the missing keys to the task's input/args or give the parameters defaults"
            )
            exc.code = etype
        else:
            message = f"{etype}: {resp.get('message', '')}"
            if resp.get("line"):
                message += f" (line {resp['line']})"
            details = {k: resp[k] for k in ("line", "traceback", "exit_code") if resp.get(k) is not None}
            exc = ToolError(message, kind="python", retryable=False, code=etype, details=details)
        raise fail_with(exc, None, py=_py(out, err, etype, returncode))


def _py(out: _proc.Capture, err: _proc.Capture, exception_type: str | None, returncode: int | None) -> dict:
    return {
        "stdout": out.text(),
        "stderr": err.text(),
        "stdout_truncated": out.truncated,
        "stderr_truncated": err.truncated,
        "exception_type": exception_type,
        "returncode": returncode,
    }
