"""The default mode of ``noetl-temporal test``: the pure engine, mocked tools, virtual time.

The driver does what ``workflow/playbook_workflow.py`` does with the engine's commands, with a
virtual clock in place of Temporal's timers (docs/testing-playbooks.md):

* ``RunTask``: the task's attempts, as the task activity makes them: each attempt's
  answer is the mock's (or, for a kind the case lists in ``real:``, the tool's own run),
  the task policy decides on it with the engine's ``decide_attempt`` (the activity's
  own decision: the rule, and whether another attempt follows after which backoff). The whole invocation ends ``delay``s + backoffs later in virtual
  time, as one ``TaskFinished``. ``kind: playbook``, ``activity`` and ``workflow`` run in
  the workflow itself, one undecided outcome each (the engine decides, as for the shell);
  a sub-playbook listed in ``real:`` runs through this same driver.
* ``StartTimer``: a ``StepTimedOut`` at its deadline; ``CancelTasks``: the task ends now,
  cancelled; ``Yield``: ``Proceed`` at once.

Inputs due at the same virtual time are fed in the order they were scheduled. No real
time passes for a delay, a backoff or a timer, so a 3-hour backoff costs nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..dsl import load_playbook
from ..dsl.models import Playbook, playbook_definition
from ..engine import machine
from ..engine.envelopes import Attempt, ErrorInfo, Outcome, TaskResult
from ..engine.messages import (
    CancelTasks,
    Input,
    PageFetched,
    Proceed,
    RunTask,
    Start,
    StartTimer,
    StepTimedOut,
    TaskFinished,
    Yield,
)
from ..engine.policy_evaluation import Decision, decide_attempt
from ..errors import NoetlError
from ..tool_kinds import WORKFLOW_KINDS
from ..workflow.playbook_workflow import (
    MAX_PENDING,  # tasks in flight at once; more wait their turn, as there
)
from .spec import Case, Mock, Response

__all__ = ["Actual", "run_case", "attempts_in", "EPOCH", "MAX_DEPTH"]

#: virtual time 0 of every case (a fixed date: runs are reproducible)
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
#: sub-playbooks run for real nest at most this deep (the workflow's own limit)
MAX_DEPTH = 16
#: engine inputs one case may take before the driver calls it a runaway loop
MAX_INPUTS = 200_000


@dataclass
class Actual:
    """What a case's run showed: the facts expectations compare with."""

    status: str
    ctx: dict[str, Any]
    steps: dict[str, dict[str, Any]]        # step -> its record (status, runs, result)
    events: list[dict[str, Any]]
    result: dict[str, Any] | None           # the engine's final summary (reason, failed_steps ...)
    attempts: dict[str, int] = field(default_factory=dict)   # "step.task" -> attempts made, all invocations
    elapsed_s: float = 0.0                  # virtual seconds from start to finish
    problem: str | None = None              # why the case could not run to its end (an unmocked tool ...)

    @property
    def route(self) -> list[str]:
        return [e["entity_id"] for e in self.events if e.get("event_type") == "step.started"]

    def step_runs(self, name: str) -> int:
        return sum(1 for step in self.route if step == name)

    @property
    def reason(self) -> str:
        return str((self.result or {}).get("reason") or "")


@dataclass(order=True)
class _Due:
    at: float
    seq: int
    make: Callable[[], Input | None] = field(compare=False)
    task_run_id: str | None = field(default=None, compare=False)


