"""One attempt of a tool task, without Temporal: prepare -> run -> scrub -> store -> decide.

The task activity (``workflow/activities.py``) is a thin Temporal adapter over
:func:`run_attempt`: it adds heartbeats, Temporal's attempt number, the records of earlier
attempts, and turns the decision into a retry or a result. ``noetl-temporal test``'s
driver runs a ``real:`` tool through the same function, so both make the same attempt
(docs/layout.md, "One python task, step by step").

* prepare: ``spec.<kind>`` defaults merged in, templates reading ``_attempt`` rendered
  with this attempt's number (the engine leaves them unrendered), the keychain entries the
  task reads resolved (``noetl_temporal.keychain``) and ResultRefs in the configuration read
  back into their bodies;
* run: the tool (``tools.base.run_outcome``);
* scrub: the task's secrets replaced by ``***`` in everything the outcome holds, before
  anything is returned, heartbeated or logged;
* store: a result larger than ``inline_max_bytes`` leaves as a ResultRef
  (``noetl_temporal.store.large_results``), with ``outcome["result_ref"]`` set for ``result.stored``;
* decide: the task policy on the outcome (``engine.policy_evaluation.decide_attempt``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .. import keychain
from ..engine.context import deep_merge
from ..engine.envelopes import Outcome
from ..engine.idempotency import KEY_NAME
from ..engine.invocation import READS_KEYCHAIN, render_attempt, uses_task_only
from ..engine.messages import RunTask
from ..engine.policy_evaluation import Decision, decide_attempt
from ..errors import TemplateError, ToolError
from ..store import large_results
from ..tool_kinds import CREDENTIAL_KINDS, READS_RESULT_REFS
from ..tools import ToolCall, task_renders
from ..tools.base import error_outcome, run_outcome

__all__ = ["run_attempt", "execute", "set_test_hook", "under_test", "Fit"]

#: what the shell checks on an outcome before it is decided on (the activity: that it fits
#: in Temporal's history); returns the outcome, or the error outcome to report instead
Fit = Callable[[Outcome], Awaitable[Outcome]]


async def run_attempt(cmd: RunTask, call: ToolCall, fit: Fit | None = None) -> tuple[Outcome, Decision]:
    """Attempt ``call.attempt`` of ``cmd``: the outcome to report and the policy's decision on it."""
    returned, whole = await _execute(cmd, call)
    outcome = await fit(returned) if fit is not None else returned
    attempt = call.attempt
    written = outcome.meta.get("attempt")
    if written != attempt or type(written) is not int:  # (tools write it: usually no copy)
        outcome = outcome.updated(meta={**outcome.meta, "attempt": attempt})
    return outcome, decide_attempt(cmd, _judged(cmd, outcome, returned, whole), attempt)


#: the scrubber of a task that reads no secret (immutable: one for all)
# perf: a scrubber per task that reads no secret — benchmark: probes.activity_cpu
_NO_SECRETS = keychain.Scrubber()

#: tool kinds that read ResultRefs themselves (the attempt leaves them unresolved)
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


def under_test() -> bool:
    """A test session answers the attempts (its clock records a backoff, does not wait it)."""
    return _test_hook is not None


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


def _judged(cmd: RunTask, outcome: Outcome, returned: Outcome, whole: Any) -> Outcome:
    """The outcome the task's policy reads: with the result the tool gave when it was stored
    by reference, so ``{{ output.data.count }}`` reads the same at any size. Only where the
    engine asked for kept fields (``keep``: behaviours.STORED_RESULT_FIELDS); before, a policy
    read the reference."""
    if "keep" not in cmd.result_spec or returned.result_ref is None or outcome.result is not returned.result:
        return outcome
    return outcome.updated(result=whole)
