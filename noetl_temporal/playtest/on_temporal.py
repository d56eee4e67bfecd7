"""``noetl-temporal test --temporal``: the same cases through the real workflow and task
activity, on the embedded Temporal dev server (docs/testing-playbooks.md, "The Temporal mode").

The session starts the dev server as ``noetl-temporal run`` does and hosts one worker in
this process; the mocks reach the tools through the task activity's test hook
(``attempt.set_test_hook``), which this session alone sets, for its own worker.
The hook answers each attempt from the case's mocks, so the activity still evaluates the
policy, records the attempts and raises its ``PolicyRetry``; with the hook set the retry's
backoff is recorded (``next_delay_s``, the events) but not waited for. There is no offline
time-skipping server (the SDK's downloads one), so the executions run on the test clock
(``workflow/test_clock.py``): workflow timers (a step's ``spec.timeout``, a fast-path retry's
wait) and a mock's ``delay`` take 1/``SCALE`` of their time, so they still end in the order
their virtual times give.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from temporalio import activity

from ..engine.envelopes import ErrorInfo, Outcome
from ..engine.messages import RunTask
from ..tool_kinds import WORKFLOW_KINDS
from ..workflow.test_clock import TEST_MOCK_ACTIVITY
from .driver import Actual, attempts_in, load
from .spec import Case, Mock

__all__ = ["TemporalRunner"]

#: a case's execution may run this long before it counts as stuck
EXECUTION_TIMEOUT_S = 300.0
#: the task activity heartbeats every third of this (workflow/activities.py, ``_Heartbeats``):
#: a cancel (a step's timeout cutting a mocked ``delay`` short) reaches a waiting mock within
#: about a second, not the ten seconds of the default 30 s
HEARTBEAT_TIMEOUT_S = 3.0
TASK_QUEUE = "noetl-playtest"
#: The dev server fires no scheduled task (a timer, an activity's retry) sooner than this shift
#: after it is created (``history.timerProcessorMaxTimeShift``, 1 s by default): every retry
#: and test-clock timer cost a second. This command's own server shifts by 10 ms.
TEST_SERVER_ARGS = ("--dynamic-config-value", 'history.timerProcessorMaxTimeShift="10ms"')


class TemporalRunner:
    """A :data:`session.CaseRunner` on a dev server it starts and stops (``with``)."""

    def __init__(self) -> None:
        self._loop = asyncio.Runner()
        self._stack = contextlib.AsyncExitStack()
        self._client: Any = None
        self._problems: list[str] = []
        self._case: Case | None = None

    def __enter__(self) -> TemporalRunner:
        self._loop.run(self._start())
        return self

    def __exit__(self, *exc: Any) -> None:
        from ..attempt import set_test_hook

        try:
            self._loop.run(self._stack.aclose())
        finally:
            set_test_hook(None)
            self._loop.close()

    async def _start(self) -> None:
        from ..attempt import set_test_hook
        from ..client.devserver import DEV_SERVER_ARGS, EmbeddedTemporal
        from ..hosting.lifecycle import hosted_worker

        embedded = await self._stack.enter_async_context(
            EmbeddedTemporal(ui=False, server_args=(*DEV_SERVER_ARGS, *TEST_SERVER_ARGS)))
        self._client = embedded.client
        # the mocks of tasks the workflow runs itself come from this worker's extra activity
        await self._stack.enter_async_context(hosted_worker(self._client, task_queue=TASK_QUEUE, owns_tools=True,
                                                            activities=[self._workflow_task_mock]))
        set_test_hook(self._answer)

    def __call__(self, case: Case, playbook_file: str) -> tuple[Any, str | None]:
        return self._loop.run(self._run(case, playbook_file))

    async def _run(self, case: Case, playbook_file: str) -> tuple[Any, str | None]:
        from ..client.end_to_end import run_with_client

        playbook, source = load(playbook_file)
        self._case, self._problems = case, []
        report = await run_with_client(self._client, playbook, task_queue=TASK_QUEUE, payload=dict(case.payload),
                                       source=source, worker=False, execution_timeout_s=EXECUTION_TIMEOUT_S,
                                       heartbeat_timeout_s=HEARTBEAT_TIMEOUT_S, test_clock=True)
        self._case = None
        actual = Actual(status=report.state, ctx=dict(report.ctx), steps=dict(report.steps), events=report.events,
                        result=report.summary or ({"reason": report.error} if report.error else None),
                        attempts=attempts_in(report.events))
        return actual, (self._problems[0] if self._problems else None)

    @activity.defn(name=TEST_MOCK_ACTIVITY)
    async def _workflow_task_mock(self, cmd: RunTask) -> dict[str, Any] | None:
        """A ``kind: playbook``, ``activity`` or ``workflow`` task's mock (one attempt: the
        engine decides on it, as in the default mode), None when it has none: it runs for real."""
        mocked = await self._answer(cmd, 1)
        return mocked.to_dict() if mocked is not None else None

    async def _answer(self, cmd: RunTask, attempt: int) -> Outcome | None:
        """The task activity's test hook: the mock's answer for this attempt, None to run the
        tool itself (``real:``), a failed outcome (and the case's problem) when unmocked."""
        case = self._case
        if case is None:
            return None
        mock: Mock | None = case.mocks.get(f"{cmd.step}.{cmd.task}") or case.mocks.get(cmd.step) or \
            case.kinds.get(cmd.kind)
        if mock is None:
            if cmd.kind in case.real or cmd.kind in WORKFLOW_KINDS:
                return None
            from .driver import _unmocked

            self._problems.append(_unmocked(cmd))
            return Outcome.failed(ErrorInfo(kind="unmocked", message=_unmocked(cmd)))
        from ..workflow.test_clock import scaled
        from .driver import _outcome

        answer = mock.answer(attempt)
        if answer.delay > 0:   # on the test clock, as the workflow's timers (a step timeout may cut it)
            await asyncio.sleep(scaled(answer.delay))
        return _outcome(answer, attempt)

