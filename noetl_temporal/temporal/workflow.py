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
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey, TypedSearchAttributes
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    FailureError,
)
from temporalio.exceptions import TimeoutError as TemporalTimeoutError
from temporalio.workflow import ChildWorkflowCancellationType, ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from ..dsl.models import Playbook
    from ..engine import behaviours, ctx_size, machine, progress, snapshot
    from ..engine.envelopes import ErrorInfo, Outcome, RunOutput, TaskResult
    from ..engine.events import EventLog
    from ..engine.graph import StepGraph
    from ..engine.messages import (
        Cancel,
        CancelTasks,
        Command,
        Input,
        PatchCtx,
        Pause,
        Proceed,
        Resume,
        RunTask,
        Start,
        StartTimer,
        StepTimedOut,
        TaskFinished,
        Yield,
    )
    from ..engine.state import ExecutionState
    from ..status import ExecutionStatus
    from ..tool_kinds import WORKFLOW_KINDS
    from . import labels
    from .activities import INTERNAL_ERROR, POLICY_RETRY
    from .definitions import prepare_playbook
    from .local_only import LocalOnlyList, local_run_task
    from .metrics import count_execution
    from .naming import child_execution_id
    from .pacing import TASK_BREAK, YIELD_ACTIVITY, ends_task
    from .persistence import PERSIST_EVENTS_ACTIVITY, persist_summary
    from .playbook_result import output_in, playbook_failed
    from .search_attributes import NOETL_STATE, PLAYBOOK_NAME, PLAYBOOK_PATH
    from .subplaybooks import MAX_DEPTH, RESOLVE_PLAYBOOK_ACTIVITY, child_payload, child_result
    from .types import RUN_TASK_ACTIVITY, RUN_TASK_LOCAL_ACTIVITY, WORKFLOW_NAME, RunInput

__all__ = ["PlaybookWorkflow", "MAX_PENDING"]

# Temporal refuses more than 2,000 pending activities/children per execution; keep a margin
# for the event-persistence local activity and sub-playbook resolution.
MAX_PENDING = 1_500

# Persisted events the workflow still keeps in memory for the ``events`` query; older ones
# are read from the event store. Bounds workflow memory on long executions.
EVENTS_KEPT_IN_MEMORY = 2_000
EVENT_BATCH = 500
# Events waiting for the store past which inline work waits for a write, and the most one
# write takes (behaviours.BOUNDED_EVENT_BACKLOG; before it, one write took EVENT_BATCH).
MAX_EVENT_BACKLOG = 2_500

# Events are persisted in batches: when EVENT_BATCH are waiting, when the run closes, or on
# the first activation FLUSH_INTERVAL (workflow time) after the last write or the start
# (executions started before behaviours.DEFERRED_FIRST_FLUSH wrote their first batch at
# once). Persisting after every step cost a local activity per step, and a workflow task
# waits for its local activities before it sends its commands, so every step paid the
# store's write latency. Live readers query the workflow, so only readers of the store
# (no worker answering) see the lag.
FLUSH_INTERVAL = timedelta(seconds=2)

# ``workflow.patched`` ids: interpreter changes that would replay differently on histories
# recorded before them (docs/deployment.md, "Upgrading workers"). Never reuse an id.
PATCH_READABLE_CHILD_IDS = "readable-child-ids"   # sub-playbook ids `<child>-<hash>`, not `<parent>/<task>`
PATCH_BATCHED_EVENT_FLUSH = "noetl-batched-event-flush"   # events persisted in batches, not per step
# Engine behaviour changes are named in ``engine/behaviours.py`` and listed in the workflow input instead.