class _Run:
    def __init__(self, case: Case, playbook: Playbook, source: str | None, execution_id: str,
                 payload: dict[str, Any], depth: int) -> None:
        self.case, self.source, self.depth = case, source, depth
        self.execution_id = execution_id
        self.playbook = playbook
        self.payload = payload
        self.clock = 0.0
        self.due: list[_Due] = []
        self.seq = 0
        self.inputs = 0
        self.pending: dict[str, _Due] = {}      # task run id -> its scheduled end
        self.queued: list[RunTask] = []         # waiting for a pending slot, as in the workflow
        self.state = machine.new_state(playbook, execution_id)
        #: ``--record``: "step.task" -> each invocation's outcomes, attempt by attempt (top level only)
        self.recorded: dict[str, list[list[Outcome]]] | None = None

    def now(self) -> str:
        return (EPOCH + timedelta(seconds=self.clock)).isoformat().replace("+00:00", "Z")

    def at(self, delay: float, make: Callable[[], Input | None], task_run_id: str | None = None) -> _Due:
        self.seq += 1
        due = _Due(self.clock + max(delay, 0.0), self.seq, make, task_run_id)
        heapq.heappush(self.due, due)
        return due

    def run(self) -> Actual:
        problem = None
        try:
            self.feed(Start(execution_id=self.execution_id, now=self.now(), payload=self.payload,
                            source=self.source))
            while self.due and not self.state.finished:
                due = heapq.heappop(self.due)
                if due.task_run_id is not None:
                    if self.pending.get(due.task_run_id) is not due:
                        continue   # cancelled meanwhile: its cancelled end was fed instead
                    del self.pending[due.task_run_id]
                    self.release()
                self.clock = due.at
                event = due.make()
                if event is not None:
                    self.feed(event)
            if not self.state.finished:
                problem = "the run stopped with nothing left to do and did not finish (paused, or waiting " \
                          "for a signal a test cannot send)"
        except NoetlError as stop:  # the case cannot go on (an unmocked task ...): its failure says why
            problem = str(stop)
        state = self.state
        return Actual(status=state.status.value, ctx=dict(state.ctx),
                      steps={name: record.to_dict() for name, record in state.steps.items()},
                      events=list(state.log.events), result=state.result, attempts=attempts_in(state.log.events),
                      elapsed_s=self.clock, problem=problem)

    def feed(self, event: Input) -> None:
        self.inputs += 1
        if self.inputs > MAX_INPUTS:
            raise NoetlError(f"the run took more than {MAX_INPUTS} engine inputs: an endless loop?")
        try:
            _, commands = machine.step(self.state, event)
        except Exception as exc:  # as the workflow does: an engine bug ends the run, loudly, no traceback
            raise NoetlError(f"internal engine error on {type(event).__name__}: {type(exc).__name__}: {exc}") from None
        for command in commands:
            if isinstance(command, RunTask):
                if len(self.pending) >= MAX_PENDING:   # the workflow's cap on pending activities
                    self.queued.append(command)
                else:
                    self.start_task(command)
            elif isinstance(command, CancelTasks):
                for task_run_id in command.task_run_ids:
                    queued = [c for c in self.queued if c.task_run_id == task_run_id]
                    if queued or self.pending.pop(task_run_id, None) is not None:
                        if queued:   # never started: reported cancelled at once
                            self.queued.remove(queued[0])
                        result = TaskResult.undecided(_failure("cancelled", "task cancelled"))
                        self.at(0, self.finished(task_run_id, result))
                        self.release()
            elif isinstance(command, StartTimer):
                self.at(command.seconds, self.timed_out(command.step_run_id))
            elif isinstance(command, Yield):
                self.at(0, lambda: None if self.state.finished else Proceed(now=self.now()))
            # Finish: the loop ends once the engine reports finished

    def release(self) -> None:
        """A task ended: start the oldest queued ones while slots are free (``workflow._release``)."""
        while self.queued and len(self.pending) < MAX_PENDING and not self.state.finished:
            self.start_task(self.queued.pop(0))

    def timed_out(self, step_run_id: str) -> Callable[[], Input | None]:
        return lambda: None if self.state.finished else StepTimedOut(now=self.now(), step_run_id=step_run_id)

    def finished(self, task_run_id: str, result: TaskResult) -> Callable[[], Input | None]:
        def make() -> Input | None:
            if self.state.finished:   # late results after the end change nothing (as the shell)
                return None
            # a cursor loop's page goes to its loop, as the shell feeds it (docs/semantics.md)
            page = any(r.loop is not None and r.loop.fetching == task_run_id for r in self.state.step_runs.values())
            made = PageFetched if page else TaskFinished
            return made(task_run_id=task_run_id, now=self.now(), result=result)
        return make

    # ------------------------------------------------------------------ one task

    def start_task(self, cmd: RunTask) -> None:
        mock = self.mock_for(cmd)
        if cmd.kind in WORKFLOW_KINDS:   # run by the workflow itself: one attempt, the engine decides
            if mock is not None:
                answer = mock.answer(1)
                result, took = TaskResult.undecided(_outcome(answer, 1)), answer.delay
            elif cmd.kind == "playbook" and "playbook" in self.case.real:
                outcome, took = self.child(cmd)
                result = TaskResult.undecided(outcome)
                self.record(cmd, [outcome])
            else:
                raise NoetlError(_unmocked(cmd))
        else:
            result, took = self.attempts_of(cmd, mock)
        self.pending[cmd.task_run_id] = self.at(took, self.finished(cmd.task_run_id, result), cmd.task_run_id)

    def record(self, cmd: RunTask, outcomes: list[Outcome]) -> None:
        if self.recorded is not None and outcomes:
            self.recorded.setdefault(f"{cmd.step}.{cmd.task}", []).append(outcomes)

    def mock_for(self, cmd: RunTask) -> Mock | None:
        case = self.case
        return case.mocks.get(f"{cmd.step}.{cmd.task}") or case.mocks.get(cmd.step) or case.kinds.get(cmd.kind)

    def attempts_of(self, cmd: RunTask, mock: Mock | None) -> tuple[TaskResult, float]:
        """Every attempt of one invocation, as the task activity and Temporal's retries make
        them; the virtual seconds they took (each attempt's delay and the backoffs between)."""
        if mock is None and cmd.kind not in self.case.real:
            raise NoetlError(_unmocked(cmd))
        took, attempt = 0.0, 1
        history: list[Attempt] = []
        tried: list[Outcome] = []   # the real tool's outcomes (``--record``)
        while True:
            started = self.clock + took
            if mock is not None:
                answer = mock.answer(attempt)
                outcome, duration = _outcome(answer, attempt), answer.delay
                decision = decide_attempt(cmd, outcome, attempt)
            else:
                outcome, decision, duration = _real(cmd, attempt)
            record = Attempt(attempt=attempt, status=outcome.status,
                             started_at=(EPOCH + timedelta(seconds=started)).isoformat().replace("+00:00", "Z"),
                             duration_ms=int(duration * 1000), error=outcome.error,
                             action=decision.action, rule_index=decision.rule_index)
            took += duration
            if mock is None:
                tried.append(outcome)
            following = decision.following
            if not following.retry:
                self.record(cmd, tried)
                return TaskResult(outcome=outcome, attempts=(*history, record), rule_index=decision.rule_index,
                                  action=decision.action, exhausted=following.exhausted), took
            history.append(dataclasses.replace(record, next_delay_s=following.delay))
            took += following.delay
            attempt += 1

    def child(self, cmd: RunTask) -> tuple[Outcome, float]:
        """A sub-playbook run for real: resolved as the worker resolves it, run by this driver;
        the virtual seconds it took."""
        from ..workflow.subplaybooks import _resolve, child_payload, child_result

        path = cmd.config.get("path") or cmd.config.get("playbook")
        if self.depth + 1 > MAX_DEPTH:
            return _failure("recursion", f"sub-playbook nesting deeper than {MAX_DEPTH} (at {path!r})"), 0.0
        try:
            resolved = _resolve(str(path).strip(), cmd.config.get("version"), cmd.source)
        except NoetlError as exc:
            return _failure("playbook", f"sub-playbook {path!r}: {exc}"), 0.0
        from ..workflow.definitions import prepare_playbook

        playbook, _ = prepare_playbook(resolved["playbook"])
        child_id = f"{self.execution_id}/{cmd.task_run_id}"
        run = _Run(self.case, playbook, resolved["source"], child_id, child_payload(cmd.config), self.depth + 1)
        actual = run.run()
        if actual.problem:
            raise NoetlError(f"in sub-playbook {path!r}: {actual.problem}")
        output = {"steps": actual.steps, "result": actual.result}
        result = child_result(output, cmd.config.get("return_step"))
        meta = {"child_execution_id": child_id, "child_state": actual.status, "child_version": resolved.get("version")}
        if actual.status == "COMPLETED":
            return Outcome.ok(result, **meta), actual.elapsed_s
        return Outcome.failed(ErrorInfo(kind="playbook", message=f"sub-playbook {path!r} ended {actual.status}: "
                                        f"{actual.reason or actual.status}"), result=result, **meta), actual.elapsed_s


