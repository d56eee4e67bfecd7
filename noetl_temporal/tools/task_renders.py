"""Task-side renders: a task's templates that use a task-only filter or test (``urlize``,
``striptags``, ``wordwrap``, ``pprint``: ``dsl/template_ops.py``) are rendered in the
worker's process only while their inputs are small enough to bound their cost before they
run (``templates.small_inputs_only``), else in a child process under CPU and memory rlimits
(the program ``noetl_temporal/templates/child.py``) (docs/durability.md, "Task-side renders").

``urlize``'s URL regex is quadratic in one C call that holds the GIL: no budget checked in
Python can interrupt it, and on the worker's process it froze every execution the worker
served. In a child, the kernel ends it at the CPU limit, the task fails with a located error,
and a cancel of the activity kills the child at once. A configuration with no such template
(the usual task), or with small inputs only, never starts a child.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import TemplateError, ToolError
from ..templates import NeedsIsolation, limits, render, small_inputs_only
from ..templates.limits import MAX_VALUE_SIZE
from ._proc import die_with_parent

__all__ = ["CPU_SECONDS", "MEMORY_BYTES", "WALL_SECONDS", "render_in_child", "positions"]

#: CPU seconds a render child may use (its rlimit; the kernel ends it past this). The template
#: budgets hold any render to about a CPU second; only a task-only filter's C call goes past.
CPU_SECONDS = 3
#: the child's address space (its rlimit): the interpreter and Jinja take some 60 MB, the
#: rest is for what the templates build (at most ``MAX_VALUE_SIZE`` characters together)
MEMORY_BYTES = 1 << 30
#: wall-clock seconds before the child is killed whatever its CPU use (a loaded machine
#: gives it less than a core)
WALL_SECONDS = 20
#: what the gated filters may cost in the worker's process, as their inputs' squared sizes
#: added up (characters or items): 2,000 characters of the worst input for ``urlize`` take
#: about 0.06 CPU-s. A larger input renders in a child.
IN_PROCESS_BUDGET = 2000 * 2000
#: the most the parent reads of the child's answer: the rendered values as JSON
MAX_ANSWER_BYTES = 8 * MAX_VALUE_SIZE + (1 << 20)
_MAX_STDERR = 4000
# The child imports this package from where the worker did, whatever the worker's sys.path
# was made of (an embedding application may have added it by hand); `-P` keeps the worker's
# working directory off its path (a user's `json.py` there would shadow the standard library).
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_FIX = ("a task-only filter (urlize, striptags, wordwrap, pprint) costs more than linear time on a long "
        "input; shorten what it gets (`| truncate(10000)`), or do this work in the task's own code")

Path = tuple[str | int, ...]


def positions(value: Any, predicate: Callable[[str], bool], path: Path = ()) -> list[tuple[Path, str]]:
    """Every string of ``value`` (dicts and lists recursively) ``predicate`` picks, with its path."""
    if isinstance(value, str):
        return [(path, value)] if predicate(value) else []
    if isinstance(value, Mapping):
        return [found for k, v in value.items() for found in positions(v, predicate, (*path, k))]
    if isinstance(value, list | tuple):
        return [found for i, v in enumerate(value) for found in positions(v, predicate, (*path, i))]
    return []


def _where(base: str, path: Path) -> str:
    return base + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _replaced(value: Any, path: Path, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, Mapping):
        return {**value, head: _replaced(value[head], rest, new)}
    copy = list(value)
    copy[head] = _replaced(copy[head], rest, new)   # type: ignore[index]
    return copy


async def render_in_child(config: dict[str, Any], predicate: Callable[[str], bool], context: Mapping[str, Any],
                          where: str) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """``config`` with the strings ``predicate`` picks rendered in a render child, and each
    template with the value it rendered to (the activity masks those that read secrets).

    ``where`` is the task's ``<step>.tool.<task>``: errors name the setting below it, as the
    engine's do, so ``run`` points at the playbook's line. Raises ``ToolError`` (kind
    ``template``, not retryable) when a render fails or a limit stops it."""
    found = positions(config, predicate)
    if not found:
        return config, []
    values = _render_here(found, context, where)
    if values is not None:
        return _substituted(config, found, values)
    request = json.dumps({"strings": [[_where(where, p), text] for p, text in found], "context": dict(context)},
                         default=str).encode()
    answer = await _run_child(request)
    at = answer.get("at")
    text_at, where_at = None, where
    if isinstance(at, int) and 0 <= at < len(found):
        text_at, where_at = found[at][1], _where(where, found[at][0])
    if "values" in answer:
        return _substituted(config, found, answer["values"])
    limit = answer.get("limit")
    if limit == "memory":
        limit = f"memory limit ({MEMORY_BYTES >> 20} MiB)"
    if limit is not None:   # the fix in the message, as the engine's template errors carry it
        message = (f"{where_at}: the render went over the task-side render's {limit} and was stopped "
                   f"in template {text_at!r} (fix: {_FIX})")
        raise ToolError(message, kind="template", retryable=False)
    raise ToolError(str(answer.get("error") or f"{where_at}: the render failed"), kind="template", retryable=False)


def _answers(out: bytes) -> list[dict[str, Any]]:
    """The child's JSON lines (a child killed while writing leaves its last one cut)."""
    answers = []
    for line in out.splitlines():
        with contextlib.suppress(ValueError):
            answers.append(json.loads(line))
    return answers


