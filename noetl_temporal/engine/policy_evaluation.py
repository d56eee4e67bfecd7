"""Task policy evaluation and retry arithmetic: pure, shared by engine and activities.

The activity evaluates the policy on its own outcome (the NoETL data plane does this)
so that ``do: retry`` can become a Temporal activity retry; the engine applies the
decision the activity reports. :func:`decide` is that decision, built here once: for the
task activity, ``noetl-temporal test``'s driver and the engine tests' harness through
:func:`decide_attempt` (a ``RunTask``), and for the engine's own tasks (inline ``noop``,
a template error, a task no activity decided for) from a :class:`PolicyInput` the pipeline
gives (docs/layout.md, "One python task, step by step"; docs/semantics.md, "Task policies").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..dsl.policy_rules import DEFAULT_RETRY_ATTEMPTS
from ..errors import ResultFieldUnavailable
from ..templates import evaluate_condition
from .context import Scope, outcome_view
from .envelopes import ErrorInfo, Outcome

if TYPE_CHECKING:
    from .messages import RunTask

__all__ = ["Decision", "NextAttempt", "PolicyInput", "decide", "decide_attempt", "evaluate_policy", "next_attempt", "attempt_delay",
           "retry_delay", "max_policy_attempts"]


@dataclass(frozen=True)
class NextAttempt:
    """What follows an attempt the policy decided on: another attempt after ``delay``
    seconds (``retry``), or none; ``exhausted`` when a retry rule matched with no attempts
    left. ``allowed``: the matching retry rule's ``attempts`` (0 when no retry rule matched)."""

    retry: bool = False
    delay: float = 0.0
    allowed: int = 0
    exhausted: bool = False


_NO_RETRY = NextAttempt()


@dataclass(frozen=True)
class Decision:
    """Which rule matched (None = no rule) and what it says to do; from
    :func:`decide_attempt`, also whether another attempt follows (``following``)."""

    rule_index: int | None
    action: str                   # continue | retry | jump | break | fail
    matched_else: bool = False
    guard_errors: tuple[str, ...] = ()
    following: NextAttempt = _NO_RETRY

    def to_dict(self) -> dict[str, Any]:
        return {"rule_index": self.rule_index, "action": self.action, "matched_else": self.matched_else,
                "guard_errors": list(self.guard_errors)}


#: the decisions without a rule (frozen, so shared): every task without a policy gets one
_NO_RULE = {action: Decision(None, action) for action in ("continue", "fail", "retry", "jump", "break")}


@dataclass(frozen=True)
class PolicyInput:
    """What a task policy's decision needs besides the outcome: given by a ``RunTask``
    (:meth:`of`) or by the engine's pipeline for the tasks it decides on itself."""

    task: str
    rules: list[dict[str, Any]]
    #: the engine's names the guards read (``output``/``outcome``/``_attempt``/``_task`` are
    #: the decision's own): a ``RunTask``'s ``policy_context`` (those the guards name, as plain
    #: values, taken when the task was scheduled), or the engine's whole template scope now
    names: Mapping[str, Any]
    on_unmatched: str | None = None
    #: False for a task the engine ran itself (``noop``): its next attempt would give the
    #: same outcome, so a matching ``retry`` is a ``fail`` (docs/semantics.md, "Task policies")
    can_retry: bool = True

    @classmethod
    def of(cls, cmd: RunTask) -> PolicyInput:
        return cls(cmd.task, cmd.rules, cmd.policy_context, cmd.on_unmatched)


def decide_attempt(cmd: RunTask, outcome: Outcome, attempt: int) -> Decision:
    """The task policy's decision on attempt ``attempt`` (1-based) of ``cmd``: the task
    activity, ``noetl-temporal test``'s driver and the engine tests all call it, so a test
    sees the decisions a worker makes."""
    return decide(PolicyInput.of(cmd), outcome, attempt)


def decide(policy: PolicyInput, outcome: Outcome, attempt: int) -> Decision:
    """The task policy's decision on attempt ``attempt`` (1-based): the matching rule, its
    action, and whether another attempt follows after which backoff. The one place the
    decision and its guard context are built (``tests/test_architecture.py`` keeps it so)."""
    # Without rules the decision reads only the status: no guard context to build.
    context = _guard_context(policy, outcome, attempt) if policy.rules else {}
    decision = evaluate_policy(policy.rules, outcome.status, context, policy.on_unmatched)
    if not policy.can_retry:
        return _retry_fails(decision)
    following = next_attempt(policy.rules, decision, attempt, outcome.error)
    if following is _NO_RETRY:  # the usual end: the shared decision as it is, no copy
        return decision
    return dataclasses.replace(decision, following=following)