def attempts_in(events: list[dict[str, Any]]) -> dict[str, int]:
    """``step.task`` -> attempts made, all invocations: read from the ``task.attempt.started``
    events, as both modes log them (a sub-playbook's attempts are in its own log)."""
    out: dict[str, int] = {}
    for event in events:
        if event.get("event_type") == "task.attempt.started":
            key = f"{str(event.get('step_run_id') or '').split(':run:')[0]}.{event.get('entity_id')}"
            out[key] = out.get(key, 0) + 1
    return out


def _failure(kind: str, message: str) -> Outcome:
    return Outcome.failed(ErrorInfo(kind=kind, message=message))


def _outcome(answer: Response, attempt: int) -> Outcome:
    """A mocked attempt's outcome, shaped as a tool's (``meta.attempt`` as the activity sets it)."""
    if answer.error is not None:
        return Outcome.from_dict({"status": "error", "result": answer.result, "error": dict(answer.error),
                                  "meta": {"attempt": attempt}})
    return Outcome.from_dict({"status": "ok", "result": answer.result, "error": None, "meta": {"attempt": attempt}})


def _real(cmd: RunTask, attempt: int) -> tuple[Outcome, Decision, float]:
    """One attempt of the tool itself, in this process (``real:``): made by the activity's
    own attempt (``noetl_temporal.attempt``). Its real duration counts in the virtual clock."""
    from ..tools import ToolCall

    call = ToolCall(execution_id=cmd.execution_id, step=cmd.step, task=cmd.task, attempt=attempt,
                    timeout=cmd.timeout, task_run_id=cmd.task_run_id, result_spec=cmd.result_spec,
                    store_result=not cmd.rules, heartbeat=None)
    clock = time.monotonic()
    try:
        outcome, decision = asyncio.run(_attempt_once(cmd, call))
    except Exception as exc:  # the activity's INTERNAL_ERROR: a bug on our side, not the playbook's
        raise NoetlError(f"internal error running task '{cmd.task}' of step '{cmd.step}': "
                         f"{type(exc).__name__}: {exc}") from None
    return outcome, decision, time.monotonic() - clock


