"""The tool interface: one call description, one protocol, one registry, one envelope.

Tools are plain asyncio code with no Temporal imports, so they can be tested and reused
without a server. The activity wrapper (``noetl_temporal.workflow.activities``) calls ``run_outcome``,
which never raises for a tool failure: every failure becomes a ``status: error`` outcome
so that task policies (``when: output.error.kind == ...``) can route on it. It returns the
typed :class:`~noetl_temporal.engine.envelopes.Outcome`, which stays typed up to the
activity's return; ``run_tool`` is the same call for callers that want its JSON.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..engine.envelopes import ErrorInfo, Outcome, OutcomeStatus
from ..errors import ToolConfigError, ToolError

if TYPE_CHECKING:
    from ..keychain import Scrubber

log = logging.getLogger(__name__)

#: error keys of ``ToolError.details`` promoted to the top of ``outcome["error"]``
#: (policies read ``output.error.retry_after`` directly).
_PROMOTED_DETAILS = ("retry_after",)


@dataclass
class ToolCall:
    """Facts about this invocation (not the task's configuration)."""

    execution_id: str
    step: str
    task: str  # task label
    attempt: int = 1  # 1-based, Temporal retries included
    timeout: float | None = None  # seconds for this attempt (None = tool default)
    heartbeat: Callable[[Any], None] | None = None  # call periodically in long tools
    workdir: str | None = None
    # Keychain entries the activity resolved for this task (``auth: <name>`` of a
    # postgres task reads them). Never logged, never returned.
    keychain: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    # Secret strings to keep out of logs written here (the activity scrubs the outcome).
    secrets: tuple[str, ...] = field(default=(), repr=False)
    # Where a result too large for history goes (the activity sets them): the task run's id
    # and ``task.spec.result`` (``store.large_results``). A tool whose process writes a large
    # result itself stores it under them (the python tool); None outside an activity.
    task_run_id: str | None = None
    result_spec: dict[str, Any] | None = field(default=None, repr=False)
    # Whether the tool may store a large result itself: not when a policy will judge the
    # task by its result's value (the activity then needs the value).
    store_result: bool = False
    # This invocation's idempotency key, the same on every attempt (``engine/idempotency.py``,
    # docs/tools.md, "Idempotency key"); None outside an activity.
    idempotency_key: str | None = None
    # The one Scrubber of ``secrets``, built when a tool first needs it (:func:`scrubber`):
    # its patterns cost a compile per secret set, and a task cuts several texts with them.
    _scrubber: tuple[tuple[str, ...], Any] | None = field(default=None, init=False, repr=False, compare=False)


@runtime_checkable
class Tool(Protocol):
    kind: str

    async def run(self, config: dict, call: ToolCall) -> Any:
        """Return the ``result``; raise ``ToolError`` subclasses on failure."""
        ...


class ToolResult:
    """A result plus envelope helpers (``{"http": {...}}``) a tool wants next to it.

    Tools return a bare value when they have no helpers; ``run_tool`` unwraps this.
    """

    __slots__ = ("result", "extras")

    def __init__(self, result: Any, **extras: Any) -> None:
        self.result = result
        self.extras = extras


def fail_with(err: ToolError, result: Any = None, **extras: Any) -> ToolError:
    """Attach a result and envelope helpers to an error before raising it.

    A failed HTTP call still has a body, a failed shell command still has output:
    policies must be able to inspect them, so they travel in the error outcome.
    """
    err.outcome_result = result  # type: ignore[attr-defined]
    err.outcome_extras = extras  # type: ignore[attr-defined]
    return err


# --------------------------------------------------------------------------- JSON


def _default(o: Any) -> Any:
    # Sets become lists and bytes text: more useful downstream than their repr.
    if isinstance(o, (set, frozenset)):
        return list(o)
    if isinstance(o, (bytes, bytearray, memoryview)):
        return bytes(o).decode("utf-8", "replace")
    return str(o)


def _sanitize(x: Any, seen: set[int]) -> Any:
    """Slow path for what ``json.dumps`` refuses: non-str keys, cycles."""
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if id(x) in seen:
        return "<cycle>"
    if isinstance(x, dict):
        seen.add(id(x))
        out = {str(k) if not isinstance(k, str) else k: _sanitize(v, seen) for k, v in x.items()}
        seen.discard(id(x))
        return out
    if isinstance(x, (list, tuple, set, frozenset)):
        seen.add(id(x))
        out_list = [_sanitize(v, seen) for v in x]
        seen.discard(id(x))
        return out_list
    return _sanitize(_default(x), seen)


# What ``json.dumps(x, default=_default)`` builds on every call; stateless, so shared.
_ENCODER = json.JSONEncoder(default=_default)


class _NotPlain(Exception):
    """A value the copy below leaves to the JSON round trip."""


#: values (a container counts its items) the copy walks before leaving a value to the round
#: trip: a tool's usual result and helpers are a few; the C encoder wins on large ones
_COPY_BUDGET = 64


def _plain_copy(x: Any, left: list[int]) -> Any:
    """What the JSON round trip makes of a value already made of JSON's own types (exactly
    those: a subclass, a tuple, a non-str key, a non-finite float raise ``_NotPlain``): the
    same value, its dicts and lists new."""
    t = type(x)
    if t is str or t is int or t is bool or x is None:
        return x
    if t is float:
        if x - x == 0.0:  # finite (inf - inf and nan - nan are nan)
            return x
        raise _NotPlain
    if t is dict:
        left[0] -= len(x)
        if left[0] < 0:
            raise _NotPlain
        out = {}
        for key, value in x.items():
            if type(key) is not str:
                raise _NotPlain
            out[key] = _plain_copy(value, left)
        return out
    if t is list:
        left[0] -= len(x)
        if left[0] < 0:
            raise _NotPlain
        return [_plain_copy(value, left) for value in x]
    raise _NotPlain


# perf: a JSON encode and decode of a small plain value — benchmark: probes.activity_cpu
def to_jsonable(x: Any) -> Any:
    """``json.loads(json.dumps(x, default=str))`` semantics, never raising.

    A small value of JSON's own types is copied in Python, which for a handful of values
    costs less than encoding and decoding them (a task's ``{"i": 2}``, its tool's helpers)."""
    try:
        return _plain_copy(x, [_COPY_BUDGET])
    except _NotPlain:
        pass
    try:
        return json.loads(_ENCODER.encode(x))
    except (TypeError, ValueError, RecursionError):
        return _sanitize(x, set())


# ----------------------------------------------------------------------- registry

TOOLS: dict[str, Tool] = {}


def register_tool(tool: Tool) -> Tool:
    """Register (or replace) the tool for ``tool.kind``; returns it for decorator-ish use."""
    kind = getattr(tool, "kind", None)
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"tool {tool!r} has no 'kind' string")
    TOOLS[kind] = tool
    return tool