def _now() -> str:
    return workflow.now().isoformat().replace("+00:00", "Z")


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
        self._flushed_seq = 0      # events up to this seq are in the event store
        self._persist = True
        self._draining = False     # continue-as-new pending: park new work
        self._closing = False      # the run is about to close: persist what is left now
        self._next_flush_at = datetime.min.replace(tzinfo=UTC)   # workflow time of the next write
        self._parked: list[RunTask | StartTimer] = []
        self._queued: collections.deque[RunTask] = collections.deque()   # waiting for a pending slot
        self._timers: dict[str, tuple[float, StartTimer]] = {}   # timer id -> (deadline, command)
        self._details = ""         # the Temporal UI's current details, as last set
        self._yields = 0           # Yield commands of this run (pacing.ends_task)

    @property
    def engine(self) -> ExecutionState:
        """The engine state; set before anything can ask for it (``run`` starts with it)."""
        if self._state is None:
            raise RuntimeError("the engine state is not set up yet")
        return self._state

    # ------------------------------------------------------------------ run

    @workflow.run
    async def run(self, inp: RunInput) -> dict[str, Any]:
        self._input = inp
        newer = behaviours.unknown(inp.behaviours)
        if newer:  # not a workflow failure: the task is retried until a newer worker takes it
            raise RuntimeError(f"this worker does not know the behaviours {newer} that execution "
                               f"{inp.execution_id} was started with: upgrade the worker (docs/deployment.md)")
        playbook, graph = prepare_playbook(inp.playbook)   # once per worker and playbook
        self._persist = inp.persist_events
        if self._started_with(behaviours.DEFERRED_FIRST_FLUSH):
            self._next_flush_at = workflow.now() + FLUSH_INTERVAL
        flusher = asyncio.ensure_future(self._flush_events()) if self._persist else None
        if inp.resume:
            self._resume(playbook, graph, inp.resume)
        else:
            self._state = machine.new_state(playbook, inp.execution_id, graph)
            self._feed(Start(execution_id=inp.execution_id, now=_now(), payload=inp.payload,
                             parent_execution_id=inp.parent_execution_id, source=inp.source,
                             behaviours=behaviours.of_input(inp.behaviours)))
            self._mark_state()
        self._flushed_seq = self.engine.log.base
        self._show_progress()
        try:
            await workflow.wait_condition(lambda: self._done() or self._history_is_long())
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
        return _has_attribute(sas, PLAYBOOK_PATH) or _has_attribute(sas, PLAYBOOK_NAME)

    def _show_progress(self) -> None:
        """Refresh the Temporal UI's current details (running steps, loop n/m, gates, pause).

        Current details are read by the UI through a query, so setting them adds no history
        event; the text is rebuilt after each engine step but only set when it changed."""
        text = progress.describe(self.engine)
        if text != self._details:
            self._details = text
            workflow.set_current_details(text)

    def _done(self) -> bool:
        return self.engine.finished or self._fatal is not None

    # ------------------------------------------------------------------ continue-as-new

    def _history_is_long(self) -> bool:
        inp = self._input
        assert inp is not None
        info = workflow.info()
        if inp.continue_as_new_after_events:
            return info.get_current_history_length() >= inp.continue_as_new_after_events
        return info.is_continue_as_new_suggested()

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
        now = workflow.now().timestamp()
        parked = [_command_dict(c) for c in [*self._queued, *self._parked]]
        for deadline, timer in self._timers.values():
            parked.append(_command_dict(StartTimer(timer_id=timer.timer_id, seconds=max(deadline - now, 0.0),
                                                   step_run_id=timer.step_run_id)))
        resume = {"state": snapshot.snapshot(self.engine), "parked": parked,
                  "cancel_reason": self._cancel_reason, "cascade": self._cascade}
        assert self._input is not None
        workflow.continue_as_new(dataclasses.replace(self._input, resume=resume))

    def _busy(self) -> bool:
        return any(not handle.done() for handle in self._activities.values())

    def _resume(self, playbook: Playbook, graph: StepGraph, resume: dict[str, Any]) -> None:
        self._state = snapshot.restore(playbook, resume["state"], graph)
        self._cancel_reason = resume.get("cancel_reason")
        self._cascade = resume.get("cascade", True)
        for data in resume.get("parked") or []:
            self._execute(_command_from(data))
        if self.engine.yield_requested:
            self._feed(Proceed(now=_now()))  # the previous run ended before its Proceed

    def _output(self) -> RunOutput:
        state = self.engine
        return RunOutput(execution_id=state.execution_id, state=state.status, result=state.result,
                         ctx=state.ctx, steps=state.steps, started_at=state.started_at,
                         ended_at=state.ended_at, terminal_event=state.terminal_event,
                         event_count=state.log.seq)

    async def _flush_events(self) -> None:
        """Hand new events to the event store, in order, in batches, as they appear."""
        failures = 0
        log = self.engine.log
        while True:
            await workflow.wait_condition(lambda: self._flushed_seq < log.seq)
            if self._batched_flush():
                await self._gather_events(log)
            batch = log.since(self._flushed_seq, MAX_EVENT_BACKLOG if self._bounded_backlog() else EVENT_BATCH)
            try:
                await workflow.execute_local_activity(  # (its argument is not in history)
                    PERSIST_EVENTS_ACTIVITY, LocalOnlyList(batch), start_to_close_timeout=timedelta(seconds=30),
                    summary=persist_summary(batch),
                    retry_policy=RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=200)))
            except ValueError as err:  # the worker does not register the activity
                self._unregistered(err)
                return
            except ActivityError as err:
                failures += 1
                workflow.logger.warning("event store write failed (%s); retrying", err.cause or err)
                if failures >= 5:
                    workflow.logger.error("event store unavailable: events stay readable live only")
                    self._persist = False
                    return
                await workflow.sleep(timedelta(seconds=min(2 ** failures, 30)))
                continue
            failures = 0
            self._flushed_seq = batch[-1]["seq"]
            self._next_flush_at = workflow.now() + FLUSH_INTERVAL
            log.forget(self._flushed_seq - EVENTS_KEPT_IN_MEMORY)

    def _started_with(self, behaviour: str) -> bool:
        """The execution's input lists this shell behaviour (``engine/behaviours.py``)."""
        return self._input is not None and behaviour in (self._input.behaviours or ())

    def _bounded_backlog(self) -> bool:
        return self._persist and self._started_with(behaviours.BOUNDED_EVENT_BACKLOG)

    def _batched_flush(self) -> bool:
        """Events go to the store in batches: said by the input of executions started since
        ``behaviours.BATCHED_EVENT_FLUSH`` (no history event), else by the patch marker that
        executions recorded before it carry."""
        return self._started_with(behaviours.BATCHED_EVENT_FLUSH) or workflow.patched(PATCH_BATCHED_EVENT_FLUSH)

    async def _gather_events(self, log: EventLog) -> None:
        """Wait for a full batch, the close of the run, or an activation FLUSH_INTERVAL after
        the last write or the start (before ``behaviours.DEFERRED_FIRST_FLUSH``, the first
        batch went at once, in the first workflow task).

        Checked on activations, with no timer: a timer would add history events to every run.
        """
        await workflow.wait_condition(
            lambda: self._closing or log.seq - self._flushed_seq >= EVENT_BATCH
            or workflow.now() >= self._next_flush_at)

    async def _drain(self, flusher: asyncio.Future[None] | None) -> None:
        """Before closing: every event is in the store."""
        self._closing = True
        if flusher is None or not self._persist:
            return
        # Bounded without a timer: the flusher gives up (``_persist = False``) after
        # repeated store failures, which also ends this wait.
        await workflow.wait_condition(
            lambda: self._flushed_seq >= self.engine.log.seq or not self._persist)
        flusher.cancel()

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
        self._show_progress()

    def _execute(self, command: Command) -> None:
        if isinstance(command, RunTask | StartTimer) and self._draining:
            self._parked.append(command)  # started by the next run (continue-as-new)
        elif isinstance(command, RunTask):
            if len(self._activities) >= self._max_pending():
                self._queued.append(command)  # Temporal allows 2,000 pending per execution
                return
            child = command.kind in WORKFLOW_KINDS  # `playbook`: a child workflow (tool_kinds/)
            runner = self._run_child if child else self._run_task
            if child:
                self._children.add(command.task_run_id)
            self._activities[command.task_run_id] = asyncio.ensure_future(runner(command))
        elif isinstance(command, CancelTasks):
            for task_run_id in command.task_run_ids:
                self._cancel_task(task_run_id)
        elif isinstance(command, Yield):
            asyncio.ensure_future(self._proceed_later())
        elif isinstance(command, StartTimer):
            self._timers[command.timer_id] = (workflow.now().timestamp() + command.seconds, command)
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
            asyncio.ensure_future(self._report_soon(parked[0], _cancelled("task cancelled")))
            return
        handle = self._activities.get(task_run_id)
        if handle is not None and not handle.done():
            handle.cancel()

    async def _report_soon(self, cmd: RunTask, result: TaskResult) -> None:
        self._report(cmd, result)  # on the next turn of the loop: not inside the current _feed

    async def _run_task(self, cmd: RunTask) -> None:
        inp = self._input
        assert inp is not None
        timeout = cmd.timeout or 300.0
        try:
            if cmd.spec.get("local") is True:
                result = await _run_local(cmd, inp, timeout)
            else:
                raw: dict[str, Any] = await workflow.execute_activity(
                    RUN_TASK_ACTIVITY, cmd,
                    activity_id=cmd.task_run_id,
                    start_to_close_timeout=timedelta(seconds=timeout + 30),
                    heartbeat_timeout=timedelta(seconds=max(inp.heartbeat_timeout_s, 1.0)),
                    retry_policy=RetryPolicy(
                        initial_interval=timedelta(seconds=1),
                        maximum_attempts=cmd.max_attempts + inp.infra_attempts - 1,
                        non_retryable_error_types=[INTERNAL_ERROR],
                    ),
                    summary=f"{cmd.step} / {cmd.task} ({cmd.kind})",
                )
                result = TaskResult.from_dict(raw)
        except FailureError as err:  # a local activity's failure may arrive unwrapped
            result = self._failed_activity(err)
        except asyncio.CancelledError:
            result = _cancelled("task cancelled")
        except ValueError as err:  # the worker does not register the fast path's activity
            self._unregistered(err)
            return
        finally:
            self._release(cmd.task_run_id)
        self._report(cmd, result)

    def _unregistered(self, err: ValueError) -> None:
        """A local activity this worker does not register (the SDK raises in the workflow):
        end the execution with a clear error instead of failing its workflow task forever,
        which would leave it RUNNING with a line in the worker's log as the only sign.
        Any other ValueError is not this: it goes on as before."""
        if "is not registered on this worker" not in str(err):
            raise err
        self._persist = False
        self._fatal = (f"this worker cannot run playbooks: {err}. Register everything "
                       "noetl_temporal.registration() returns, or use build_worker (docs/deployment.md)")

    def _report(self, cmd: RunTask, result: TaskResult) -> None:
        if not self.engine.finished:  # late results after the end change nothing
            self._feed(TaskFinished(task_run_id=cmd.task_run_id, now=_now(), outcome=result.outcome.to_dict(),
                                    attempts=[dict(a) for a in result.attempts], rule_index=result.rule_index,
                                    action=result.action, decided=result.decided, exhausted=result.exhausted))

    async def _run_child(self, cmd: RunTask) -> None:
        """``kind: playbook``: resolve the child, run it as a child workflow, inherit its status."""
        inp = self._input
        assert inp is not None
        path = cmd.config.get("path") or cmd.config.get("playbook")
        try:
            outcome = await self._child_outcome(cmd, inp, path)
        except asyncio.CancelledError:
            outcome = _error("cancelled", "sub-playbook cancelled")
        finally:
            self._release(cmd.task_run_id)
        # The engine decides on a sub-playbook's outcome (no activity evaluated its policy).
        self._report(cmd, TaskResult.undecided(outcome))

    async def _child_outcome(self, cmd: RunTask, inp: RunInput, path: Any) -> Outcome:
        if inp.depth + 1 > MAX_DEPTH:
            return _error("recursion", f"sub-playbook nesting deeper than {MAX_DEPTH} "
                          f"(at {path!r}): a playbook that calls itself without an exit?")
        try:
            resolved = await workflow.execute_activity(
                RESOLVE_PLAYBOOK_ACTIVITY, {"path": path, "version": cmd.config.get("version"),
                                            "parent_source": cmd.source},
                start_to_close_timeout=timedelta(seconds=60),
                retry_policy=RetryPolicy(maximum_attempts=3, non_retryable_error_types=[
                    "PlaybookNotFound", "PlaybookInvalid"]))
        except ActivityError as err:
            return _error("playbook", str(getattr(err.cause, "message", None) or err.cause or err))
        child_id = self._child_id(cmd, resolved["playbook"])
        child_input = RunInput(execution_id=child_id, playbook=resolved["playbook"],
                               payload=child_payload(cmd.config), source=resolved["source"],
                               parent_execution_id=inp.execution_id, infra_attempts=inp.infra_attempts,
                               heartbeat_timeout_s=inp.heartbeat_timeout_s,
                               persist_events=inp.persist_events, depth=inp.depth + 1,
                               behaviours=list(self.engine.behaviours))
        try:
            output: dict[str, Any] = await workflow.execute_child_workflow(
                WORKFLOW_NAME, child_input, id=child_id, task_queue=workflow.info().task_queue,
                cancellation_type=ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
                # We cancel children ourselves (cancel, fail_fast, timeouts), so that a
                # cancel with cascade=False can leave them running after the parent closes.
                parent_close_policy=ParentClosePolicy.ABANDON,
                **self._child_labels(cmd, resolved, path))
        except ChildWorkflowError as err:
            failed = output_in(err.cause)   # a FAILED child closes Failed with its output
            if failed is None:
                return _child_error(path, err)
            output = failed
        child = RunOutput.from_dict(output)
        result = child_result(output, cmd.config.get("return_step"))
        meta = {"child_execution_id": child_id, "child_state": child.state.value,
                "child_version": resolved.get("version")}
        if child.state == ExecutionStatus.COMPLETED:
            return Outcome.ok(result, **meta)
        reason = child.reason or child.state.value
        return Outcome.failed(ErrorInfo(kind="playbook", message=f"sub-playbook {path!r} ended "
                                        f"{child.state.value}: {reason}"), result=result, **meta)

    def _child_id(self, cmd: RunTask, child_playbook: dict[str, Any]) -> str:
        inp = self._input
        assert inp is not None
        if workflow.patched(PATCH_READABLE_CHILD_IDS):
            name, _ = labels.playbook_label(child_playbook)
            return child_execution_id(inp.execution_id, cmd.task_run_id, name)
        return f"{inp.execution_id}/{cmd.task_run_id}"   # histories recorded before the patch

    def _child_labels(self, cmd: RunTask, resolved: dict[str, Any], path: Any) -> dict[str, Any]:
        """The child's summary, details, memo and (when the parent has them) search attributes."""
        inp = self._input
        assert inp is not None
        child, source = resolved["playbook"], resolved.get("source")
        out: dict[str, Any] = {
            "static_summary": f"sub-playbook {path} for {cmd.step}/{cmd.task}",
            "static_details": labels.details(child, source=source, version=resolved.get("version"),
                                             parent=inp.execution_id),
            "memo": labels.memo(child, source)}
        if _has_attribute(workflow.info().typed_search_attributes, PLAYBOOK_NAME):  # all of ours are registered
            out["search_attributes"] = labels.search_attributes(child, source, parent=inp.execution_id)
        return out

    def _failed_activity(self, err: FailureError) -> TaskResult:
        cause = err.cause if isinstance(err, ActivityError) else err
        if isinstance(cause, CancelledError):
            return _cancelled("task cancelled")
        if isinstance(cause, ApplicationError) and cause.type == POLICY_RETRY:
            return _retries_exhausted(cause)
        # Temporal's own limits (start-to-close, heartbeat) end an attempt with its TimeoutError.
        kind = "timeout" if isinstance(cause, TemporalTimeoutError) else "activity"
        message = str(getattr(cause, "message", None) or cause or err)
        if isinstance(cause, ApplicationError) and cause.type:
            message = f"{cause.type}: {message}"
        return TaskResult.undecided(_error(kind, message))

    async def _proceed_later(self) -> None:
        """The engine used up one input's work budget: go on in a later activation (and
        every few yields in a later workflow task, ``pacing.ends_task``)."""
        self._yields += 1
        try:
            if self._started_with(behaviours.PACED_WORKFLOW_TASKS) and ends_task(self._yields):
                await workflow.execute_activity(YIELD_ACTIVITY, start_to_close_timeout=TASK_BREAK,
                                                summary="noetl: continue inline work")
            else:
                await workflow.execute_local_activity(YIELD_ACTIVITY, start_to_close_timeout=timedelta(seconds=30),
                                                      summary="noetl: continue inline work")
        except ValueError as err:  # the worker does not register the activity
            self._unregistered(err)
            return
        if self._bounded_backlog():
            # Inline work makes events faster than the store takes them: let the writes catch
            # up, or the workflow holds the whole log (the flusher gives up, ``_persist``
            # turns False, after repeated store failures, which also ends this wait).
            log = self.engine.log
            await workflow.wait_condition(
                lambda: not self._persist or log.seq - self._flushed_seq < MAX_EVENT_BACKLOG)
        if not self.engine.finished:
            self._feed(Proceed(now=_now()))

    async def _timer(self, cmd: StartTimer) -> None:
        await workflow.sleep(timedelta(seconds=cmd.seconds), summary=cmd.timer_id)
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

    @workflow.query(name="status")
    def status(self) -> dict[str, Any]:
        state = self._state
        if state is None:
            return {"state": "PENDING", "current_step": None, "started_at": None, "ended_at": None,
                    "terminal_event": None, "paused": False}
        return {"state": state.status.value, "current_step": progress.current_step(state),
                "started_at": state.started_at, "ended_at": state.ended_at,
                "terminal_event": state.terminal_event, "paused": state.paused}

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