async def _attempt_once(cmd: RunTask, call: Any) -> tuple[Outcome, Decision]:
    """The attempt on a loop of its own, whose pooled resources (HTTP connections, the
    python fork server) are released before the loop closes, as a stopping worker does."""
    from ..attempt import run_attempt
    from ..tools import aclose_clients

    try:
        return await run_attempt(cmd, call)
    finally:
        await aclose_clients()


def _unmocked(cmd: RunTask) -> str:
    return (f"task '{cmd.step}.{cmd.task}' (kind {cmd.kind}) has no mock: add `mocks: {{{cmd.step}.{cmd.task}: "
            f"{{result: ...}}}}` (or `kinds: {{{cmd.kind}: ...}}`), or `real: [{cmd.kind}]` to run it for real")


def load(path: str) -> tuple[Playbook, str]:
    """The playbook as a worker runs it: its normalized definition, validated again."""
    from ..workflow.definitions import prepare_playbook
    from ..workflow.subplaybooks import located_source

    loaded = load_playbook(path)
    playbook, _ = prepare_playbook(playbook_definition(loaded.playbook))
    return playbook, located_source(str(Path(path))) or path


def run_case(case: Case, playbook: Playbook, source: str, execution_id: str = "test") -> Actual:
    """Run one case to its end in virtual time."""
    return _Run(case, playbook, source, execution_id, dict(case.payload), 0).run()


def record_case(case: Case, playbook: Playbook, source: str,
                execution_id: str = "record") -> tuple[Actual, dict[str, list[list[Outcome]]]]:
    """Run one case with its real tools (``--record``); what each top-level task's real
    invocations answered, attempt by attempt."""
    run = _Run(case, playbook, source, execution_id, dict(case.payload), 0)
    run.recorded = {}
    return run.run(), run.recorded