def get_tool(kind: str) -> Tool:
    try:
        return TOOLS[kind]
    except (KeyError, TypeError):
        known = ", ".join(sorted(TOOLS)) or "(none registered)"
        raise ToolConfigError(
            f"unknown tool kind {kind!r}; known kinds: {known}",
            fix=f"set 'kind' to one of: {known}",
        ) from None


# --------------------------------------------------------------------- timeouts


def resolve_timeout(config: dict, call: ToolCall, default: float) -> float:
    """The attempt's time budget: the stricter of the task's ``timeout`` and the call's.

    ``call.timeout`` comes from the activity's own limit, so a task may shorten it but
    never stretch past it.
    """
    raw = config.get("timeout")
    candidates: list[float] = []
    if raw is not None:
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise ToolConfigError(f"'timeout' must be a number of seconds, got {raw!r}") from None
        if not value > 0:
            raise ToolConfigError(f"'timeout' must be > 0 seconds, got {raw!r}")
        candidates.append(value)
    if call.timeout is not None and call.timeout > 0:
        candidates.append(float(call.timeout))
    return min(candidates) if candidates else float(default)


def beat(call: ToolCall, details: Any) -> None:
    """Heartbeat if the caller asked for it; a failing heartbeat never fails the tool."""
    if call.heartbeat is None:
        return
    try:
        call.heartbeat(details)
    except Exception:  # noqa: BLE001 - best effort by design
        log.debug("heartbeat failed", exc_info=True)


# ------------------------------------------------------------------------ envelope


def _rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _error_info(err: ToolError) -> ErrorInfo:
    details = dict(err.details or {})
    promoted = {key: details.pop(key) for key in _PROMOTED_DETAILS if key in details}
    return ErrorInfo(kind=err.kind, retryable=bool(err.retryable), code=err.code, message=err.message,
                     fix=err.fix or None, details=details or None, **promoted)


