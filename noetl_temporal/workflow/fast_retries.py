"""An operator's retry controls on the fast path (docs/approvals.md, "Retrying a step now").

A fast-path task (``spec.local: true``) runs as local activities, one per policy attempt,
and its retries are the workflow's own loop (``task_runs._run_local``): Temporal's activity
operations (pause, unpause, update options) do not reach it. So the ``retry_step`` update
steers that loop here instead: :class:`FastRetry` is one task run's loop as an operator sees
it (its attempt, whether it waits out a backoff) and what the operator asked (retry now, at
most so many attempts, so many seconds apart). The update changes it in the workflow, so it
is in history and replays: a worker restart rebuilds it, a wait cut short included.

Only for executions listing the behaviour ``fast-retry-controls`` (``engine/behaviours.py``):
the wait here is a condition with a timeout, whose timer an accepted control cancels, and a
worker that predates it would not replay that.

Workflow code: it takes time and waits only through ``temporalio.workflow``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ..engine.envelopes import TaskResult
    from ..engine.messages import RunTask
    from ..engine.policy_evaluation import attempt_delay

__all__ = ["FastRetry", "MAX_ERROR"]

#: characters of the last error a waiting task shows (``status``, the page)
MAX_ERROR = 500


@dataclass
class FastRetry:
    """One fast-path task run's retry loop: where it is, and the operator's policy for it.
    ``attempts``/``delay``: set by ``set-retry`` (None: the task policy's rule decides)."""

    step: str = ""
    iteration: int | None = None
    attempt: int = 1
    waiting: bool = False
    last_error: str | None = None   # the failed attempt's error message, while it waits
    # called when a wait begins or ends: the workflow refreshes the Temporal UI's current details
    changed: Callable[[], None] | None = field(default=None, repr=False, compare=False)
    attempts: int | None = None
    delay: float | None = None
    _wait_from: float = 0.0     # workflow time (s) the wait under way began
    _wait_began: datetime | None = None   # the same, as a time (what status shows is counted from it)
    _wait_for: float = 0.0      # its length (s): the rule's, or the operator's
    _now: bool = False          # retry-now asked during the wait under way
    _changed: bool = False      # the policy changed during it: measure it again

    def seen(self) -> dict[str, Any]:
        """What the ``retry_step`` validator is shown, as the client shows it for an activity."""
        return {"retrying": self.waiting, "attempt": self.attempt,
                "state": "waiting to retry" if self.waiting else "running", "fast_path": True}

    def failed(self, record: dict[str, Any]) -> None:
        """The attempt ``record`` (an ``Attempt``'s JSON) failed: its error is what status shows."""
        error = record.get("error")
        if isinstance(error, dict):
            text = str(error.get("message") or error.get("kind") or "")
            # a query's answer, bounded: the whole message is in the events once the task ends
            self.last_error = (text[:MAX_ERROR] + "…" if len(text) > MAX_ERROR else text) or None

    def shown(self, task_run_id: str) -> dict[str, Any] | None:
        """While it waits to retry: ``{step, iteration, task_run_id, attempt, until, last_error}``
        (``until``: when the next attempt starts, workflow time), for the ``status`` and
        ``step_controls`` queries (docs/approvals.md): a query records nothing."""
        if not self.waiting or self._wait_began is None:
            return None
        until = self._wait_began + timedelta(seconds=self._wait_for)
        return {"step": self.step, "iteration": self.iteration, "task_run_id": task_run_id, "attempt": self.attempt,
                "until": until.isoformat().replace("+00:00", "Z"), "last_error": self.last_error, "fast_path": True}

    def retry_now(self) -> None:
        self._now = True

    def set_policy(self, attempts: int | None, delay: float | None) -> None:
        """From the next decision on: the wait under way is measured again with ``delay``
        (from when it began), the attempt running ends under ``attempts``."""
        if attempts is not None:
            self.attempts = attempts
        if delay is not None:   # (attempts alone leave the wait's timer as it is)
            self.delay = float(delay)
            self._wait_for = self.delay
            self._changed = True

    def stops_before(self, attempt: int) -> bool:
        """The operator's attempts end the retries before ``attempt``."""
        return self.attempts is not None and attempt > self.attempts

    def wait_length(self, rule_delay: float) -> float:
        return self.delay if self.delay is not None else rule_delay

    def goes_on(self, cmd: RunTask, result: TaskResult) -> float | None:
        """The delay of one more attempt where the task policy ran out of attempts but the
        operator's allow more (None: the result stands)."""
        if not result.exhausted or self.attempts is None or self.attempt >= self.attempts or not result.attempts \
                or result.rule_index is None or result.rule_index >= len(cmd.rules):
            return None
        then = cmd.rules[result.rule_index].get("then") or {}
        rule = attempt_delay(then, self.attempt, result.outcome.error)
        return self.wait_length(rule)

    async def wait(self, seconds: float, *, summary: str) -> None:
        """The backoff before the next attempt: ``seconds``, or less when an operator asks
        for the attempt now or shortens the delay meanwhile."""
        self.waiting, self._now, self._changed = True, False, False
        self._wait_began = workflow.now()
        self._wait_from, self._wait_for = self._wait_began.timestamp(), seconds
        self._announce()
        try:
            await self._wait_out(summary)
        finally:
            self.waiting = False
        self._announce()   # (not when cancelled or the run is evicted: nothing is left to show then)

    async def _wait_out(self, summary: str) -> None:
        while not self._now:
            remaining = self._wait_from + self._wait_for - workflow.now().timestamp()
            if remaining <= 0:
                return
            self._changed = False
            try:
                await workflow.wait_condition(lambda: self._now or self._changed, timeout=remaining,
                                              timeout_summary=summary)
            except TimeoutError:
                return

    def _announce(self) -> None:
        if self.changed is not None:
            self.changed()
