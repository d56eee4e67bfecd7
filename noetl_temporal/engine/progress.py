"""Where a running execution is, as a few lines of Markdown for the Temporal UI.

The workflow shows this text as its *current details* (``workflow.set_current_details``),
so the UI's run page says which steps are running, how far their loops are
(``37/100``), which steps wait at a gate or a join, whether the run is paused, which steps
an operator paused (and the runs each holds back) or skipped.
Pure: built from the engine state only, no Temporal, so it is computed the same way
on every worker and tested without a server.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping
from typing import Any

from .state import ExecutionState, StepRun

__all__ = ["describe", "current_step", "retrying_text", "MAX_LISTED"]

MAX_LISTED = 10   # a UI panel, not a report: name the first few, count the rest
MAX_REASON = 300  # a headline: the whole reason is in the output and the events
MAX_MESSAGE = 120  # a failed step's error, beside its name


def retrying_text(wait: Mapping[str, Any]) -> str:
    """``attempt 2 waits until T (last error: ...)``: a fast-path task waiting to retry (the
    ``retrying`` of the workflow's status and step-controls answers), as ``status``, the
    execution page and the current details say it (docs/approvals.md)."""
    error = f" (last error: {wait['last_error']})" if wait.get("last_error") else ""
    return f"attempt {wait.get('attempt')} waits until {wait.get('until')}{error}"


def describe(state: ExecutionState, retrying: list[dict[str, Any]] | None = None) -> str:
    """The current-details text; '' before the start. ``retrying``: the fast-path tasks
    waiting to retry (the workflow's own loop, which the engine state does not hold)."""
    if state.status.value == "PENDING":
        return ""
    if state.finished:
        return _ended(state)
    head = f"**{state.status.value}**"
    if state.paused:
        head += " · paused (resume to start new steps)"
    if state.stopping:
        head += f" · stopping ({state.stopping})"
    lines = [head]
    # Rebuilt after every engine step: only the listed few are formatted, or a wide fan-out
    # (thousands of steps running) would format them all on every task's end.
    if state.step_runs:
        running = [_running(run) for run in itertools.islice(state.step_runs.values(), MAX_LISTED)]
        lines.append("running: " + _listed(running, len(state.step_runs)))
    gates = sorted({t.step for t in state.tokens if t.denied})
    if gates:
        lines.append("waiting at a gate (ctx change): " + _listed([f"`{g}`" for g in gates[:MAX_LISTED]], len(gates)))
    if state.paused:
        queued = sorted({t.step for t in state.tokens if not t.denied})
        if queued:
            lines.append("held by the pause: " + _listed([f"`{q}`" for q in queued[:MAX_LISTED]], len(queued)))
    if state.paused_steps:
        lines.append("paused by an operator (resume-step): " + _held_steps(state))
    asks = [f"`{record['step']}`" + (f" ({_cut(str(record['prompt']), MAX_MESSAGE)})" if record.get("prompt") else "")
            for record in itertools.islice(state.approvals.values(), MAX_LISTED)]
    if asks:
        lines.append("waiting for an answer (approve): " + _listed(asks, len(state.approvals)))
    joins = [f"`{name}` ({len(buffered)} arrived)" for name, buffered in sorted(state.join_buffers.items())
             if buffered]
    if joins:
        lines.append("waiting at a join: " + _listed(joins[:MAX_LISTED], len(joins)))
    if retrying:
        waits = [f"`{wait.get('step')}`" + (f" (iteration {wait['iteration']})" if wait.get("iteration") is not None
                                            else "")
                 + " " + retrying_text({**wait, "last_error": _cut(str(wait.get("last_error") or ""), MAX_MESSAGE)})
                 for wait in retrying[:MAX_LISTED]]
        lines.append("retrying: " + _listed(waits, len(retrying)))
    _add_skipped(state, lines)
    _add_failures(state, lines)
    _add_redrive(state, lines)
    return "\n\n".join(lines)


def _held_steps(state: ExecutionState) -> str:
    """The paused steps, each with the runs it holds back (tokens that reached it and wait)."""
    waiting = Counter(t.step for t in state.tokens if t.step in state.paused_steps and not t.final)
    held = [f"`{name}`" + (f" ({waiting[name]} run{'s' if waiting[name] > 1 else ''} held)" if waiting[name] else "")
            for name in state.paused_steps[:MAX_LISTED]]
    return _listed(held, len(state.paused_steps))


def _add_skipped(state: ExecutionState, lines: list[str]) -> None:
    """The steps an operator skipped (docs/approvals.md), with who and why: their boxes say
    SKIPPED on the page, the events say so; here the run page does too."""
    names = [name for name in state.skipped_names if (state.steps[name].skipped is not None)]
    if not names:
        return
    shown = []
    for name in names[:MAX_LISTED]:
        note = state.steps[name].skipped or {}
        who = f"by {note.get('by') or 'unknown'}"
        reason = f": {_cut(str(note['reason']), MAX_MESSAGE)}" if note.get("reason") else ""
        shown.append(f"`{name}` ({who}{reason})")
    lines.append("skipped by an operator (skip): " + _listed(shown, len(names)))


def _ended(state: ExecutionState) -> str:
    """A closed run's final text: how it ended, its last step and why. Nothing about gates,
    joins or running steps: the UI shows this text after the close, when none of it holds."""
    lines = [f"**{state.status.value}**"]
    if state.terminal_event:
        lines.append(f"ended: {state.terminal_event}")
    if state.current_step:
        lines.append(f"last step: `{state.current_step}`")
    reason = (state.result or {}).get("reason")
    if reason:
        text = str(reason)
        lines.append("reason: " + _cut(text, MAX_REASON))
    _add_skipped(state, lines)
    _add_failures(state, lines)
    _add_redrive(state, lines)
    return "\n\n".join(lines)


def _add_redrive(state: ExecutionState, lines: list[str]) -> None:
    """A redrive names the execution it recovers, the steps it reused (their recorded results,
    no tool ran) and the steps that ran again so far (docs/operations.md, "What each execution
    shows"). In the order the steps ran (``state.steps`` keeps the order of their first end)."""
    if state.redriven_from is None:
        return
    lines.append(f"redrive of `{state.redriven_from}`")
    reused = [name for name, record in state.steps.items() if record.reused]
    rerun = [name for name, record in state.steps.items() if not record.reused and record.runs]
    rerun += [run.step for run in state.step_runs.values() if run.step not in state.steps and not run.reused]
    if reused:
        lines.append("reused (recorded results, no tool): "
                     + _listed([f"`{name}`" for name in reused[:MAX_LISTED]], len(reused)))
    if rerun:
        lines.append("reran: " + _listed([f"`{name}`" for name in rerun[:MAX_LISTED]], len(rerun)))


def _add_failures(state: ExecutionState, lines: list[str]) -> None:
    """Name the steps that failed. A tool's error comes back as the activity's *result* (a
    policy decides on it, not Temporal's retries), so its activity shows as completed in the
    UI's event history: this line is where the run page says that it failed."""
    if not state.failures:
        return
    shown = [f"`{f.step}`" + (f" ({_cut(f.message, MAX_MESSAGE)})" if f.message else "")
             + (" handled" if f.handled else "") for f in state.failures[:MAX_LISTED]]
    lines.append("failed: " + _listed(shown, len(state.failures)))


def _cut(text: str, limit: int) -> str:
    return text[:limit] + "…" if len(text) > limit else text


def current_step(state: ExecutionState) -> str | None:
    """The step a person asking for the status wants named: the last one started while it
    (or another) runs; when nothing runs, the first step waiting at an admission gate (the
    run is waiting there, not at the step that finished last); else the last one started."""
    if state.step_runs:
        running = {run.step for run in state.step_runs.values()}
        return state.current_step if state.current_step in running else next(iter(sorted(running)))
    gates = sorted({t.step for t in state.tokens if t.denied})
    if gates and not state.finished:
        return gates[0]
    return state.current_step


def _running(run: StepRun) -> str:
    loop = run.loop
    if loop is None:
        return f"`{run.step}`"
    text = f"`{run.step}` {loop.done_count}/{len(loop.items)}"
    if loop.failed:
        text += f" ({len(loop.failed)} failed)"
    return text


def _listed(first: list[str], total: int) -> str:
    """The first few of ``total`` items, and how many more."""
    more = total - len(first)
    return ", ".join(first) + (f" and {more} more" if more > 0 else "")