def _guard_context(policy: PolicyInput, outcome: Outcome, attempt: int) -> Scope:
    """What the task's policy guards read: this attempt's outcome over the engine's names
    (a view: the engine's whole scope is not copied)."""
    view = outcome_view(outcome)
    return Scope({"output": view, "outcome": view, "_attempt": attempt, "_task": policy.task},
                 (policy.names,))


def _retry_fails(decision: Decision) -> Decision:
    """A task that cannot run again: its matching ``retry`` rule fails it (the rule still
    matched: its index, and its ``then``'s patches, stay)."""
    if decision.action != "retry":
        return decision
    return dataclasses.replace(decision, action="fail")


def evaluate_policy(rules: list[dict[str, Any]], outcome_status: str, context: Mapping[str, Any],
                    on_unmatched: str | None = None) -> Decision:
    """First matching rule wins; ``when: None`` is the ``else`` fallback.

    No rule matched (or there are none): the policy's ``on_unmatched`` (NoETL 5.x) when it
    says, else, without rules, ok -> continue and error -> fail, and with rules but no match
    and no ``else``, continue (the seed's rule).
    """
    if not rules:
        action = on_unmatched or ("continue" if outcome_status == "ok" else "fail")
        return _NO_RULE.get(action) or Decision(None, action)
    errors: list[str] = []
    for index, rule in enumerate(rules):
        when = rule.get("when")
        try:
            matched, error = evaluate_condition(when, context, where=f"rules[{index}].when")
        except ResultFieldUnavailable as exc:  # a stored result's part the engine does not hold
            return Decision(None, "fail", guard_errors=(*errors, str(exc)))
        if error:
            errors.append(error)
        if matched:
            then = rule.get("then") or {}
            return Decision(index, then.get("do", "continue"), matched_else=when is None,
                            guard_errors=tuple(errors))
    return Decision(None, on_unmatched or "continue", guard_errors=tuple(errors))


def retry_delay(then: dict[str, Any], attempt: int) -> float:
    """Seconds to wait before the run after ``attempt`` (1-based, the run that just ended).

    ``none`` waits a constant ``delay``; ``linear`` ``delay * n``; ``exponential``
    ``delay * 2**(n-1)``; ``max_delay`` caps one wait.
    """
    delay = float(then.get("delay") or 0.0)
    backoff = then.get("backoff") or "none"
    if backoff == "linear":
        delay *= attempt
    elif backoff == "exponential":
        delay *= 2 ** (attempt - 1)
    cap = then.get("max_delay")
    if cap is not None:
        delay = min(delay, float(cap))
    return delay


def max_policy_attempts(rules: list[dict[str, Any]]) -> int:
    """The largest ``attempts`` of any retry rule (1 when the task never retries)."""
    best = 1
    for rule in rules:
        then = rule.get("then") or {}
        if then.get("do") == "retry":
            best = max(best, int(then.get("attempts") or DEFAULT_RETRY_ATTEMPTS))
    return best


def next_attempt(rules: list[dict[str, Any]], decision: Decision, attempt: int,
                 error: ErrorInfo | None) -> NextAttempt:
    """Whether attempt ``attempt`` (1-based) of a task is followed by another, and after how
    long: the one rule the task activity and ``noetl-temporal test``'s driver both apply
    (docs/testing-playbooks.md), so a test sees the retries a worker makes."""
    if decision.action != "retry" or decision.rule_index is None:
        return _NO_RETRY
    then = rules[decision.rule_index].get("then") or {}
    allowed = int(then.get("attempts") or DEFAULT_RETRY_ATTEMPTS)
    if attempt < allowed:
        return NextAttempt(retry=True, delay=attempt_delay(then, attempt, error), allowed=allowed)
    return NextAttempt(allowed=allowed, exhausted=True)


def attempt_delay(then: dict[str, Any], attempt: int, error: ErrorInfo | None) -> float:
    """The rule's backoff, but never shorter than a server's ``Retry-After``."""
    delay = retry_delay(then, attempt)
    retry_after = error.retry_after if error is not None else None
    if isinstance(retry_after, int | float) and retry_after > delay:
        cap = then.get("max_delay")
        delay = float(retry_after) if cap is None else min(float(retry_after), float(cap))
    return delay
