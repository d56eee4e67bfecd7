"""The activity boundary: one tool task invocation = one Temporal activity.

The activity renders what reads ``_attempt`` or ``keychain``, resolves the task's secrets
and reads its ResultRefs back, runs the tool, scrubs the outcome, stores a large result,
and evaluates the task policy on its own outcome: ``do: retry`` raises a retryable
``PolicyRetry`` with the rule's delay, after heartbeating every attempt's record (on the
fast path the workflow drives the attempts instead). It returns a
:class:`~noetl_temporal.engine.envelopes.TaskResult` as its JSON (``to_dict``, the object
recorded histories hold). Tool failures are outcomes; only ``PolicyRetry`` and
``NoetlInternalError`` (a bug, non-retryable) cross the boundary as errors.
See docs/semantics.md#retries-are-temporal-retries (the fast path's attempts:
docs/semantics.md#the-fast-path-speclocal; secrets: docs/keychain.md#how-it-works;
results: docs/tools.md#large-results-resultrefs; a lost attempt: docs/events.md).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from .. import keychain
from ..conversion.converter import has_claim_check, oversized
from ..engine.context import deep_merge, outcome_view
from ..engine.envelopes import Attempt, ErrorInfo, Outcome, TaskResult
from ..engine.idempotency import KEY_NAME, idempotency_key
from ..engine.invocation import READS_KEYCHAIN, render_attempt, uses_task_only
from ..engine.messages import RunTask
from ..engine.policy_evaluation import NextAttempt, evaluate_policy, next_attempt
from ..errors import TemplateError, ToolError
from ..store import large_results
from ..tool_kinds import CREDENTIAL_KINDS, READS_RESULT_REFS
from ..tools import ToolCall, task_renders
from ..tools.base import error_outcome, run_outcome
from .tracing import label_task_span
from .types import RUN_TASK_ACTIVITY, RUN_TASK_LOCAL_ACTIVITY

log = logging.getLogger(__name__)

__all__ = ["run_task", "run_task_local", "execute", "set_test_hook", "ACTIVITIES", "POLICY_RETRY", "INTERNAL_ERROR"]

POLICY_RETRY = "PolicyRetry"
INTERNAL_ERROR = "NoetlInternalError"


class _Heartbeats:
    """Heartbeat while the tool runs, so a cancel reaches it and a lost worker is noticed.

    A timer rather than a task: most tools finish before the first beat is due, and a
    timer costs the event loop less to start and cancel. Its callbacks run in the
    activity's context (``call_later`` copies it), which ``activity.heartbeat`` needs."""

    def __init__(self, history: list[dict[str, Any]]) -> None:
        timeout = activity.info().heartbeat_timeout
        self.every = max(0.5, min(timeout.total_seconds() / 3, 10.0)) if timeout else 10.0
        self.history = history
        self.loop = asyncio.get_running_loop()
        self.timer = self.loop.call_later(self.every, self._beat)

    def _beat(self) -> None:
        activity.heartbeat(self.history)
        self.timer = self.loop.call_later(self.every, self._beat)

    def stop(self) -> None:
        self.timer.cancel()


def _previous_attempts() -> list[dict[str, Any]]:
    """The records of this task's earlier attempts: the ones a policy retried (heartbeated
    with the retry), and one for each attempt that ended without a record (:func:`_lost`)."""
    info = activity.info()
    recorded: list[dict[str, Any]] = []
    if info.heartbeat_details and isinstance(info.heartbeat_details[0], list):
        recorded = list(info.heartbeat_details[0])
    return _with_lost(recorded, info.attempt)


#: why an attempt left no record: Temporal retried it after its worker stopped answering
LOST_KIND = "worker_lost"


def _with_lost(recorded: list[dict[str, Any]], attempt: int) -> list[dict[str, Any]]:
    """``recorded`` with a failed record for every earlier attempt missing from it.

    An attempt records itself when it ends (or, retried by a policy, in its heartbeat); one
    whose worker died (killed, its machine lost) or that Temporal timed out (heartbeat or
    start-to-close) left nothing, and Temporal started this one in its place. Without these
    records the event log would show one attempt where two ran."""
    numbers = {r.get("attempt") for r in recorded}
    lost = [_lost(n) for n in range(1, attempt) if n not in numbers]
    if not lost:
        return recorded
    return sorted([*recorded, *lost], key=lambda r: int(r.get("attempt") or 0))


