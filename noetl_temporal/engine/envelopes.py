"""The envelopes that cross layers, one typed definition each.

* :class:`ErrorInfo`  - the ``error`` of an outcome (``kind``, ``message``, ...)
* :class:`Outcome`    - a task's outcome ``{status, result, error, meta}`` (tools build it,
  policies and the engine read it)
* :class:`Attempt`    - one attempt of a task invocation, as the activity recorded it
* :class:`TaskResult` - what the ``run_task`` activity hands back to the workflow
* :class:`RunOutput`  - the workflow's output (runner, observe and control read it)

On the wire they stay the plain JSON objects they always were: recorded workflow histories
carry them, events and stored results quote them. So ``from_dict`` keeps what it does not
model (``extra``) and the key order it read (``keys``), and ``to_dict`` gives back exactly
the object it was made from, including which keys were absent. Built in code (``keys``
None), an envelope writes its keys in the order the builders always used.

Pure: no Temporal import, no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from .status_layers import ExecutionStatus

__all__ = ["OutcomeStatus", "ErrorInfo", "Outcome", "Attempt", "TaskResult", "RunOutput"]

OutcomeStatus = Literal["ok", "error"]
_OUTCOME_STATUSES: tuple[OutcomeStatus, ...] = ("ok", "error")

def _layout(data: Mapping[str, Any], known: Iterable[str]) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The key order of ``data`` and its keys no envelope field models (kept verbatim)."""
    names = set(known)
    return tuple(data), {k: v for k, v in data.items() if k not in names}


def _assemble(keys: tuple[str, ...] | None, always: Mapping[str, Any], optional: Mapping[str, Any],
              extra: Mapping[str, Any]) -> dict[str, Any]:
    """One JSON object from an envelope's fields.

    Built in code (``keys`` None): every ``always`` key, then the ``optional`` ones that
    are set, then ``extra``. Read from JSON: the keys in the order read; an ``always`` key
    the JSON did not have stays absent, an ``optional`` one set since is added after them.
    (``dataclasses.replace(..., keys=None)`` makes a changed copy write the built-in order.)
    """
    if keys is None:  # the activity's envelopes, every call: the same object, without the general pass
        built = dict(always)
        for key, value in optional.items():
            if value is not None:
                built[key] = value
        for key, value in extra.items():
            built.setdefault(key, value)
        return built
    out: dict[str, Any] = {}
    present = {k: v for k, v in always.items() if k in keys}
    present.update((k, v) for k, v in optional.items() if v is not None or k in keys)
    for key in keys:
        if key in present:
            out[key] = present[key]
        elif key in extra:
            out[key] = extra[key]
    for key, value in (*present.items(), *extra.items()):
        out.setdefault(key, value)
    return out


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


# ----------------------------------------------------------------------------- ErrorInfo

