"""``kind: python``: run user code in a child interpreter.

A process per task, not ``exec`` in the worker: a crash, ``os._exit``, ``sys.exit``, a
segfault, a leaked thread or an endless loop in user code must not take the worker (and
every other activity on it) down. The process is forked from the loop's fork server
(``forkserver``/``zygote``, about a millisecond) or, for a task with an environment of
its own, started for it (``spawn``); see ``runner`` for the child side and the
protocol. ``in_worker: true`` opts a tiny trusted task out of the process boundary
(``inworker``).

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
import logging
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

from ...errors import ToolConfigError, ToolError, ToolTimeout
from ...store import large_results
from ...tool_kinds.python import PYTHON
from .. import _proc, _workdirs
from .._scripts import script_text
from ..base import ToolCall, ToolResult, fail_with, resolve_timeout, scrubber, to_jsonable
from . import forkserver, inworker, spawn
from .runner.failures import MESSAGE_CHARS, TRACEBACK_CHARS
from .spawn import RUNNER  # noqa: F401 - the child's program, re-exported

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 300.0
OUTPUT_LIMIT = 64 * 1024  # per stream; user prints are diagnostics, not data
# An in-worker task's py.stdout/py.stderr: its prints go to the worker's own streams.
# Never fed, only read: one for every task.
_NO_OUTPUT = _proc.Capture(0)


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


def _env(config: dict) -> tuple[dict[str, str], dict[str, str]]:
    """The task's environment, and the worker's (which the fork server has)."""
    extra = config.get("env") or {}
    if not isinstance(extra, dict):
        raise ToolConfigError("python task 'env' must be a mapping")
    base = spawn.base_env()  # the worker's environment, PYTHONIOENCODING=utf-8 by default
    if not extra:
        return base, base
    env = dict(base)
    env.update({str(k): v if isinstance(v, str) else json.dumps(v) for k, v in extra.items()})
    return env, base


@contextlib.contextmanager
def _workdir(call: ToolCall) -> Iterator[str]:
    if call.workdir:
        os.makedirs(call.workdir, exist_ok=True)
        yield call.workdir
        return
    tmp = _workdirs.take()
    try:
        yield tmp
    finally:
        _workdirs.give_back(tmp)


def _in_worker(config: dict) -> bool:
    value = config.get("in_worker", False)
    if not isinstance(value, bool):
        raise ToolConfigError(f"'in_worker' must be true or false, got {value!r}")
    if value and config.get("env"):
        raise ToolConfigError("'env:' needs a process of its own; an in_worker task shares the worker's "
                              "environment", fix="drop 'in_worker: true' or 'env:'")
    return value


class PythonTool:
    declaration = PYTHON  # its settings and traits: tool_kinds/python.py
    kind = declaration.kind

    async def run(self, config: dict, call: ToolCall) -> Any:
        loaded = await script_text(config, self.kind)   # NoETL's `script:` (tools/_scripts.py)
        code = loaded if loaded is not None else _code(config)
        request = {
            "code": code,
            "filename": f"<python {call.step}.{call.task}>",
            "params": to_jsonable(_params(config)),
            "libs": _libs(config),
        }
        if call.secrets:  # the runner keeps this much more of an error, for the mask to see across the cut
            request["cut_margin"] = scrubber(call).longest
        timeout = resolve_timeout(config, call, DEFAULT_TIMEOUT)
        if _in_worker(config):
            return await self._in_worker(request, timeout, call)
        env, base = _env(config)
        with _workdir(call) as cwd:
            # The runner enters the directory itself, so a forked process can serve the task.
            request["cwd"] = os.path.abspath(cwd)
            request.update(_result_limits(call, request["cwd"]))
            payload = json.dumps(request).encode()
            try:
                result = await self._execute(payload, timeout, env, base, cwd, call)
                return await _stored(result, call)
            finally:
                if request.get("spill"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(request["spill"])

    async def _in_worker(self, request: dict, timeout: float, call: ToolCall) -> Any:
        try:
            resp = await inworker.run(request, timeout)
        except TimeoutError:
            raise ToolTimeout(f"python code ran past its {timeout:g} s timeout; in_worker mode cannot stop "
                              "it, its thread runs on") from None
        # The result is made JSON-plain once, with the rest of the outcome (``base._outcome``).
        return self._answer(resp, _NO_OUTPUT, _NO_OUTPUT, None, call)

    async def _start(self, env: dict, base: dict, cwd: str, pipes: spawn.TaskPipes) -> Any:
        """A forked child when the fork server serves this environment, else a process of its own."""
        if forkserver.enabled() and env == base:
            try:
                return await forkserver.fork_runner(env, pipes)
            except OSError as exc:
                log.warning("python fork server unavailable (%s); starting a process for the task", exc)
        return await spawn.spawn_runner(env, cwd, pipes)

    async def _execute(self, payload: bytes, timeout: float, env: dict, base: dict, cwd: str,
                       call: ToolCall) -> Any:
        deadline = time.monotonic() + timeout
        out, err = _proc.capture(OUTPUT_LIMIT, scrubber(call)), _proc.capture(OUTPUT_LIMIT, scrubber(call))
        response = _Response(large_results.max_result_bytes())
        pipes = spawn.TaskPipes()
        try:
            # The request's head goes into the pipe before the runner exists, so it need
            # not wait for this loop to come round to feeding it.
            rest = payload[_proc.write_now(pipes.stdin, payload):]
            proc = await self._start(env, base, cwd, pipes)
        except BaseException:
            pipes.close()
            raise
        pumps = pipes.attach(out.feed, err.feed, response.feed)
        if isinstance(proc, forkserver.ForkedChild):  # done once answered: its teardown is not our wait
            pumps.tasks[-1].add_done_callback(lambda _: proc.answered() if response.total else None)
        # The usual small request went in whole: close stdin now, without a feeding task.
        feeder = asyncio.ensure_future(_proc.write_all(pipes.stdin, rest)) if rest else None
        if feeder is None:
            os.close(pipes.stdin)
        timed_out = False
        try:
            returncode = await _proc.wait_child(proc, deadline, call, term_first=False, what="python")
        except TimeoutError:
            timed_out = True
        finally:
            await _proc.reap(proc)  # no-op unless we were cancelled
            if feeder is not None:
                feeder.cancel()
            await pumps.finish()  # before reporting, so the output is complete
        if timed_out:
            raise fail_with(
                ToolTimeout(f"python code ran past its {timeout:g} s timeout; process group killed"),
                None, py=_py(out, err, None, proc.returncode),
            )
        if response.overflow:  # the runner caps the result; only code writing to its pipe gets here
            raise fail_with(ToolError(_too_large(response.total, response.cap), kind="python", retryable=False,
                                      code="ResultTooLarge", fix=TOO_LARGE_FIX),
                            None, py=_py(out, err, "ResultTooLarge", returncode))
        return self._outcome(bytes(response.data), returncode, out, err, call)

    def _outcome(self, raw: bytes, returncode: int, out: _proc.Capture, err: _proc.Capture,
                 call: ToolCall) -> Any:
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
        return self._answer(resp, out, err, returncode, call)

    def _answer(self, resp: dict, out: _proc.Capture, err: _proc.Capture, returncode: int | None,
                call: ToolCall) -> Any:
        """The runner's response as a result, or raised as the task's error."""
        if resp.get("ok"):
            if resp.get("result_file"):  # over the inline cap: written to a file for the store
                return ToolResult(_Spilled(resp["result_file"]), py=_py(out, err, None, returncode))
            return ToolResult(resp.get("result"), py=_py(out, err, None, returncode))
        etype = resp.get("type") or "Exception"
        if resp.get("kind") == "config":
            exc: ToolError = ToolConfigError(
                resp["message"], fix="add the missing keys to the task's input/args or give the parameters defaults"
            )
            exc.code = etype
        else:
            # the runner kept more than is shown when there are secrets: mask, then cut
            mask = scrubber(call)
            message = f"{etype}: {mask.head(str(resp.get('message', '')), MESSAGE_CHARS)}"
            if resp.get("line"):
                message += f" (line {resp['line']})"
            details = {k: resp[k] for k in ("line", "traceback", "exit_code") if resp.get(k) is not None}
            if isinstance(details.get("traceback"), str):
                details["traceback"] = mask.tail(details["traceback"], TRACEBACK_CHARS)
            exc = ToolError(message, kind="python", retryable=False, code=etype, details=details,
                            fix=TOO_LARGE_FIX if etype == "ResultTooLarge" else None)
        raise fail_with(exc, None, py=_py(out, err, etype, returncode))


TOO_LARGE_FIX = ("return a smaller result: write large data to a file or a database and return where it is, "
                 "or raise NOETL_MAX_RESULT_BYTES on the workers")


def _too_large(size: int, cap: int) -> str:
    return (f"ResultTooLarge: the result is more than {size:,} bytes of JSON, over the cap of {cap:,} bytes "
            "for one task's result (NOETL_MAX_RESULT_BYTES)")


class _Response:
    """The runner's answer as it arrives, kept up to the hard cap (and a margin for the
    envelope); past it only counted."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.total = 0
        self.overflow = False

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.overflow:
            return
        if self.total > self.cap + 65536:
            self.overflow = True
            self.data = bytearray()
            return
        self.data += chunk


