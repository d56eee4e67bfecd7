"""The test clock of ``noetl-temporal test --temporal`` (docs/testing-playbooks.md, "Time"):
an execution started with ``RunInput.test_clock`` waits 1/``SCALE`` of each workflow timer's
time (a step's ``spec.timeout``, a fast-path retry's backoff), and the times it reports (the
engine's ``now``: event timestamps) read virtual time, the real time plus what the timers
skipped. Never set outside test runs: a normal execution's timers and times are untouched.
A task the workflow runs itself (``kind: playbook``, ``activity``, ``workflow``) first asks the
test session's worker for its mock (:func:`mocked`).

Workflow code: it waits only through ``temporalio.workflow``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ..engine.envelopes import Outcome
    from ..engine.messages import RunTask

__all__ = ["SCALE", "TEST_MOCK_ACTIVITY", "mocked", "scaled", "set_skew", "skew", "sleep"]

#: registered by ``noetl-temporal test --temporal`` on its own worker only
TEST_MOCK_ACTIVITY = "noetl.test_mock"

#: a virtual hour takes a tenth of a real second: timers keep their order (a 1 h step timeout
#: fires before a 2 h task), and a case with hours of waiting runs in about a second
SCALE = 36_000.0
#: the shortest timer asked for (Temporal takes a zero duration as "no timer")
_MIN_S = 0.001
#: where a test-clock execution keeps how far its virtual time is ahead of the real one
_ATTR = "_test_clock_skew"


def scaled(seconds: float) -> float:
    """The real seconds a virtual wait of ``seconds`` takes under the test clock."""
    return max(seconds / SCALE, _MIN_S)


def skew() -> float:
    """Seconds the running workflow's virtual time is ahead of its real time (0: no test clock)."""
    value = getattr(workflow.instance(), _ATTR, 0.0)
    return value if isinstance(value, float) else 0.0


def set_skew(seconds: float) -> None:
    """Set the running workflow's virtual lead (a test run continued as new keeps its clock)."""
    if seconds:
        setattr(workflow.instance(), _ATTR, seconds)


async def sleep(seconds: float, *, test_clock: bool, summary: str) -> None:
    """``workflow.sleep``; under the test clock a scaled wait that moves virtual time on by
    ``seconds`` (never back: a shorter timer ending after a longer one changes nothing)."""
    if not test_clock:
        await workflow.sleep(timedelta(seconds=seconds), summary=summary)
        return
    due = workflow.now().timestamp() + skew() + seconds
    await workflow.sleep(timedelta(seconds=scaled(seconds)), summary=f"{summary} (test clock: {seconds:g} s)")
    set_skew(max(skew(), due - workflow.now().timestamp()))


async def mocked(cmd: RunTask) -> Outcome | None:
    """The case's answer for a task the workflow runs itself (None: no mock, it runs for
    real), from the test session's activity; its ``delay`` is waited there, on this clock."""
    raw: dict[str, Any] | None = await workflow.execute_activity(
        TEST_MOCK_ACTIVITY, cmd, start_to_close_timeout=timedelta(seconds=300),
        summary=f"{cmd.step} / {cmd.task} ({cmd.kind}, test mock)")
    return Outcome.from_dict(raw) if raw is not None else None