_ERROR_ALWAYS = ("kind", "retryable", "code", "message")
_ERROR_OPTIONAL = ("fix", "retry_after", "details")


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """Why a task failed. ``kind`` is what policies route on (``output.error.kind``);
    ``retry_after`` (seconds, a server's ``Retry-After``) bounds a retry's delay from below."""

    kind: str
    message: str
    retryable: bool = False
    code: str | int | None = None
    fix: str | None = None                      # what the user can do about it
    retry_after: float | None = None
    details: Mapping[str, Any] | None = None    # anything else the tool knows (a traceback ...)
    extra: Mapping[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    @property
    def is_empty(self) -> bool:
        """Read from ``{}``: an error object that names nothing (the engine treats it as absent)."""
        return self.keys == ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ErrorInfo:
        data = _mapping(data, "an outcome's error")
        keys, extra = _layout(data, _ERROR_ALWAYS + _ERROR_OPTIONAL)
        return cls(kind=str(data.get("kind", "")), message=str(data.get("message", "")),
                   retryable=bool(data.get("retryable", False)), code=data.get("code"),
                   fix=data.get("fix"), retry_after=data.get("retry_after"), details=data.get("details"),
                   extra=extra, keys=keys)

    def to_dict(self) -> dict[str, Any]:
        return _assemble(self.keys,
                         {"kind": self.kind, "retryable": self.retryable, "code": self.code,
                          "message": self.message},
                         {"fix": self.fix, "retry_after": self.retry_after,
                          "details": dict(self.details) if self.details is not None else None},
                         self.extra)


# ----------------------------------------------------------------------------- Outcome

_OUTCOME_ALWAYS = ("status", "result", "error", "meta")
_OUTCOME_OPTIONAL = ("result_ref",)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One task invocation's outcome, the envelope task policies and templates read.

    ``meta`` holds the attempt's facts (``attempt``, ``duration_ms``, ``started_at``, a
    sub-playbook's ids); ``result_ref`` is set when a large result left for the result
    store; ``extra`` holds the helpers a tool puts next to its result (``http``, ...).
    """

    status: OutcomeStatus
    result: Any = None
    error: ErrorInfo | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    result_ref: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def ok(cls, result: Any, **meta: Any) -> Outcome:
        return cls(status="ok", result=result, meta=meta)

    @classmethod
    def failed(cls, error: ErrorInfo, *, result: Any = None, **meta: Any) -> Outcome:
        return cls(status="error", result=result, error=error, meta=meta)

    @property
    def is_ok(self) -> bool:
        return self.status == "ok"

    @property
    def error_kind(self) -> str | None:
        return self.error.kind if self.error is not None else None

    @property
    def attempt(self) -> int | None:
        value = self.meta.get("attempt")
        return value if isinstance(value, int) else None

    def updated(self, **changes: Any) -> Outcome:
        """A changed copy, as assigning keys of the JSON object would make it: a key the
        object lacked goes after the others (a step's outcome is its last task's, updated)."""
        keys = self.keys if self.keys is None else (*self.keys, *(k for k in changes if k not in self.keys))
        return dataclasses.replace(self, keys=keys, **changes)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Outcome:
        data = _mapping(data, "an outcome")
        keys, extra = _layout(data, _OUTCOME_ALWAYS + _OUTCOME_OPTIONAL)
        status = data.get("status", "error")   # no status: not a success (as policies always read it)
        if status not in _OUTCOME_STATUSES:
            raise ValueError(f"an outcome's status is 'ok' or 'error', got {status!r}")
        error = data.get("error")
        return cls(status=cast(OutcomeStatus, status), result=data.get("result"),
                   error=ErrorInfo.from_dict(error) if error is not None else None,
                   meta=_mapping(data.get("meta") or {}, "an outcome's meta"),
                   result_ref=data.get("result_ref"), extra=extra, keys=keys)

    def to_dict(self) -> dict[str, Any]:
        return _assemble(self.keys,
                         {"status": self.status, "result": self.result,
                          "error": self.error.to_dict() if self.error is not None else None,
                          "meta": dict(self.meta)},
                         {"result_ref": dict(self.result_ref) if self.result_ref is not None else None},
                         self.extra)


# ----------------------------------------------------------------------------- Attempt

_ATTEMPT_ALWAYS = ("attempt", "status", "started_at", "duration_ms", "error", "action", "rule_index")
_ATTEMPT_OPTIONAL = ("next_delay_s",)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt of a task invocation as the activity recorded it: its number, outcome
    status and error, timing, and the policy's ``action`` on it (``next_delay_s``: the wait
    before the retry it asked for). The records travel as JSON in heartbeats and in a
    ``PolicyRetry``'s details; the workflow reads them typed with the task's result."""

    attempt: int | None = None
    status: str | None = None
    started_at: str | None = None
    duration_ms: int | None = None
    error: ErrorInfo | None = None
    action: str | None = None
    rule_index: int | None = None
    next_delay_s: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Attempt:
        data = _mapping(data, "a task attempt")
        keys, extra = _layout(data, _ATTEMPT_ALWAYS + _ATTEMPT_OPTIONAL)
        error = data.get("error")
        return cls(attempt=data.get("attempt"), status=data.get("status"), started_at=data.get("started_at"),
                   duration_ms=data.get("duration_ms"),
                   error=ErrorInfo.from_dict(error) if error is not None else None, action=data.get("action"),
                   rule_index=data.get("rule_index"), next_delay_s=data.get("next_delay_s"), extra=extra, keys=keys)

    def to_dict(self) -> dict[str, Any]:
        return _assemble(self.keys,
                         {"attempt": self.attempt, "status": self.status, "started_at": self.started_at,
                          "duration_ms": self.duration_ms,
                          "error": self.error.to_dict() if self.error is not None else None,
                          "action": self.action, "rule_index": self.rule_index},
                         {"next_delay_s": self.next_delay_s}, self.extra)


# ----------------------------------------------------------------------------- TaskResult

_TASK_ALWAYS = ("outcome", "attempts", "rule_index", "action", "exhausted")


@dataclass(frozen=True, slots=True)
class TaskResult:
    """What one task invocation (all its attempts) reports back to the workflow.

    ``rule_index``/``action`` are the policy decision the activity took on the final
    outcome and ``exhausted`` says a retry rule ran out of attempts. ``decided=False`` when
    nobody could decide (the task was cancelled, its activity failed): the engine decides
    then. Only the activity's results cross the wire, always decided, so ``decided`` is
    written only when false: the activity's JSON is what it always was.
    """

    outcome: Outcome
    attempts: tuple[Attempt, ...] = ()
    rule_index: int | None = None
    action: str | None = None
    exhausted: bool = False
    decided: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def undecided(cls, outcome: Outcome) -> TaskResult:
        return cls(outcome=outcome, decided=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TaskResult:
        data = _mapping(data, "a task result")
        keys, extra = _layout(data, _TASK_ALWAYS + ("decided",))
        rule_index = data.get("rule_index")
        return cls(outcome=Outcome.from_dict(data["outcome"]),
                   attempts=tuple(Attempt.from_dict(a) for a in data.get("attempts") or ()),
                   rule_index=int(rule_index) if rule_index is not None else None, action=data.get("action"),
                   exhausted=bool(data.get("exhausted")), decided=bool(data.get("decided", True)),
                   extra=extra, keys=keys)

    def to_dict(self) -> dict[str, Any]:
        decided = None if self.decided and "decided" not in (self.keys or ()) else self.decided
        return _assemble(self.keys,
                         {"outcome": self.outcome.to_dict(), "attempts": [a.to_dict() for a in self.attempts],
                          "rule_index": self.rule_index, "action": self.action, "exhausted": self.exhausted},
                         {"decided": decided}, self.extra)


# ----------------------------------------------------------------------------- RunOutput

_RUN_ALWAYS = ("execution_id", "state", "result", "ctx", "steps", "started_at", "ended_at",
               "terminal_event", "event_count")
_RUN_OPTIONAL = ("paused",)


@dataclass(frozen=True, slots=True)
class RunOutput:
    """The workflow's output (and, with ``paused``, its ``detail`` query): the final state,
    the playbook's result (``reason`` of a failure, ``final_step``, ...), ctx, per-step
    status/runs/result, timing and the terminal lifecycle event."""

    execution_id: str
    state: ExecutionStatus
    result: Mapping[str, Any] | None = None
    ctx: Mapping[str, Any] = field(default_factory=dict)
    steps: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    started_at: str | None = None
    ended_at: str | None = None
    terminal_event: str | None = None
    event_count: int = 0
    paused: bool | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    @property
    def reason(self) -> Any:
        """Why it ended the way it did (a failure's or a cancel's reason), when it says."""
        return (self.result or {}).get("reason")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunOutput:
        data = _mapping(data, "a workflow output")
        keys, extra = _layout(data, _RUN_ALWAYS + _RUN_OPTIONAL)
        return cls(execution_id=str(data.get("execution_id", "")), state=ExecutionStatus(data["state"]),
                   result=data.get("result"), ctx=data.get("ctx") or {}, steps=data.get("steps") or {},
                   started_at=data.get("started_at"), ended_at=data.get("ended_at"),
                   terminal_event=data.get("terminal_event"), event_count=int(data.get("event_count") or 0),
                   paused=data.get("paused"), extra=extra, keys=keys)

    def to_dict(self) -> dict[str, Any]:
        return _assemble(self.keys,
                         {"execution_id": self.execution_id, "state": self.state.value,
                          "result": dict(self.result) if self.result is not None else None,
                          "ctx": dict(self.ctx), "steps": {k: dict(v) for k, v in self.steps.items()},
                          "started_at": self.started_at, "ended_at": self.ended_at,
                          "terminal_event": self.terminal_event, "event_count": self.event_count},
                         {"paused": self.paused}, self.extra)