def _lost(attempt: int) -> dict[str, Any]:
    error = ErrorInfo(kind=LOST_KIND, retryable=True,
                      message=f"attempt {attempt} ended without a result: its worker was lost, or Temporal "
                              "timed it out (heartbeat or start-to-close timeout); Temporal ran the task again",
                      fix="see the worker's log for why it stopped; a task that outlives its timeout needs a "
                          "larger spec.timeout")
    return Attempt(attempt=attempt, status="error", error=error, action="retry").to_dict()


#: the scrubber of a task that reads no secret (immutable: one for all)
# perf: a scrubber per task that reads no secret — benchmark: probes.activity_cpu
_NO_SECRETS = keychain.Scrubber()

#: tool kinds that read ResultRefs themselves (the activity leaves them unresolved)
_READS_REFS = READS_RESULT_REFS
#: tool kinds whose process writes a result over the inline cap to the store itself (its
#: outcome's result is then the ResultRef; ``python``: docs/tools.md, "Results stream")
_STORES_ITS_RESULT = frozenset({"python"})


# perf: three walks of the usual task's configuration (one instead) — benchmark: probes.activity_cpu
def _plain(value: Any) -> bool:
    """Nothing in ``value``, at any depth, that preparing a configuration acts on: no
    template (what reads ``_attempt`` or ``keychain`` is one) and no mapping shaped like a
    ResultRef. One walk instead of the three the steps make to find out; a superset of
    what each looks for, so a False only means they take their usual course."""
    if isinstance(value, str):
        return "{{" not in value and "{%" not in value
    if isinstance(value, Mapping):
        return value.get("kind") != large_results.REF_KIND and all(_plain(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    return True


async def _prepare(cmd: RunTask, call: ToolCall) -> tuple[dict[str, Any], keychain.Scrubber]:
    """``_attempt`` and secrets rendered in, ResultRefs read back: the configuration the tool gets."""
    large_results.check_result_spec(cmd.result_spec)
    knobs = cmd.spec.get(cmd.kind)
    if isinstance(knobs, dict):  # `spec.<kind>:` defaults from executor/step/loop/task layers
        cmd = dataclasses.replace(cmd, config=deep_merge(knobs, cmd.config))
    if cmd.kind not in CREDENTIAL_KINDS and _plain(cmd.config):  # the usual task: as it is
        return dict(cmd.config), _NO_SECRETS
    # The engine left templates reading `_attempt` (or `_idempotency_key`) unrendered: this
    # attempt's number (Temporal's, so infrastructure retries count) is known only here.
    context = dict(cmd.secret_context, _attempt=call.attempt, **{KEY_NAME: call.idempotency_key})
    try:
        rendered = render_attempt(cmd.config, context, call.attempt)
    except TemplateError as exc:
        raise ToolError(str(exc), kind="template", retryable=False) from None
    if rendered is not cmd.config:  # (usually nothing reads `_attempt`: no copy)
        cmd = dataclasses.replace(cmd, config=rendered)
    if keychain.needs_keychain(cmd.kind, cmd.config):  # providers may block: off the event loop
        prepared = await asyncio.to_thread(
            keychain.prepare, cmd.kind, cmd.config, secret_context=context,
            declarations=cmd.keychain, leave=uses_task_only)
        call.keychain = prepared.entries
        call.secrets = prepared.scrubber.secrets
        config, scrubber = prepared.config, prepared.scrubber
    else:
        config, scrubber = dict(cmd.config), _NO_SECRETS
    # Templates using a task-only filter (`urlize`...) render here only on small inputs, else in
    # a child under rlimits: one C call of such a filter can hold the GIL for minutes
    # (docs/durability.md, "Task-side renders").
    # A render error is scrubbed by the caller (call.secrets holds the entries' values).
    scope = dict(context, keychain=call.keychain) if call.keychain else context
    config, rendered_by_child = await task_renders.render_in_child(config, uses_task_only, scope,
                                                                   f"{cmd.step}.tool.{cmd.task}")
    secret = [value for text, value in rendered_by_child if READS_KEYCHAIN(text)]
    if secret:   # what a keychain template rendered is a secret too
        scrubber = keychain.Scrubber([*scrubber.secrets, *keychain.secret_values({}, secret)])
        call.secrets = scrubber.secrets
    if cmd.kind not in _READS_REFS:
        config = await large_results.resolve_refs(config)
    return config, scrubber


def _located(outcome: Outcome, cmd: RunTask) -> Outcome:
    """A configuration error names its task the way the engine's template errors do
    (``<step>.tool.<task>: ...``), so ``run`` turns it into the playbook's file:line:col."""
    error = outcome.error
    if error is not None and error.kind == "config":
        where = f"{cmd.step}.tool.{cmd.task}"
        if not error.message.startswith(where):
            return dataclasses.replace(outcome, error=dataclasses.replace(error, message=f"{where}: {error.message}"))
    return outcome


def _scrubbed(outcome: Outcome, scrub: keychain.Scrubber) -> Outcome:
    """The outcome with the task's secrets replaced by ``***`` in every value it holds."""
    if not scrub:
        return outcome
    error = outcome.error
    if error is not None:
        error = dataclasses.replace(error, kind=scrub(error.kind), message=scrub(error.message),
                                    code=scrub(error.code), fix=scrub(error.fix), details=scrub(error.details),
                                    extra=scrub(error.extra))
    return dataclasses.replace(outcome, result=scrub(outcome.result), error=error, meta=scrub(outcome.meta),
                               result_ref=scrub(outcome.result_ref), extra=scrub(outcome.extra))


async def execute(cmd: RunTask, call: ToolCall) -> Outcome:
    """Prepare, run the tool, scrub secrets, store a large result: the outcome to return."""
    return (await _execute(cmd, call))[0]


#: ``noetl-temporal test --temporal`` only: answers a task's attempt in place of its tool
#: (None: the tool runs). Set by the test session in its own process, for its own worker;
#: never set on a real worker (docs/testing-playbooks.md, "The Temporal mode").
TestHook = Callable[[RunTask, int], Awaitable[Outcome | None]]
_test_hook: TestHook | None = None


def set_test_hook(hook: TestHook | None) -> None:
    global _test_hook
    _test_hook = hook


async def _execute(cmd: RunTask, call: ToolCall) -> tuple[Outcome, Any]:
    """The outcome to return, and the result as the tool gave it (before it was stored)."""
    if _test_hook is not None:
        mocked = await _test_hook(cmd, call.attempt)
        if mocked is not None:
            return mocked, mocked.result
    started = time.time()
    try:
        config, scrubber = await _prepare(cmd, call)
    except ToolError as err:
        failed = _scrubbed(error_outcome(err, call, started=started), keychain.Scrubber(call.secrets))
        return failed, failed.result
    outcome = _located(_scrubbed(await run_outcome(cmd.kind, config, call), scrubber), cmd)
    if outcome.result_ref is None and large_results.is_ref(outcome.result) and cmd.kind in _STORES_ITS_RESULT:
        by_tool = outcome.updated(result_ref=outcome.result)  # stored by the tool itself: `result.stored`
        return by_tool, by_tool.result  # (stored only when nothing reads its values: needs_value)
    if large_results.surely_inline(outcome.result, cmd.result_spec):
        return outcome, outcome.result  # the usual small result: no thread, no store
    try:
        # The store reads and extends the envelope's JSON (``result_ref`` after the rest).
        stored = await asyncio.to_thread(large_results.externalize, outcome.to_dict(), cmd.result_spec,
                                         execution_id=cmd.execution_id, task_run_id=cmd.task_run_id,
                                         attempt=call.attempt)
        return Outcome.from_dict(stored), outcome.result
    except ToolError as err:
        failed = _scrubbed(error_outcome(err, call, started=started), scrubber)
    except OSError as err:  # a full disk, an unreachable store: another attempt may do better
        failed = _scrubbed(error_outcome(
            ToolError(f"cannot store the task result: {err}", kind="result_store", retryable=True),
            call, started=started), scrubber)
    return failed, failed.result


@activity.defn(name=RUN_TASK_ACTIVITY)
async def run_task(cmd: RunTask) -> dict[str, Any]:
    """One task invocation; returns its :class:`TaskResult` as JSON."""
    return (await _run_task(cmd, None)).to_dict()


@activity.defn(name=RUN_TASK_LOCAL_ACTIVITY)
async def run_task_local(cmd: RunTask, local: dict[str, Any]) -> dict[str, Any]:
    """The fast path's activity (run as a local activity by the workflow)."""
    return (await _run_task(cmd, local)).to_dict()


async def _run_task(cmd: RunTask, local: dict[str, Any] | None) -> TaskResult:
    info = activity.info()
    label_task_span(cmd.execution_id, cmd.step, cmd.task, cmd.kind)
    # A local activity (the fast path) cannot heartbeat: the workflow carries its policy
    # attempts instead (``local``: the attempt number and the earlier records).
    attempt, history = _local_attempt(info, local) if info.is_local else (info.attempt, _previous_attempts())
    started = datetime.now(UTC)
    clock = time.monotonic()
    call = ToolCall(execution_id=cmd.execution_id, step=cmd.step, task=cmd.task, attempt=attempt,
                    timeout=cmd.timeout, task_run_id=cmd.task_run_id, result_spec=cmd.result_spec,
                    store_result=not cmd.rules,  # a policy's guards read the result's value
                    idempotency_key=idempotency_key(cmd.execution_id, cmd.task_run_id, cmd.secret_context),
                    heartbeat=None if info.is_local else lambda *d: activity.heartbeat(history, *d))
    beats = None if info.is_local else _Heartbeats(history)
    try:
        returned, whole = await _execute(cmd, call)
        outcome = await _fitting_history(returned, cmd, call)
        written = outcome.meta.get("attempt")
        if written != attempt or type(written) is not int:  # (tools write it: usually no copy)
            outcome = outcome.updated(meta={**outcome.meta, "attempt": attempt})
        # Without rules the decision reads only the status: no guard context to build.
        context = _policy_context(cmd, _judged(cmd, outcome, returned, whole), attempt) if cmd.rules else {}
        decision = evaluate_policy(cmd.rules, outcome.status, context, cmd.on_unmatched)
    except Exception as exc:  # a bug on our side: never retried, always reported with its type
        # No exception chaining: Temporal would record the cause's text, which may quote a secret.
        message = keychain.Scrubber(call.secrets).text(f"internal error running task '{cmd.task}' of step '{cmd.step}': "
                                f"{type(exc).__name__}: {exc}")
        log.error("%s", message)
        raise ApplicationError(message, type=INTERNAL_ERROR, non_retryable=True) from None
    finally:
        if beats is not None:
            beats.stop()
    record = Attempt(attempt=attempt, status=outcome.status, started_at=started.isoformat().replace("+00:00", "Z"),
                     duration_ms=int((time.monotonic() - clock) * 1000), error=outcome.error,
                     action=decision.action, rule_index=decision.rule_index)
    following = _operator_policy(info, next_attempt(cmd.rules, decision, attempt, outcome.error), attempt)
    if following.retry:
        delay = following.delay
        history.append(dataclasses.replace(record, next_delay_s=delay).to_dict())   # heartbeat JSON
        if not info.is_local:
            activity.heartbeat(history)
        raise ApplicationError(
            f"policy retry {attempt}/{following.allowed} of task '{cmd.task}': "
            f"{(outcome.error.message if outcome.error is not None else None) or outcome.status}",
            history, type=POLICY_RETRY,
            # a test run's clock (docs/testing-playbooks.md): the backoff is recorded, not waited
            next_retry_delay=timedelta(seconds=delay if _test_hook is None else 0.001),
            # an expected retry, not a worker problem: no stack trace in the worker log
            category=ApplicationErrorCategory.BENIGN)
    attempts = (*(Attempt.from_dict(earlier) for earlier in history), record)
    return TaskResult(outcome=outcome, attempts=attempts, rule_index=decision.rule_index,
                      action=decision.action, exhausted=following.exhausted)


#: the retry policy backoff coefficient that marks an operator's policy (``step_retries.OPERATOR_BACKOFF``)
_OPERATOR_BACKOFF = 1.0


def _operator_policy(info: activity.Info, following: NextAttempt, attempt: int) -> NextAttempt:
    """The task policy's retry, or, where an operator changed the policy of this running
    task (``noetl-temporal set-retry``: Temporal's retry policy with backoff coefficient 1),
    the operator's attempts (``maximum_attempts``) and delay (``initial_interval``).
    Only a retry the task policy asked for (or ran out of) is changed: the policy still
    decides which outcomes are retried."""
    policy = info.retry_policy
    if (info.is_local or policy is None or policy.backoff_coefficient != _OPERATOR_BACKOFF
            or not (following.retry or following.exhausted)):
        return following
    allowed = policy.maximum_attempts or following.allowed
    if attempt < allowed:
        return NextAttempt(retry=True, delay=policy.initial_interval.total_seconds(), allowed=allowed)
    return NextAttempt(allowed=allowed, exhausted=True)


def _judged(cmd: RunTask, outcome: Outcome, returned: Outcome, whole: Any) -> Outcome:
    """The outcome the task's policy reads: with the result the tool gave when it was stored
    by reference, so ``{{ output.data.count }}`` reads the same at any size. Only where the
    engine asked for kept fields (``keep``: behaviours.STORED_RESULT_FIELDS); before, a policy
    read the reference."""
    if "keep" not in cmd.result_spec or returned.result_ref is None or outcome.result is not returned.result:
        return outcome
    return outcome.updated(result=whole)


def _policy_context(cmd: RunTask, outcome: Outcome, attempt: int) -> dict[str, Any]:
    """What the task's policy guards read: the engine's names, and this attempt's outcome."""
    context = dict(cmd.policy_context)
    view = outcome_view(outcome)
    context.update({"output": view, "outcome": view, "_attempt": attempt, "_task": cmd.task})
    return context


async def _fitting_history(outcome: Outcome, cmd: RunTask, call: ToolCall) -> Outcome:
    """The outcome, or a located error outcome when it is too large to enter history.

    Only a worker whose converter lacks the claim check can meet this (an embedding that
    connected with its own converter): Temporal would refuse the result (TMPRL1103) and the
    task would be retried until its attempts run out. It is the playbook's error instead,
    not retried, which the task's policy can route on."""
    try:
        converter = activity.client().data_converter
    except RuntimeError:  # no client (an activity run outside a worker, in a test)
        return outcome
    if has_claim_check(converter):  # the usual worker: nothing to measure
        return outcome
    size = await oversized(converter, outcome.to_dict())
    if size is None:
        return outcome
    err = ToolError(f"the result of task '{cmd.task}' of step '{cmd.step}' is {size} bytes encoded, over "
                    "Temporal's 2 MB payload limit, and this worker's data converter has no claim check",
                    kind="result_too_large", retryable=False,
                    fix="connect the worker's client with data_converter=noetl_temporal.data_converter(your "
                        "converter or codec), or keep the result out of history with "
                        "spec.result.inline_max_bytes (docs/tools.md)")
    return error_outcome(err, call)


def _local_attempt(info: activity.Info, local: dict[str, Any] | None) -> tuple[int, list[dict[str, Any]]]:
    """A fast-path attempt's number and the records before it. Temporal's own retries of
    a local activity (a timeout, a lost worker) repeat the same policy attempt."""
    local = local or {}
    return int(local.get("attempt") or 1), list(local.get("history") or [])


# Typed: mypy would join the two signatures to `function`, which a Worker does not accept.
ACTIVITIES: list[Callable[..., Any]] = [run_task, run_task_local]