async def _run_local(cmd: RunTask, inp: RunInput, timeout: float) -> TaskResult:
    """The fast path (``spec.local: true``): the task as a local activity, run by this
    worker without a round trip through the server's activity queue.

    A local activity cannot heartbeat, so policy retries are driven from here: each
    attempt is one local activity told its attempt number and the earlier records; a
    ``PolicyRetry`` ends it (not retried by Temporal) and the next attempt starts after
    the rule's delay on a durable timer. Temporal retries only infrastructure failures
    (a timeout, a lost worker), up to ``infra_attempts``, repeating the same attempt.
    A worker crash re-runs the attempt in flight: its result is recorded only when the
    workflow task completes.
    """
    attempt, history = 1, list[dict[str, Any]]()
    while True:
        try:
            raw: dict[str, Any] = await workflow.execute_local_activity(
                RUN_TASK_LOCAL_ACTIVITY, args=[local_run_task(cmd), {"attempt": attempt, "history": history}],
                activity_id=f"{cmd.task_run_id}/{attempt}",
                start_to_close_timeout=timedelta(seconds=timeout + 30),
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=inp.infra_attempts,
                                         non_retryable_error_types=[INTERNAL_ERROR, POLICY_RETRY]),
                summary=f"{cmd.step} / {cmd.task} ({cmd.kind}, local)")
            return TaskResult.from_dict(raw)
        except (ActivityError, ApplicationError) as err:
            retry = _policy_retry(err)
            if retry is None:
                raise
            history = list(retry.details[0])
            attempt = int(history[-1]["attempt"]) + 1
            delay = float(history[-1].get("next_delay_s") or 0)
            if delay > 0:
                await workflow.sleep(timedelta(seconds=delay), summary=f"retry {cmd.step}/{cmd.task}")


