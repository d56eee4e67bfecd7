"""The one exception tree of noetl-temporal.

::

    NoetlError                      base of everything we raise on purpose
    ├── PlaybookInvalid             the playbook failed validation (carries diagnostics)
    ├── PayloadTooLarge             a request payload over engine.payload_size.MAX_PAYLOAD_SIZE
    ├── TemplateError               a template failed to parse or render (where + why)
    │   ├── ResultFieldUnavailable  it read a part of a stored (large) result that was not kept
    │   └── NeedsIsolation          templates: a gated filter's input too large for this process
    ├── EngineError                 the interpreter met a condition it cannot continue from
    │   └── InvalidTransition       an illegal status move: always a bug, never user input
    ├── ToolError                   a tool invocation failed; becomes an error *outcome*
    │   ├── ToolConfigError         the task's configuration is unusable (not retryable)
    │   ├── ToolTimeout             the attempt ran past its timeout (retryable)
    │   ├── KeychainError           keychain: an entry cannot be resolved (not retryable)
    │   └── ResultRefError          store.large_results: a result reference cannot be read
    ├── ConfigError                 the runtime (CLI/API/worker) is misconfigured
    ├── RunFailed                   compat: run(raise_on_failure=True) did not complete (a RuntimeError too)
    ├── NotFound                    no execution (or catalog entry) with that id
    ├── ExecutionFinished           temporal.control: the execution already ended (HTTP 409)
    ├── Rejected                    temporal.control: a refused ctx patch, or redrive (HTTP 422)
    ├── StillRunning                temporal.redrive: the execution to redrive has not ended (HTTP 409)
    ├── ScheduleExists              temporal.schedules: a schedule of that name exists (HTTP 409)
    ├── ScheduleInvalid             temporal.schedules: a bad cron, duration, policy or time (HTTP 422)
    ├── BadRequest                  api.errors: a request that parses but makes no sense (HTTP 422)
    ├── TooLarge                    api.limits: a request past its size limit once parsed (HTTP 413)
    └── Overloaded                  api.admission: more requests than the API takes at once (HTTP 503, Retry-After)

Outside the tree on purpose (``tests/test_errors.py`` holds this list too)::

    LimitExceeded(jinja2 SecurityError)   templates.limits: a render over budget; Jinja's own
                                          error type, so the render path reports it as every
                                          other refused template construct
    _Stop(Exception)                      dsl.yaml_loader: unwinds the YAML builder after a
                                          diagnostic was reported; never leaves the module
    _NotPlain(Exception)                  tools.base: unwinds to_jsonable's fast copy when a
                                          value needs the JSON round trip; never leaves it
    _Unusual(Exception)                   dsl.yaml_loader: the events fast path gives up on a
                                          document the composing path must read; never leaves it
    _ForkUnavailable(Exception)           tools.shell: the fork server could not take a command,
                                          so a reaper of its own runs it; never leaves the module
    _Cancelled(Exception)                 tools.transfer: unwinds a transfer's thread once its
                                          task timed out; never leaves the module

The engine's runaway guards are outcomes, not exceptions, so the run's events and ctx
stay: a task-policy jump cycle past ``executor.spec.max_jumps`` fails its pipeline with a
``jump_limit`` error (task policies can route on it), and a routing cycle past
``executor.spec.max_step_runs`` stops the execution as failed (reason ``limit``).

Tool errors never escape an activity as Python exceptions: the activity turns them into
the outcome envelope (``status: error``) so task policies can route on them. Only policy
retries and bugs cross the activity boundary, as typed ``ApplicationError``s
(see ``noetl_temporal.workflow.activities``).
"""

from __future__ import annotations

from typing import Any


class NoetlError(Exception):
    """Base class; ``fix`` says in words what the user can do about it."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:  # message plus fix, as a user reads it
        return f"{self.message} (fix: {self.fix})" if self.fix else self.message


class PlaybookInvalid(NoetlError):
    """Validation failed; ``diagnostics`` lists every located error."""

    def __init__(self, diagnostics: list[Any], source: str | None = None) -> None:
        self.diagnostics = diagnostics
        self.source = source
        errors = [d for d in diagnostics if getattr(d, "severity", "error") == "error"]
        first = errors[0] if errors else None
        msg = f"{len(errors)} error(s) in playbook{f' {source}' if source else ''}"
        if first is not None:
            msg += f": {first}"
        super().__init__(msg)


class PayloadTooLarge(NoetlError):
    """A request payload over ``engine.payload_size.MAX_PAYLOAD_SIZE``: refused before it starts anything."""


class TemplateError(NoetlError):
    """A template could not be parsed or rendered."""

    def __init__(self, message: str, *, template: str | None = None, where: str | None = None,
                 fix: str | None = None) -> None:
        self.template = template
        self.where = where
        text = message
        if where:
            text = f"{where}: {text}"
        if template is not None:
            text = f"{text} in template {template!r}"
        super().__init__(text, fix=fix)


class ResultFieldUnavailable(TemplateError):
    """A template read a part of a result stored by reference that the workflow does not
    hold (engine/stored_results.py): never read as undefined, it fails where it is read."""


class EngineError(NoetlError):
    """The interpreter cannot continue."""


class InvalidTransition(EngineError):
    """An illegal (from, to) move in one of the status tables: a bug."""

    def __init__(self, layer: str, src: Any, dst: Any) -> None:
        self.layer, self.src, self.dst = layer, src, dst
        super().__init__(f"invalid {layer} transition {getattr(src, 'value', src)} -> "
                         f"{getattr(dst, 'value', dst)}")


class ToolError(NoetlError):
    """A tool invocation failed. ``kind`` is the error kind of the outcome envelope."""

    def __init__(self, message: str, *, kind: str = "tool_error", retryable: bool = False,
                 code: str | int | None = None, fix: str | None = None,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message, fix=fix)
        self.kind = kind
        self.retryable = retryable
        self.code = code
        self.details = details or {}


class ToolConfigError(ToolError):
    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message, kind="config", retryable=False, fix=fix)


class ToolTimeout(ToolError):
    def __init__(self, message: str) -> None:
        super().__init__(message, kind="timeout", retryable=True)


class ConfigError(NoetlError):
    pass


class NotFound(NoetlError):
    pass


class RunFailed(NoetlError, RuntimeError):
    """``noetl_temporal.run(..., raise_on_failure=True)``: the run ended FAILED or CANCELLED.

    A ``RuntimeError`` too, because NoETL's ``noetl.run`` raises one for a failed run and its
    users catch that; ``outcome`` is the envelope the call would have returned."""

    def __init__(self, message: str, *, outcome: dict[str, Any]) -> None:
        super().__init__(message)
        self.outcome = outcome
