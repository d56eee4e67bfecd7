"""Small helpers the interpreter's modules share: events, template scope, ctx patches,
failure records, tokens, and keeping payloads small and JSON-plain.

Nothing here calls back into the other interpreter modules.
"""

from __future__ import annotations

import itertools
import json
import uuid as uuid_module
from datetime import datetime
from typing import Any

from ..dsl.models import Step
from ..templates import HeldPart
from .behaviours import STEP_ENVELOPE_DATA, STORED_RESULT_FIELDS
from .context import Scope, build_context, set_path
from .envelope_data import EnvelopeLayer
from .envelopes import ErrorInfo, Outcome
from .state import ExecutionState, Failure, PipelineRun, Token
from .stored_results import StoredLayer

__all__ = ["emit", "step_definition", "template_context", "patch_ctx", "record_failure", "add_token",
           "engine_error", "error_outcome", "ended_outcome", "short", "short_outcome", "plain"]


def emit(state: ExecutionState, event_type: str, **fields: Any) -> dict[str, Any]:
    return state.log.emit(event_type, timestamp=state.now, **fields)


def step_definition(state: ExecutionState, name: str) -> Step:
    return state.graph.steps[name]


def template_context(state: ExecutionState, step_def: Step | None, *, args: dict[str, Any] | None = None,
                     pipe: PipelineRun | None = None, extra: dict[str, Any] | None = None) -> Scope:
    iterator = step_def.loop.iterator if step_def is not None and step_def.loop is not None else None
    names = _replay_safe_functions(state)
    if extra:
        names.update(extra)
    results: Any = state.step_results
    pipeline_vars: Any = pipe.vars if pipe else None
    if STORED_RESULT_FIELDS in state.behaviours:  # stored results read through their kept fields
        results = StoredLayer(results, state.graph.loop_steps)
        pipeline_vars = StoredLayer(pipeline_vars) if pipeline_vars else None
    if STEP_ENVELOPE_DATA in state.behaviours:  # NoETL's `{{ step.data }}` (envelope_data.py)
        results = EnvelopeLayer(results, state.task_results)
    return build_context(workload=state.workload, ctx=state.ctx, execution_id=state.execution_id,
                         step_results=results, args=args,
                         iter_scope=pipe.iter_scope if pipe else None, iterator=iterator,
                         pipeline_vars=pipeline_vars, spec=state.playbook.spec, extra=names)


def _replay_safe_functions(state: ExecutionState) -> dict[str, Any]:
    """``now()`` and ``uuid()`` for templates, derived from workflow time and the event
    sequence only, so a replay renders exactly the same values."""
    calls = itertools.count()
    stamp = state.now

    def now() -> datetime | None:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None

    def uuid() -> str:
        return str(uuid_module.uuid5(uuid_module.NAMESPACE_URL,
                                     f"noetl:{state.execution_id}:{state.log.seq}:{next(calls)}"))

    return {"now": now, "uuid": uuid}


def patch_ctx(state: ExecutionState, patch: dict[str, Any]) -> None:
    """Set dotted keys in ``ctx``; a non-empty patch bumps ``ctx_version`` (denied tokens
    are re-evaluated when it changes)."""
    for key, value in patch.items():
        set_path(state.ctx, key, value)
    if patch:
        state.ctx_version += 1


def record_failure(state: ExecutionState, step: str, step_run_id: str | None, *, handled: bool,
                   kind: str | None, message: str | None, final_step: bool = False) -> None:
    state.failures.append(Failure(step=step, step_run_id=step_run_id, handled=handled, kind=kind,
                                  message=message, final_step=final_step))


def add_token(state: ExecutionState, step_name: str, args: dict[str, Any], source: str | None,
              *, joined: bool = False, final: bool = False, join: dict[str, Any] | None = None) -> Token:
    state.token_counter += 1
    token = Token(id=f"tok:{state.token_counter}", step=step_name, args=args, source=source,
                  joined=joined, final=final, join=join)
    state.tokens.append(token)
    return token


def engine_error(kind: str, message: str) -> ErrorInfo:
    """A failure the engine itself found (a template, a loop, a policy): never retryable."""
    return ErrorInfo(kind=kind, message=message)


def error_outcome(kind: str, message: str) -> Outcome:
    """The outcome of a task that failed in the engine, before any tool ran."""
    return Outcome.failed(engine_error(kind, message), attempt=1, duration_ms=0)


#: the base of a step run's outcome when no task reported one (its pipeline ended before
#: any did): the JSON ``{"meta": {}}`` it was always made from, keys in that order
_NO_OUTCOME = Outcome.from_dict({"meta": {}})


def ended_outcome(last: Outcome | None, *, ok: bool, result: Any, error: ErrorInfo | None) -> Outcome:
    """The outcome a step run ends with when its pipeline ended: its last task's outcome
    (meta, tool helpers) with the pipeline's status, result and error."""
    return (last or _NO_OUTCOME).updated(status="ok" if ok else "error", result=result, error=error)


def _default(value: Any) -> Any:
    # A stored result picked whole from the template scope (a policy's context) is its ref;
    # a loop step's result with stored iterations, the result as it is.
    return value.as_value() if isinstance(value, HeldPart) else str(value)


# ``json.dumps(value, default=...)`` builds its encoder on every call: this one is built once.
_ENCODE = json.JSONEncoder(default=_default).encode


def short(value: Any, limit: int = 2048) -> Any:
    """Keep event payloads small: large values are summarized, not copied."""
    try:
        text = _ENCODE(value)
    except (TypeError, ValueError):
        text = str(value)
    if len(text) <= limit:
        return value
    return {"truncated": True, "bytes": len(text), "preview": text[:256]}


def short_outcome(outcome: dict[str, Any]) -> dict[str, Any]:
    """An outcome's JSON for an event payload: its result summarized."""
    summary = {k: v for k, v in outcome.items() if k != "result"}
    summary["result"] = short(outcome.get("result"))
    return summary


def plain(value: Any) -> Any:
    """JSON-plain copy for command payloads (activities receive JSON)."""
    return json.loads(_ENCODE(value))