def _chain(err: BaseException | None) -> list[BaseException]:
    out: list[BaseException] = []
    while err is not None and len(out) < 10:
        out.append(err)
        err = getattr(err, "cause", None) or err.__cause__
    return out


def _policy_retry(err: BaseException) -> ApplicationError | None:
    """The ``PolicyRetry`` in a local activity's failure (wrapped or not), with its records."""
    return next((e for e in _chain(err) if isinstance(e, ApplicationError) and e.type == POLICY_RETRY
                 and e.details and isinstance(e.details[0], list)), None)


def _child_error(path: Any, err: ChildWorkflowError) -> Outcome:
    """A child workflow that closed without a playbook output: cancelled, or an engine error."""
    if isinstance(err.cause, CancelledError):
        return _error("cancelled", f"sub-playbook {path!r} was cancelled")
    cause = getattr(err.cause, "message", None) or str(err.cause or err)
    return _error("playbook", f"sub-playbook {path!r} failed: {cause}")


def _error(kind: str, message: str) -> Outcome:
    """A failure found here, not by a tool (never retryable: no activity is left to retry)."""
    return Outcome.failed(ErrorInfo(kind=kind, message=message))


def _cancelled(message: str) -> TaskResult:
    return TaskResult.undecided(_error("cancelled", message))