class _Spilled:
    """A result the task's process wrote to a file (its JSON), for :func:`_stored`."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path


def _result_limits(call: ToolCall, cwd: str) -> dict[str, Any]:
    """What the runner is told about the result's size: the hard cap, and where a result
    over the inline cap goes instead of the response pipe. That only in an activity (which
    would store a large result anyway) that lets the tool store it (no policy judges the
    task by the result's value), for a task without secrets (the activity masks them in the
    result's value). When the reference needs values of the result (``select``, ``preview``,
    kept fields: ``large_results.needs_value``) the worker parses the file once."""
    limits: dict[str, Any] = {"max_result_bytes": large_results.max_result_bytes()}
    if call.store_result and call.task_run_id is not None and not call.secrets:
        limits["spill"] = os.path.join(cwd, f".noetl-result-{uuid.uuid4().hex}.json")
        limits["spill_over"] = large_results.inline_max_bytes(call.result_spec)
    return limits


async def _stored(result: Any, call: ToolCall) -> Any:
    """A result the process wrote to a file, moved into the result store (its ResultRef)."""
    if not (isinstance(result, ToolResult) and isinstance(result.result, _Spilled)):
        return result
    try:
        ref = await asyncio.to_thread(
            large_results.externalize_file, result.result.path, call.result_spec,
            execution_id=call.execution_id, task_run_id=call.task_run_id or "", attempt=call.attempt)
    except OSError as exc:  # a full disk, an unreachable store: another attempt may do better
        raise ToolError(f"cannot store the task result: {exc}", kind="result_store", retryable=True) from None
    return ToolResult(ref, **result.extras)


def _py(out: _proc.Capture, err: _proc.Capture, exception_type: str | None, returncode: int | None) -> dict:
    return {
        "stdout": out.text(),
        "stderr": err.text(),
        "stdout_truncated": out.truncated,
        "stderr_truncated": err.truncated,
        "exception_type": exception_type,
        "returncode": returncode,
    }