def scrubber(call: ToolCall) -> Scrubber:
    """The task's secrets as a ``keychain.Scrubber``: what a tool cuts text with (masked before
    the cut: a secret across it is masked whole; cut first, its visible part escaped the mask)."""
    if call._scrubber is None or call._scrubber[0] is not call.secrets:
        from ..keychain import Scrubber  # lazily: the keychain imports templates, most tasks have no secrets

        call._scrubber = (call.secrets, Scrubber(call.secrets))
    mask: Scrubber = call._scrubber[1]
    return mask


def _internal_error(exc: BaseException, call: ToolCall) -> ErrorInfo:
    # A bug in a tool, not a user failure: say what it was, keep the traceback short.
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-5))
    return ErrorInfo(kind="internal", retryable=False, code=type(exc).__name__,
                     message=f"{type(exc).__name__}: {exc}", details={"traceback": scrubber(call).tail(tb, 4000)})


def _jsonable_error(error: ErrorInfo) -> ErrorInfo:
    """The error with its tool-given values JSON-plain (what ``to_jsonable`` made of them in
    the outcome's JSON); ``kind``, ``message`` and ``fix`` are strings already."""
    code, retry_after = error.code, error.retry_after
    return dataclasses.replace(
        error, details=to_jsonable(error.details) if error.details else error.details,
        code=code if code is None or isinstance(code, str | int) else to_jsonable(code),
        retry_after=retry_after if retry_after is None or isinstance(retry_after, int | float)
        else to_jsonable(retry_after))


def _outcome(status: OutcomeStatus, result: Any, error: ErrorInfo | None, meta: dict[str, Any],
             extras: dict[str, Any]) -> Outcome:
    """The envelope with every tool-given value JSON-plain, part by part (the usual small
    result is the only part to convert; the envelope itself is never encoded here)."""
    return Outcome(status=status, result=to_jsonable(result) if result is not None else None,
                   error=_jsonable_error(error) if error is not None else None, meta=meta,
                   extra=to_jsonable(extras) if extras else {})


def error_outcome(err: ToolError, call: ToolCall, *, started: float | None = None) -> Outcome:
    """The outcome of a failure that happened before the tool could run (an unknown
    keychain entry, an unusable result store ...)."""
    started = time.time() if started is None else started
    return _outcome("error", getattr(err, "outcome_result", None), _error_info(err),
                    {"attempt": call.attempt, "duration_ms": int((time.time() - started) * 1000),
                     "started_at": _rfc3339(started)},
                    getattr(err, "outcome_extras", None) or {})


async def run_tool(kind: str, config: dict, call: ToolCall) -> dict:
    """:func:`run_outcome`'s outcome as its JSON envelope, for callers outside the activity."""
    return (await run_outcome(kind, config, call)).to_dict()


async def run_outcome(kind: str, config: dict, call: ToolCall) -> Outcome:
    """Run one tool invocation and return its outcome (every value in it JSON-plain).

    Cancellation (``asyncio.CancelledError``) is not a tool failure and propagates,
    so Temporal activity cancellation keeps working; tools clean up in ``finally``.
    """
    started = time.time()
    t0 = time.perf_counter()
    status: OutcomeStatus = "ok"
    result: Any = None
    error: ErrorInfo | None = None
    extras: dict[str, Any] = {}
    try:
        if config is None:
            config = {}
        if not isinstance(config, dict):
            raise ToolConfigError(f"tool configuration must be a mapping, got {type(config).__name__}")
        value = await get_tool(kind).run(config, call)
        if isinstance(value, ToolResult):
            extras = value.extras
            value = value.result
        result = value
    except ToolError as err:
        status, error = "error", _error_info(err)
        result = getattr(err, "outcome_result", None)
        extras = getattr(err, "outcome_extras", None) or {}
    except Exception as exc:  # noqa: BLE001 - the envelope is the contract
        status, error = "error", _internal_error(exc, call)
        if call.secrets:  # the traceback may quote a secret: log the scrubbed text only
            log.error("tool %s crashed in %s/%s: %s", kind, call.step, call.task,
                      (error.details or {})["traceback"])
        else:
            log.exception("tool %s crashed in %s/%s", kind, call.step, call.task)
    meta = {
        "attempt": call.attempt,
        "duration_ms": int((time.perf_counter() - t0) * 1000),
        "started_at": _rfc3339(started),
    }
    return _outcome(status, result, error, meta, extras)
