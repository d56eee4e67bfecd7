"""Drive the pure engine without Temporal: a table of fake tool outcomes stands in for
activities (fine for unit tests of pure code; the Temporal tier runs real tools)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.engine.envelopes import Attempt, Outcome, TaskResult
from noetl_temporal.engine.machine import new_state, step
from noetl_temporal.engine.messages import (
    CancelTasks,
    FetchPage,
    Finish,
    PageFetched,
    Proceed,
    RunTask,
    Start,
    StartTimer,
    TaskFinished,
    Yield,
)
from noetl_temporal.engine.policy_evaluation import decide_attempt

NOW = "2026-01-01T00:00:00Z"


def ok(result: Any = None) -> dict[str, Any]:
    return {"status": "ok", "result": result, "error": None, "meta": {"attempt": 1}}


def err(kind: str = "python", message: str = "boom", **extra: Any) -> dict[str, Any]:
    out = {"status": "error", "result": None, "meta": {"attempt": 1},
           "error": {"kind": kind, "retryable": False, "code": None, "message": message}}
    out.update(extra)
    return out


@dataclass
class Run:
    state: Any
    ran: list[RunTask] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    timers: list[StartTimer] = field(default_factory=list)
    finish: Finish | None = None

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.state.log.events

    def types(self, prefix: str = "") -> list[str]:
        return [e["event_type"] for e in self.events if e["event_type"].startswith(prefix)]

    def steps_started(self) -> list[str]:
        return [e["entity_id"] for e in self.events if e["event_type"] == "step.started"]

    @property
    def status(self) -> str:
        return self.state.status.value


def playbook(text: str):
    return load_playbook_text(textwrap.dedent(text)).playbook


def run(text: str, tool: Callable[[RunTask], dict] | None = None, *, payload: dict | None = None,
        hold: Callable[[RunTask], bool] | None = None, execution_id: str = "ex",
        behaviours: list[str] | None = None) -> Run:
    """Run to the end. ``tool(cmd)`` returns the outcome of each task; ``hold(cmd)`` keeps a
    task in flight (the test then feeds inputs itself through ``feed``). ``behaviours``:
    the engine behaviour changes switched on (default: all, as for a new execution)."""
    pb = playbook(text) if isinstance(text, str) else text
    state = new_state(pb, execution_id)
    r = Run(state)
    r.tool = tool or (lambda cmd: ok({"step": cmd.step, "task": cmd.task}))  # type: ignore[attr-defined]
    r.hold = hold or (lambda cmd: False)  # type: ignore[attr-defined]
    r.held = []  # type: ignore[attr-defined]
    r.yields = 0  # type: ignore[attr-defined]
    start = Start(execution_id=execution_id, now=NOW, payload=payload or {})
    if behaviours is not None:
        start.behaviours = list(behaviours)
    feed(r, start)
    return r


def feed(r: Run, event: Any) -> None:
    queue = [event]
    while queue:
        _, commands = step(r.state, queue.pop(0))
        for c in commands:
            if isinstance(c, RunTask):
                r.ran.append(c)
                if r.hold(c):  # type: ignore[attr-defined]
                    r.held.append(c)  # type: ignore[attr-defined]
                    continue
                queue.append(finished(c, r.tool(c)))  # type: ignore[attr-defined]
            elif isinstance(c, CancelTasks):
                r.cancelled.extend(c.task_run_ids)
            elif isinstance(c, StartTimer):
                r.timers.append(c)
            elif isinstance(c, Finish):
                r.finish = c
            elif isinstance(c, Yield):
                r.yields += 1  # type: ignore[attr-defined]
                queue.append(Proceed(now=NOW))


def finished(cmd: RunTask, outcome: dict[str, Any]) -> TaskFinished:
    """What the activity reports: its own policy decision on the outcome (``decide_attempt``,
    the one the activity makes), at attempt 1; no retries here, so a retry is exhausted."""
    reported = Outcome.from_dict(outcome)
    d = decide_attempt(cmd, reported, 1)
    action = d.action
    exhausted = action == "retry"
    made = PageFetched if isinstance(cmd, FetchPage) else TaskFinished
    attempts = (Attempt.from_dict({"attempt": 1, "status": outcome["status"], "action": action}),)
    return made(task_run_id=cmd.task_run_id, now=NOW,
                result=TaskResult(outcome=reported, attempts=attempts, rule_index=d.rule_index, action=action,
                                  exhausted=exhausted))