def _retries_exhausted(cause: ApplicationError) -> TaskResult:
    """Retries ran out on Temporal's side (RetryPolicy cap) while the policy still asked
    for more: the last attempt's error is the task's error."""
    details = cause.details[0] if cause.details else None
    attempts: list[dict[str, Any]] = list(details) if isinstance(details, list) else []
    last = attempts[-1] if attempts else {}
    error = (ErrorInfo.from_dict(last["error"]) if last.get("error") else
             # written without a ``code`` key, as this error always was
             ErrorInfo(kind="retries_exhausted", message=str(cause.message),
                       keys=("kind", "retryable", "message")))
    return TaskResult(outcome=Outcome.failed(error, attempt=last.get("attempt")), attempts=tuple(attempts),
                      rule_index=last.get("rule_index"), action="fail", exhausted=True)


def _command_dict(command: RunTask | StartTimer) -> dict[str, Any]:
    return {"type": type(command).__name__, "fields": dataclasses.asdict(command)}


def _command_from(data: dict[str, Any]) -> RunTask | StartTimer:
    kinds: dict[str, type[RunTask] | type[StartTimer]] = {"RunTask": RunTask, "StartTimer": StartTimer}
    return kinds[data["type"]](**data["fields"])


def _has_attribute(attributes: TypedSearchAttributes, key: SearchAttributeKey[Any]) -> bool:
    """``key in attributes`` (same name and type), spelled out: typeshed sees the
    collection's items (pairs), not its keys."""
    return any(pair.key == key for pair in attributes)
