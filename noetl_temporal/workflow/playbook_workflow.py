"""``PlaybookWorkflow``: the thin Temporal shell around the pure engine.

It only feeds inputs to ``engine.step`` and carries out the commands it returns:

* ``RunTask``     -> an activity (``noetl.run_task``), its result fed back as ``TaskFinished``
* ``CancelTasks`` -> cancel those activities (they see it through heartbeats)
* ``StartTimer``  -> a durable timer, fed back as ``StepTimedOut``
* ``Finish``      -> the workflow returns its output; a FAILED playbook fails it instead with
  ``PlaybookFailed`` carrying the same output (``playbook_result.py``), so Temporal shows Failed

Signals and updates (cancel reason, pause, resume, ctx patch) become engine inputs too.
A Temporal cancel request (Temporal UI, ``temporal workflow cancel``, the API) cancels
in-flight work, emits ``execution.cancelled`` and closes the workflow as CANCELED.

This module holds the run (its lifecycle, continue-as-new, the command queue) and its
handlers; a task run is ``task_runs`` (the activity, the fast path's retry loop), a
sub-playbook ``child_runs``, a user's own activity or workflow ``user_calls``, the writes to the event store ``event_flush``, and the
``workflow.patched`` ids ``patches``.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from ..conversion.playbook_result import playbook_failed
    from ..dsl.models import Playbook
    from ..engine import (
        approvals,
        behaviours,
        ctx_size,
        machine,
        progress,
        retries,
        skips,
        snapshot,
        step_offers,
    )
    from ..engine.envelopes import RunOutput, TaskResult
    from ..engine.graph import StepGraph
    from ..engine.messages import (
        Answer,
        Cancel,
        CancelTasks,
        Command,
        FetchPage,
        HoldStep,
        Input,
        PageFetched,
        PatchCtx,
        Pause,
        Proceed,
        Resume,
        RetryStep,
        RunTask,
        SkipStep,
        Start,
        StartTimer,
        StepTimedOut,
        TaskFinished,
        Yield,
    )
    from ..engine.state import ExecutionState
    from ..engine.status_layers import ExecutionStatus
    from ..tool_kinds import WORKFLOW_KINDS
    from ..tool_kinds.approve import APPROVE
    from .definitions import invalid_input, prepare_playbook
    from .metrics import count_execution
    from .pacing import TASK_BREAK, YIELD_ACTIVITY, ends_task
    from .run_length import work_is_long
    from .search_attributes import NOETL_STATE, PLAYBOOK_NAME, PLAYBOOK_PATH, has_attribute
    from .types import EXECUTION_ID_FROM_WORKFLOW, WORKFLOW_NAME, RunInput

# Workflow code, re-imported with this module in the sandbox (they wait through temporalio.workflow).
from . import approval_runs, child_runs, task_runs, test_clock, user_calls
from .event_flush import EventFlusher
from .fast_retries import FastRetry

__all__ = ["PlaybookWorkflow", "MAX_PENDING"]

# Temporal refuses more than 2,000 pending activities/children per execution; keep a margin
# for the event-persistence local activity and sub-playbook resolution.
MAX_PENDING = 1_500


# (workflow time in ns, its text): one text per workflow time, which stands still within an
# activation while every task's end asks for it. A pure function of the time, so sharing it
# between executions and threads is safe (the pair is replaced whole).
_last_now: tuple[int, str] = (-1, "")


def _now() -> str:
    global _last_now
    ahead = test_clock.skew()   # 0 but in test runs: virtual time (workflow/test_clock.py)
    if ahead:
        return (workflow.now() + timedelta(seconds=ahead)).isoformat().replace("+00:00", "Z")
    ns = workflow.time_ns()
    last = _last_now
    if last[0] == ns:
        return last[1]
    text = workflow.now().isoformat().replace("+00:00", "Z")
    _last_now = (ns, text)
    return text


# Unsandboxed per workflow, so a worker hosting the user's own workflows keeps theirs in the
# sandbox (docs/deployment.md, "The workflow sandbox"). ``variants.py`` has the same workflow
# sandboxed, and declaring its versioning behaviour for versioned workers (a server refuses a
# declared behaviour from an unversioned worker, so this class declares none).
@workflow.defn(name=WORKFLOW_NAME, sandboxed=False)
class PlaybookWorkflow:
    def __init__(self) -> None:
        self._state: ExecutionState | None = None   # set by run(): use ``engine`` below
        self._input: RunInput | None = None
        self._activities: dict[str, asyncio.Future[None]] = {}   # task run id -> its runner
        self._cancel_reason: str | None = None
        self._fatal: str | None = None
        self._cascade = True
        self._children: set[str] = set()   # task run ids that are sub-playbook child workflows
        self._events = EventFlusher(self._started_with)
        self._draining = False     # continue-as-new pending: park new work
        self._parked: list[RunTask | StartTimer] = []
        self._queued: collections.deque[RunTask] = collections.deque()   # waiting for a pending slot
        self._timers: dict[str, tuple[float, StartTimer]] = {}   # timer id -> (deadline, command)
        # approve tasks waiting for a person: not activities (no pending slot), handed to the
        # next run on continue-as-new instead of holding it back (docs/approvals.md)
        self._approvals: dict[str, tuple[RunTask, asyncio.Future[None]]] = {}
        # fast-path tasks' retry loops, which the retry_step update steers (fast_retries.py)
        self._fast: dict[str, FastRetry] = {}
        self._details = ""         # the Temporal UI's current details, as last set
        self._progress_due = False  # a refresh of them is queued on the event loop
        self._yields = 0           # Yield commands of this run (pacing.ends_task, run_length)
        self._stored_before = 0    # events stored by earlier runs (run_length)

    @property
    def engine(self) -> ExecutionState:
        """The engine state; set before anything can ask for it (``run`` starts with it)."""
        if self._state is None:
            raise RuntimeError("the engine state is not set up yet")
        return self._state

    # ------------------------------------------------------------------ run

    @workflow.run
    async def run(self, inp: RunInput) -> dict[str, Any]:
        if inp.execution_id == EXECUTION_ID_FROM_WORKFLOW:
            # A schedule's start: each run's id is the workflow id Temporal gives it
            # (docs/schedules.md). Recorded inputs always carry an id: they replay as before.
            inp = dataclasses.replace(inp, execution_id=workflow.info().workflow_id)
        self._input = inp
        newer = behaviours.unknown(inp.behaviours)
        if newer:  # not a workflow failure: the task is retried until a newer worker takes it
            raise RuntimeError(f"this worker does not know the behaviours {newer} that execution "
                               f"{inp.execution_id} was started with: upgrade the worker (docs/deployment.md)")
        if inp.behaviours is None and not inp.resume:
            # Recorded inputs from before the list existed must replay as they ran; a new start
            # without it is a hand-made input (workflow.logger is quiet while replaying).
            workflow.logger.warning(
                "execution %s was started without `behaviours`: it runs the engine as it was before "
                "any behaviour change. Start playbooks with noetl_temporal.start_execution, or from a "
                "workflow with noetl_temporal.workflow.execute_playbook", inp.execution_id)
        playbook, graph = self._prepare(inp)
        flusher = self._events.start(inp.persist_events, lambda: self.engine.log, self._unregistered)
        if inp.resume:
            self._resume(playbook, graph, inp.resume)
        else:
            self._state = machine.new_state(playbook, inp.execution_id, graph)
            self._feed(Start(execution_id=inp.execution_id, now=_now(), payload=inp.payload,
                             parent_execution_id=inp.parent_execution_id, source=inp.source,
                             behaviours=behaviours.of_input(inp.behaviours), redrive=inp.redrive))
            self._mark_state()
        self._events.flushed_seq = self._stored_before = self.engine.log.base
        self._show_progress()
        try:
            await workflow.wait_condition(lambda: self._done() or self._run_is_long())
            if not self._done():
                await self._continue_as_new(flusher)
        except asyncio.CancelledError:
            reason = self._cancel_reason or "cancel requested through Temporal"
            self._feed(Cancel(now=_now(), reason=reason))
            await self._settle()
            await self._drain(flusher)
            self._mark_state()
            raise
        await self._drain(flusher)
        if self._fatal is not None:
            # A bug in the engine, or a worker lacking an activity (found as late as the last
            # flush): fail this execution loudly instead of retrying the workflow task
            # forever (which would leave it RUNNING with no progress).
            self._mark_state("FAILED")
            raise ApplicationError(self._fatal, type="NoetlEngineError", non_retryable=True)
        self._mark_state()
        output = self._output()
        if output.state == ExecutionStatus.FAILED and self._started_with(behaviours.FAILED_PLAYBOOK_FAILS_WORKFLOW):
            raise playbook_failed(output)   # Temporal Failed, the output in its details
        return output.to_dict()

    @staticmethod
    def _prepare(inp: RunInput) -> tuple[Playbook, StepGraph]:
        """The playbook and its graph (once per worker and playbook). A definition that is not
        one fails the execution at once: its workflow task would fail the same way forever."""
        try:
            return prepare_playbook(inp.playbook)
        except Exception as exc:
            raise invalid_input(inp.execution_id, exc) from None

    def _mark_state(self, state: str | None = None) -> None:
        """At the start and the close: count the execution (metrics) and keep the ``NoetlState``
        search attribute current where the cluster has ours registered (the client or the
        parent set them at start)."""
        state = state or self.engine.status.value
        count_execution(workflow.metric_meter(), state)   # (a continued run does not start again)
        if self._has_search_attributes():
            workflow.upsert_search_attributes([NOETL_STATE.value_set(state)])

    def _has_search_attributes(self) -> bool:
        # Not an RPC: what this run was started with. Old starts set only NoetlPlaybookPath
        # (and registered only it and NoetlState); those upsert NoetlState as before.
        sas = workflow.info().typed_search_attributes
        return has_attribute(sas, PLAYBOOK_PATH) or has_attribute(sas, PLAYBOOK_NAME)

    def _show_progress(self) -> None:
        """Refresh the Temporal UI's current details (running steps, loop n/m, gates, pause,
        fast-path tasks waiting to retry).

        Current details are read by the UI through a query, so setting them adds no history
        event; the text is rebuilt after each engine step but only set when it changed."""
        text = progress.describe(self.engine, self._fast_waits())   # the fast path's waits: only here
        if text != self._details:
            self._details = text
            workflow.set_current_details(text)

    def _done(self) -> bool:
        return self.engine.finished or self._fatal is not None

    # ------------------------------------------------------------------ continue-as-new

    def _run_is_long(self) -> bool:
        """Time to hand over to a fresh run: the history is long, or (``bounded-run-work``)
        the run's work is (``run_length``: what a rebuild replays, what the SDK keeps)."""
        inp = self._input
        assert inp is not None
        info = workflow.info()
        if inp.continue_as_new_after_events:
            if info.get_current_history_length() >= inp.continue_as_new_after_events:
                return True
        elif info.is_continue_as_new_suggested():
            return True
        return self._started_with(behaviours.BOUNDED_RUN_WORK) and \
            work_is_long(self._yields, self._events.flushed_seq - self._stored_before)

    async def _continue_as_new(self, flusher: asyncio.Future[None] | None) -> None:
        """Drain, then hand the engine state to a fresh run.

        While draining, new task and timer commands are parked instead of started; once
        nothing is in flight the state, the parked commands and the timers' remaining time
        go to the next run, which starts them. Signals keep working meanwhile.
        """
        self._draining = True
        await workflow.wait_condition(lambda: self._done() or not self._busy())
        if self._done():
            return
        await workflow.wait_condition(workflow.all_handlers_finished)
        await self._drain(flusher)
        now = workflow.now().timestamp() + test_clock.skew()
        parked = [_command_dict(c) for c in [*self._queued, *self._parked, *(a for a, _ in self._approvals.values())]]
        for deadline, timer in self._timers.values():
            parked.append(_command_dict(StartTimer(timer_id=timer.timer_id, seconds=max(deadline - now, 0.0),
                                                   step_run_id=timer.step_run_id)))
        resume: dict[str, Any] = {"state": snapshot.snapshot(self.engine), "parked": parked,
                                  "cancel_reason": self._cancel_reason, "cascade": self._cascade}
        if test_clock.skew():   # a test run's virtual clock goes on where it was
            resume["test_clock_skew"] = test_clock.skew()
        assert self._input is not None
        workflow.continue_as_new(dataclasses.replace(self._input, resume=resume))

    def _busy(self) -> bool:
        return any(not handle.done() for handle in self._activities.values())

    def _resume(self, playbook: Playbook, graph: StepGraph, resume: dict[str, Any]) -> None:
        self._state = snapshot.restore(playbook, resume["state"], graph)
        self._cancel_reason = resume.get("cancel_reason")
        self._cascade = resume.get("cascade", True)
        test_clock.set_skew(float(resume.get("test_clock_skew") or 0.0))
        for data in resume.get("parked") or []:
            self._execute(_command_from(data))
        if self.engine.yield_requested:
            self._feed(Proceed(now=_now()))  # the previous run ended before its Proceed

    def _output(self) -> RunOutput:
        state = self.engine
        return RunOutput(execution_id=state.execution_id, state=state.status, result=state.result,
                         ctx=state.ctx, steps={name: record.to_dict() for name, record in state.steps.items()},
                         started_at=state.started_at,
                         ended_at=state.ended_at, terminal_event=state.terminal_event,
                         event_count=state.log.seq)

    def _started_with(self, behaviour: str) -> bool:
        """The execution's input lists this shell behaviour (``engine/behaviours.py``)."""
        return self._input is not None and behaviour in (self._input.behaviours or ())

    async def _drain(self, flusher: asyncio.Future[None] | None) -> None:
        """Before closing: every event is in the store."""
        await self._events.drain(flusher, self.engine.log)

    async def _settle(self) -> None:
        """Give cancelled activities a moment to acknowledge before the workflow closes."""
        # No timer here: cancelled activities resolve at once (TRY_CANCEL), and a timer
        # started after the cancel request would make the close order replay-sensitive.
        pending = [h for h in self._activities.values() if not h.done()]
        if pending:
            await workflow.wait_condition(lambda: all(h.done() for h in pending))

    # ------------------------------------------------------------------ engine I/O

    def _feed(self, event: Input) -> None:
        if self._fatal is not None:
            return
        try:
            _, commands = machine.step(self.engine, event)
        except Exception as exc:  # never let an engine bug hang the workflow task
            self._fatal = f"internal engine error on {type(event).__name__}: {type(exc).__name__}: {exc}"
            workflow.logger.exception("engine error")
            return
        for command in commands:
            self._execute(command)
        self._progress_soon()

    # perf: the UI's current details refreshed per input (once per turn instead) — benchmark: probes.workflow_cpu
    def _progress_soon(self) -> None:
        """Refresh the current details once the loop has run what is ready: a query reads
        them in an activation of its own, so one refresh after the inputs of a turn shows
        what one after each input did (a loop's tasks end ten or more to an activation)."""
        if not self._progress_due:
            self._progress_due = True
            asyncio.get_running_loop().call_soon(self._progress_now)

    def _progress_now(self) -> None:
        self._progress_due = False
        self._show_progress()

    def _execute(self, command: Command) -> None:
        if isinstance(command, RunTask | StartTimer) and self._draining:
            self._parked.append(command)  # started by the next run (continue-as-new)
        elif isinstance(command, RunTask) and command.kind == APPROVE.kind:
            self._approvals[command.task_run_id] = (command, asyncio.ensure_future(self._run_approval(command)))
        elif isinstance(command, RunTask):
            if len(self._activities) >= self._max_pending():
                self._queued.append(command)  # Temporal allows 2,000 pending per execution
                return
            child = command.kind in WORKFLOW_KINDS  # `playbook`, `activity`, `workflow` (tool_kinds/)
            runner = self._run_child if child else self._run_task
            if command.kind == "playbook":  # a user's own workflow is cancelled with its task, cascade or not
                self._children.add(command.task_run_id)
            self._activities[command.task_run_id] = asyncio.ensure_future(runner(command))
        elif isinstance(command, CancelTasks):
            for task_run_id in command.task_run_ids:
                self._cancel_task(task_run_id)
        elif isinstance(command, Yield):
            asyncio.ensure_future(self._proceed_later())
        elif isinstance(command, StartTimer):
            self._timers[command.timer_id] = (workflow.now().timestamp() + test_clock.skew() + command.seconds,
                                              command)
            asyncio.ensure_future(self._timer(command))
        # Finish: run() returns once the engine reports finished

    def _max_pending(self) -> int:
        return min(self._input.max_pending, MAX_PENDING) if self._input and self._input.max_pending else MAX_PENDING

    def _release(self, task_run_id: str) -> None:
        """A task ended: free its slot and start the oldest queued task, if any."""
        self._activities.pop(task_run_id, None)
        while self._queued and len(self._activities) < self._max_pending() and not self.engine.finished:
            self._execute(self._queued.popleft())

    def _cancel_task(self, task_run_id: str) -> None:
        if task_run_id in self._children and not self._cascade:
            return  # cancel(cascade=False): the child keeps running (abandoned)
        parked = [c for c in [*self._parked, *self._queued]
                  if isinstance(c, RunTask) and c.task_run_id == task_run_id]
        if parked:  # never started: report it cancelled right away
            (self._parked if parked[0] in self._parked else self._queued).remove(parked[0])
            asyncio.ensure_future(self._report_soon(parked[0], task_runs.cancelled("task cancelled")))
            return
        handle = self._activities.get(task_run_id)
        if handle is None and task_run_id in self._approvals:
            handle = self._approvals[task_run_id][1]
        if handle is not None and not handle.done():
            handle.cancel()

    async def _report_soon(self, cmd: RunTask, result: TaskResult) -> None:
        self._report(cmd, result)  # on the next turn of the loop: not inside the current _feed

    async def _run_task(self, cmd: RunTask) -> None:
        inp = self._input
        assert inp is not None
        fast = None
        if cmd.spec.get("local") is True and not inp.test_clock and self._started_with(behaviours.FAST_RETRY_CONTROLS):
            fast = self._fast[cmd.task_run_id] = FastRetry(step=cmd.step, iteration=cmd.iteration,
                                                            changed=self._progress_soon)
        try:
            result = await task_runs.run_task(cmd, inp, fast)
        except ValueError as err:  # the worker does not register the fast path's activity
            self._unregistered(err)
            return
        finally:
            self._fast.pop(cmd.task_run_id, None)
            self._release(cmd.task_run_id)
        self._report(cmd, result)

    def _unregistered(self, err: ValueError) -> None:
        """A local activity this worker does not register (the SDK raises in the workflow):
        end the execution with a clear error instead of failing its workflow task forever,
        which would leave it RUNNING with a line in the worker's log as the only sign.
        Any other ValueError is not this: it goes on as before."""
        if "is not registered on this worker" not in str(err):
            raise err
        self._events.persist = False
        self._fatal = (f"this worker cannot run playbooks: {err}. Register everything "
                       "noetl_temporal.registration() returns, or use build_worker (docs/deployment.md)")

    def _report(self, cmd: RunTask, result: TaskResult) -> None:
        if not self.engine.finished:  # late results after the end change nothing
            # a cursor loop's page goes to its loop, not to a pipeline (docs/semantics.md)
            made = PageFetched if isinstance(cmd, FetchPage) else TaskFinished
            self._feed(made(task_run_id=cmd.task_run_id, now=_now(), result=result))

    async def _run_child(self, cmd: RunTask) -> None:
        """A task the workflow runs itself: ``kind: playbook`` (resolve the child, run it as a
        child workflow, inherit its status), or a user's own activity or workflow by type name."""
        inp = self._input
        assert inp is not None
        try:
            # a test run's mock of it (docs/testing-playbooks.md); None: it runs for real
            mocked = await test_clock.mocked(cmd) if inp.test_clock else None
            if mocked is not None:
                outcome = mocked
            elif cmd.kind == "activity":
                outcome = await user_calls.activity_outcome(
                    cmd, settled=self._started_with(behaviours.SETTLED_USER_ACTIVITY))
            elif cmd.kind == "workflow":
                outcome = await user_calls.workflow_outcome(cmd, inp.execution_id)
            else:
                outcome = await child_runs.child_outcome(cmd, inp, self.engine.behaviours)
        except asyncio.CancelledError:
            outcome = task_runs.failure("cancelled", "sub-playbook cancelled" if cmd.kind == "playbook"
                                        else f"{cmd.kind} {cmd.config.get('name')!r} cancelled")
        finally:
            self._release(cmd.task_run_id)
        # The engine decides on the outcome (no activity of ours evaluated its policy).
        self._report(cmd, TaskResult.undecided(outcome))

    async def _run_approval(self, cmd: RunTask) -> None:
        """An approve task: the ``answer`` update ends it (feeding the engine itself), or its
        timeout does, here. Cancelled (its step timed out, the execution was cancelled): a
        cancelled task, as any other."""
        record = self.engine.approvals.get(cmd.task_run_id)
        since = record["since"] if record is not None else None
        try:
            answered = await approval_runs.wait_for_answer(cmd, lambda: cmd.task_run_id not in self.engine.approvals,
                                                           since=since, now=self._virtual_now())
        except asyncio.CancelledError:
            self._approvals.pop(cmd.task_run_id, None)
            self._report(cmd, task_runs.cancelled("approval cancelled"))
            return
        self._approvals.pop(cmd.task_run_id, None)
        if not answered and not self.engine.finished:
            self._feed(Answer(now=_now(), task_run_id=cmd.task_run_id, timed_out=True))

    @staticmethod
    def _virtual_now() -> datetime:
        """The time the engine's records read (``since``): the real time but in test runs."""
        return workflow.now() + timedelta(seconds=test_clock.skew())

    async def _proceed_later(self) -> None:
        """The engine used up one input's work budget: go on in a later activation (and
        every few yields in a later workflow task, ``pacing.ends_task``)."""
        self._yields += 1
        try:
            if self._started_with(behaviours.PACED_WORKFLOW_TASKS) and \
                    ends_task(self._yields, first_breaks=self._started_with(behaviours.BOUNDED_RUN_WORK)):
                await workflow.execute_activity(YIELD_ACTIVITY, start_to_close_timeout=TASK_BREAK,
                                                summary="noetl: continue inline work")
            else:
                await workflow.execute_local_activity(YIELD_ACTIVITY, start_to_close_timeout=timedelta(seconds=30),
                                                      summary="noetl: continue inline work")
        except ValueError as err:  # the worker does not register the activity
            self._unregistered(err)
            return
        if self._events.bounded_backlog():
            # Inline work makes events faster than the store takes them: let the writes catch
            # up, or the workflow holds the whole log.
            await self._events.caught_up(self.engine.log)
        if not self.engine.finished:
            self._feed(Proceed(now=_now()))

    async def _timer(self, cmd: StartTimer) -> None:
        await test_clock.sleep(cmd.seconds, test_clock=self._input is not None and self._input.test_clock,
                               summary=cmd.timer_id)
        self._timers.pop(cmd.timer_id, None)
        if not self.engine.finished:
            self._feed(StepTimedOut(now=_now(), step_run_id=cmd.step_run_id))

    # ------------------------------------------------------------------ signals, updates, queries

    @workflow.signal(name="cancel")
    def cancel(self, reason: str | None = None, cascade: bool = True) -> None:
        """Record why (and whether sub-playbooks go too); the caller then sends a Temporal
        cancel request, which ends the run. ``cascade=False`` leaves running children alone."""
        self._cancel_reason = reason or "cancelled"
        self._cascade = bool(cascade)

    @workflow.signal(name="pause")
    def pause(self, reason: str | None = None) -> None:
        if self._state is not None:
            self._feed(Pause(now=_now(), reason=reason))

    @workflow.signal(name="resume")
    def resume(self) -> None:
        if self._state is not None:
            self._feed(Resume(now=_now()))

    @workflow.update(name="patch_ctx")
    def patch_ctx(self, patch: dict[str, Any]) -> dict[str, Any]:
        self._feed(PatchCtx(now=_now(), patch=patch))
        return dict(self.engine.ctx)

    @patch_ctx.validator
    def _validate_patch(self, patch: dict[str, Any]) -> None:
        if self._state is None or self._state.finished:
            raise ValueError("execution is not running: ctx can no longer change")
        if not isinstance(patch, dict) or not patch:
            raise ValueError("a ctx patch is a non-empty JSON object of key -> value")
        for key in patch:
            if not isinstance(key, str) or not key or key.startswith(".") or key.endswith("."):
                raise ValueError(f"invalid ctx key {key!r}: use names like 'approved' or 'a.b'")
        too_big = ctx_size.refusal(self._state, patch, "ctx patch")
        if too_big is not None:
            raise ValueError(too_big)

    @workflow.update(name=approval_runs.UPDATE_NAME)
    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """A person's answer to a waiting approve task: it becomes the task's result."""
        answer = approval_runs.AnswerRequest.read(request)
        task_run_id, _ = approvals.find(self.engine, answer.step, answer.iteration)
        assert task_run_id is not None   # the validator found it, in this same activation
        self._feed(Answer(now=_now(), task_run_id=task_run_id, values=answer.values, by=answer.by,
                          reason=answer.reason))
        return {"step": answer.step, "task_run_id": task_run_id, "answer": answer.values, "by": answer.by}

    @answer.validator
    def _validate_answer(self, request: dict[str, Any]) -> None:
        if self._state is None:
            raise ValueError("the execution is not running yet: nothing waits for an answer")
        answer = approval_runs.AnswerRequest.read(request)
        refusal = approvals.refusal(self._state, answer.step, answer.values, answer.by, answer.iteration)
        if refusal is not None:
            raise ValueError(refusal)

    @workflow.update(name=approval_runs.SKIP_UPDATE)
    def skip_step(self, request: dict[str, Any]) -> dict[str, Any]:
        """An operator skips a running step: it ends as a success with the given result."""
        skip = approval_runs.SkipRequest.read(request)
        self._feed(SkipStep(now=_now(), step=skip.step, reason=skip.reason, result=skip.result, by=skip.by,
                            iteration=skip.iteration))
        return {"step": skip.step, "result": skip.result, "by": skip.by, "reason": skip.reason}

    @skip_step.validator
    def _validate_skip(self, request: dict[str, Any]) -> None:
        if self._state is None:
            raise ValueError("the execution is not running yet: no step to skip")
        skip = approval_runs.SkipRequest.read(request)
        refusal = skips.refusal(self._state, skip.step, skip.reason, skip.iteration)
        if refusal is not None:
            raise ValueError(refusal)

    @workflow.update(name=approval_runs.PAUSE_STEP_UPDATE)
    def pause_step(self, request: dict[str, Any]) -> dict[str, Any]:
        """An operator pauses one step: no new run of it starts; the rest goes on."""
        return self._hold(request, hold=True)

    @pause_step.validator
    def _validate_pause_step(self, request: dict[str, Any]) -> None:
        self._validate_hold(request, hold=True)

    @workflow.update(name=approval_runs.RESUME_STEP_UPDATE)
    def resume_step(self, request: dict[str, Any]) -> dict[str, Any]:
        return self._hold(request, hold=False)

    @resume_step.validator
    def _validate_resume_step(self, request: dict[str, Any]) -> None:
        self._validate_hold(request, hold=False)

    @workflow.update(name=approval_runs.RETRY_STEP_UPDATE)
    def retry_step(self, request: dict[str, Any]) -> dict[str, Any]:
        """An operator makes a retrying step retry now, or changes its retry policy: recorded
        here, carried out by the client through Temporal's activity APIs (engine/retries.py),
        or here for a fast-path task, whose retries are this workflow's (fast_retries.py)."""
        ask = approval_runs.RetryRequest.read(request)
        task_run_id, _ = retries.in_flight(self._state, ask.step, ask.iteration) if self._state else ("", None)
        self._feed(RetryStep(now=_now(), step=ask.step, action=ask.action, task_run_id=task_run_id, reason=ask.reason,
                             by=ask.by, iteration=ask.iteration, attempts=ask.attempts, delay=ask.delay))
        answer = {"step": ask.step, "action": ask.action, "task_run_id": task_run_id, "by": ask.by,
                  "reason": ask.reason, "attempts": ask.attempts, "delay": ask.delay}
        fast = self._fast.get(task_run_id)
        if fast is None:
            return answer
        if ask.action == "now":
            fast.retry_now()
        else:
            fast.set_policy(ask.attempts, ask.delay)
        return {**answer, "fast_path": True, "attempt": fast.attempt, "attempts": fast.attempts, "delay": fast.delay}

    @retry_step.validator
    def _validate_retry_step(self, request: dict[str, Any]) -> None:
        if self._state is None:
            raise ValueError("the execution is not running yet: no step retries")
        ask = approval_runs.RetryRequest.read(request)
        # what the client saw Temporal hold, and the fast path's loops, which only this workflow sees
        seen = {**ask.activities, **{task_run_id: fast.seen() for task_run_id, fast in self._fast.items()}}
        refusal = retries.refusal(self._state, ask.step, ask.action, ask.iteration, seen, ask.attempts, ask.delay)
        if refusal is not None:
            raise ValueError(refusal)

    def _hold(self, request: dict[str, Any], *, hold: bool) -> dict[str, Any]:
        step_request = approval_runs.StepRequest.read(request)
        self._feed(HoldStep(now=_now(), step=step_request.step, hold=hold, reason=step_request.reason,
                            by=step_request.by))
        return {"step": step_request.step, "paused": hold, "paused_steps": list(self.engine.paused_steps)}

    def _validate_hold(self, request: dict[str, Any], *, hold: bool) -> None:
        if self._state is None:
            raise ValueError("the execution is not running yet")
        step_request = approval_runs.StepRequest.read(request)
        refusal = skips.hold_refusal(self._state, step_request.step, hold)
        if refusal is not None:
            raise ValueError(refusal)

    @workflow.query(name="status")
    def status(self) -> dict[str, Any]:
        state = self._state
        if state is None:
            return {"state": "PENDING", "current_step": None, "started_at": None, "ended_at": None,
                    "terminal_event": None, "paused": False}
        status: dict[str, Any] = {"state": state.status.value, "current_step": progress.current_step(state),
                                  "started_at": state.started_at, "ended_at": state.ended_at,
                                  "terminal_event": state.terminal_event, "paused": state.paused}
        if state.approvals:
            status["waiting"] = approvals.waiting(state)
        if state.paused_steps:
            status["paused_steps"] = list(state.paused_steps)
        skipped = skips.skipped_steps(state.steps)
        if skipped:   # steps an operator skipped, with who and why (client/step_notes.py)
            status["skipped_steps"] = skipped
        retrying = self._fast_waits()
        if retrying:   # fast-path tasks waiting out a backoff: only this workflow knows it (fast_retries.py)
            status["retrying"] = retrying
        return status

    def _fast_waits(self) -> list[dict[str, Any]]:
        """The fast-path tasks waiting to retry, as ``status`` shows them (the first few)."""
        shown = (fast.shown(task_run_id) for task_run_id, fast in self._fast.items())
        return [entry for entry in shown if entry is not None][:step_offers.MAX_ITERATIONS]

    @workflow.query(name="step_controls")
    def step_controls(self, activities: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The per-step controls that apply now (engine/step_offers.py), for the execution
        page; ``activities``: what the client saw Temporal hold, as ``retry_step`` is given it."""
        if self._state is None:
            return []
        # as the retry_step validator sees it: the fast path's loops, which only this workflow sees
        seen = {**(activities if isinstance(activities, dict) else {}),
                **{task_run_id: fast.seen() for task_run_id, fast in self._fast.items()}}
        offers = step_offers.offered(self._state, seen)
        waits = {(entry["step"], entry["iteration"]): entry for entry in self._fast_waits()}
        for offer in offers:   # what the page says of a fast-path task waiting to retry
            wait = waits.get((offer["step"], offer["iteration"]))
            if wait is not None:
                offer["retrying"] = {k: wait[k] for k in ("attempt", "until", "last_error")}
        return offers

    @workflow.query(name="events")
    def events(self, after_seq: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        if self._state is None:
            return []
        return self.engine.log.since(max(after_seq, 0), limit)

    @workflow.query(name="detail")
    def detail(self) -> dict[str, Any]:
        if self._state is None:
            return {}
        return dataclasses.replace(self._output(), paused=self.engine.paused).to_dict()


def _command_dict(command: RunTask | StartTimer) -> dict[str, Any]:
    return {"type": type(command).__name__, "fields": dataclasses.asdict(command)}


def _command_from(data: dict[str, Any]) -> RunTask | StartTimer:
    kinds: dict[str, type[RunTask] | type[StartTimer]] = {"RunTask": RunTask, "FetchPage": FetchPage,
                                                          "StartTimer": StartTimer}
    return kinds[data["type"]](**data["fields"])