def _render_here(found: list[tuple[Path, str]], context: Mapping[str, Any], where: str) -> list[Any] | None:
    """The values, rendered in this process when every gated filter's input is small (the
    usual ``{{ name | wordwrap(40) }}``: no child to start); None when one is not."""
    budget = limits.ValueBudget()
    values = []
    try:
        with small_inputs_only(IN_PROCESS_BUDGET):
            for path, text in found:
                values.append(budget.add(render(text, context, where=_where(where, path))))
    except NeedsIsolation:
        return None
    except TemplateError as exc:
        raise ToolError(str(exc), kind="template", retryable=False) from None
    except limits.LimitExceeded as exc:
        raise ToolError(f"{where}: not allowed in playbook templates: {exc}", kind="template",
                        retryable=False) from None
    return values


def _substituted(config: dict[str, Any], found: list[tuple[Path, str]],
                 values: list[Any]) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    rendered: Any = config
    for (path, _), value in zip(found, values, strict=True):
        rendered = _replaced(rendered, path, value)
    return rendered, [(text, value) for (_, text), value in zip(found, values, strict=True)]


async def _run_child(request: bytes) -> dict[str, Any]:
    """Run one render child; its last answer line, or ``{"limit": ..., "at": i}`` when a limit
    or a crash ended it (``at``: the string it was rendering)."""
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": _PACKAGE_ROOT + (os.pathsep + path if path else "")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-m", "noetl_temporal.templates.child", str(CPU_SECONDS), str(MEMORY_BYTES),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=env, start_new_session=True, preexec_fn=die_with_parent())
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out = bytearray()
    err = bytearray()
    over = False

    async def feed() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(request)
            await proc.stdin.drain()
            proc.stdin.close()

    async def read_out() -> None:   # in chunks: one rendered value may be a line of megabytes
        nonlocal over
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(1 << 16):
            if len(out) + len(chunk) > MAX_ANSWER_BYTES:
                over = True
                proc.kill()
                return
            out.extend(chunk)

    async def read_err() -> None:
        assert proc.stderr is not None
        while chunk := await proc.stderr.read(65536):
            err.extend(chunk[: max(0, _MAX_STDERR - len(err))])

    jobs = [asyncio.ensure_future(job) for job in (feed(), read_out(), read_err(), proc.wait())]
    timed_out = False
    try:
        _, pending = await asyncio.wait(jobs, timeout=WALL_SECONDS)
        timed_out = bool(pending)
    finally:   # a cancelled activity, a timeout, an answer too large: the child goes with it
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        for job in jobs[:3]:
            job.cancel()
        # proc.wait() ends once the killed child is reaped and its pipes are closed
        await asyncio.shield(asyncio.gather(*jobs, return_exceptions=True))
    answers = [] if over else _answers(bytes(out))
    at = next((a["at"] for a in reversed(answers) if a.get("at") is not None), None)
    last = answers[-1] if answers else {}
    if not over and ("values" in last or "error" in last):   # the child's own answer
        return last
    if over:
        return {"limit": f"answer size ({MAX_ANSWER_BYTES:,} bytes)", "at": at}
    if timed_out:
        return {"limit": f"time limit ({WALL_SECONDS} s of wall-clock time)", "at": at}
    code = proc.returncode
    if code is not None and code < 0 and -code in (signal.SIGXCPU, signal.SIGKILL):
        return {"limit": f"CPU limit ({CPU_SECONDS} CPU-s)", "at": at}
    detail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit status {code}"]
    return {"error": f"the render child ended without an answer: {detail[0]}", "at": at}
