"""Recorded histories replay with the current code to the identical event list.

Re-record with ``python -m tests.histories.record`` only for a deliberate, versioned change.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.workflow import ActivityCancellationType

from noetl_temporal.engine import behaviours, machine
from noetl_temporal.hosting.variants import SandboxedPlaybookWorkflow
from noetl_temporal.hosting.worker import sandbox_runner
from noetl_temporal.workflow import task_runs, user_calls
from noetl_temporal.workflow.event_flush import EventFlusher
from noetl_temporal.workflow.patches import PATCH_LOCATED_CHILD_ERRORS, PATCH_READABLE_CHILD_IDS
from noetl_temporal.workflow.playbook_workflow import PlaybookWorkflow
from tests.histories.record import events_digest

HISTORIES = Path(__file__).resolve().parents[1] / "histories"


def _workflow(sandboxed: bool) -> type:
    """Our workflow chooses its runner itself: the sandboxed twin runs in the replayer's sandbox."""
    return SandboxedPlaybookWorkflow if sandboxed else PlaybookWorkflow


@pytest.mark.parametrize("name", ["hello", "retry_loop", "subplaybook", "subplaybook_patched",
                                  "loop_fail_fast", "loop_fail_fast_patched", "noop_loop", "noop_loop_patched",
                                  "noop_loop_paced", "noop_loop_bounded",
                                  "failed_close", "failed_close_patched", "step_timeout", "step_timeout_patched",
                                  "noetl_text", "noetl_text_patched",
                                  "subplaybook_missing", "subplaybook_missing_patched",
                                  "stored_fields", "stored_fields_patched", "user_calls",
                                  "settled_close", "settled_close_patched", "user_cancel", "user_cancel_patched", "redrive",
                                  "approval", "task_renders", "task_renders_patched",
                                  "redrive_children", "step_retry", "cursor_loop", "cursor_loop_patched",
                                  "step_data", "step_data_patched",
                                  "skip", "skip_patched",
                                  "fast_retry", "fast_retry_patched", "loop_stats", "loop_stats_patched",
                                  "stored_policy", "stored_policy_patched"])
@pytest.mark.parametrize("sandboxed", [False, True], ids=["unsandboxed", "sandboxed"])
async def test_recorded_history_replays_to_identical_events(name, sandboxed, monkeypatch):
    """Under both runners: workers run unsandboxed by default, sandboxed on request."""
    history = WorkflowHistory.from_json(f"replay-{name}", (HISTORIES / f"{name}.history.json").read_text())
    digest = HISTORIES / f"{name}.events.sha256"
    expected = digest.read_text().strip() if digest.exists() else \
        json.loads((HISTORIES / f"{name}.events.json").read_text())
    emitted: list[dict] = []
    in_sandbox = set()
    real_step = machine.step

    def spy(state, event):  # the engine module is shared with the sandbox, so this sees the replay
        in_sandbox.add(workflow.unsafe.in_sandbox())
        after = state.log.seq
        out = real_step(state, event)
        # What this input emitted (a long log is forgotten, once stored, as the replay goes)
        emitted.extend(state.log.since(after, state.log.seq - after))
        return out

    monkeypatch.setattr(machine, "step", spy)
    # The replayer's runner is a sandbox either way: our workflow chooses per workflow.
    replayer = Replayer(workflows=[_workflow(sandboxed)], workflow_runner=sandbox_runner())
    result = await replayer.replay_workflow(history)
    assert result.replay_failure is None
    assert in_sandbox == {sandboxed}
    replayed = json.loads(json.dumps(emitted, default=str))
    if digest.exists():   # a long log, recorded as its digest (tests/histories/record.py)
        replayed = events_digest(replayed)
    assert replayed == expected  # worker times too: they replay from recorded activity results


@pytest.mark.parametrize("name,forced", [("subplaybook", True), ("subplaybook_patched", False)])
async def test_the_patch_guard_is_what_keeps_each_history_replaying(name, forced, monkeypatch):
    """Safe upgrades: ``subplaybook`` was recorded before child ids changed, ``subplaybook_patched``
    after. Each replays above (the guard picks the branch it was recorded with); taking the
    other branch (the new code unguarded, or the code before the change) is a nondeterminism
    error, so the ``workflow.patched`` guard is what makes the upgrade safe."""

    history = WorkflowHistory.from_json(f"replay-{name}", (HISTORIES / f"{name}.history.json").read_text())
    real = workflow.patched
    monkeypatch.setattr(workflow, "patched",
                        lambda patch_id: forced if patch_id == PATCH_READABLE_CHILD_IDS else real(patch_id))
    replayer = Replayer(workflows=[_workflow(True)], workflow_runner=sandbox_runner())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is not None
    failure = str(result.replay_failure)
    # old history + new branch: the child id differs; new history + old code: an unknown patch marker
    assert "Nondeterminism" in failure
    assert ("Child workflow id" if forced else "patch marker encountered for change readable-child-ids") in failure


async def _replayed_failure_messages(name: str) -> list[str]:
    history = WorkflowHistory.from_json(f"replay-{name}", (HISTORIES / f"{name}.history.json").read_text())
    emitted: list[dict] = []
    real_step = machine.step

    def spy(state, event):
        after = state.log.seq
        out = real_step(state, event)
        emitted.extend(state.log.since(after, state.log.seq - after))
        return out

    machine.step = spy
    try:
        result = await Replayer(workflows=[_workflow(False)], workflow_runner=sandbox_runner()).replay_workflow(history)
    finally:
        machine.step = real_step
    assert result.replay_failure is None
    return [e["payload"]["outcome"]["error"]["message"] for e in emitted if e["event_type"] == "task.failed"]


@pytest.mark.parametrize("name,forced", [("subplaybook_missing", True), ("subplaybook_missing_patched", None)])
async def test_a_missing_childs_located_error_follows_the_patch(name, forced, monkeypatch):
    """``subplaybook_missing`` was recorded before a missing child's error named its task
    (``call.tool.child.path: ...``), ``subplaybook_missing_patched`` after: each replays its
    own message, and the old history would emit the new one without the guard."""
    recorded = await _replayed_failure_messages(name)
    assert recorded and all(m.startswith("call.tool.child.path: ") == (forced is None) for m in recorded)
    if forced:
        real = workflow.patched
        monkeypatch.setattr(workflow, "patched",
                            lambda patch_id: True if patch_id == PATCH_LOCATED_CHILD_ERRORS else real(patch_id))
        unguarded = await _replayed_failure_messages(name)
        assert all(m.startswith("call.tool.child.path: ") for m in unguarded), unguarded


@pytest.mark.parametrize("sandboxed", [False, True], ids=["unsandboxed", "sandboxed"])
async def test_live_run_replays_to_the_same_events(run_yaml, temporal, sandboxed):
    report = await run_yaml("""
    workload: {items: [a, b]}
    workflow:
      - step: each
        loop: {in: "{{ workload.items }}", iterator: x, spec: {mode: parallel}}
        tool: {kind: python, code: "result = x * 2", input: {x: "{{ x }}"}}
        next: {arcs: [{step: done, when: "{{ event.name == 'loop.done' }}"}]}
      - step: done
        tool: {kind: shell, cmd: "echo {{ each.results | join(',') }}"}
    """)
    history = await temporal.client.get_workflow_handle(report.execution_id).fetch_history()
    states = []
    real_step = machine.step

    def spy(state, event):
        states.append(state)
        return real_step(state, event)

    machine.step = spy
    try:
        replayer = Replayer(workflows=[_workflow(sandboxed)], workflow_runner=sandbox_runner())
        result = await replayer.replay_workflow(history)
    finally:
        machine.step = real_step
    assert result.replay_failure is None
    assert json.loads(json.dumps(states[-1].log.events, default=str)) == report.events


@pytest.mark.parametrize("name,forced", [("loop_fail_fast", True), ("loop_fail_fast_patched", False)])
async def test_engine_behaviour_changes_follow_the_recorded_input(name, forced, monkeypatch):
    """``loop-fail-fast-fails-step`` changed what the engine does when a loop iteration fails
    under fail_fast. ``loop_fail_fast`` was recorded without it (its workflow input lists no
    behaviours) and ends COMPLETED, ``loop_fail_fast_patched`` with it and ends FAILED; each
    replays to its own events above, because the engine takes the list from the recorded
    input. Running the other behaviour on either history does not reproduce it."""
    from noetl_temporal.engine import behaviours

    expected = json.loads((HISTORIES / f"{name}.events.json").read_text())
    finished = [e for e in expected if e["event_type"] == "playbook.finished"]
    assert finished[-1]["payload"]["meta"]["status"] == ("COMPLETED" if forced else "FAILED")
    history = WorkflowHistory.from_json(f"replay-{name}", (HISTORIES / f"{name}.history.json").read_text())
    monkeypatch.setattr(behaviours, "of_input",
                        lambda names: [behaviours.LOOP_FAIL_FAST_FAILS_STEP] if forced else [])
    states = []
    real_step = machine.step
    monkeypatch.setattr(machine, "step", lambda state, event: states.append(state) or real_step(state, event))
    replayer = Replayer(workflows=[_workflow(True)], workflow_runner=sandbox_runner())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    replayed = json.loads(json.dumps(states[-1].log.events, default=str)) if states else None
    assert result.replay_failure is not None or replayed != expected


@pytest.mark.parametrize("name,forced", [("noop_loop", True), ("noop_loop_patched", False)])
async def test_the_backlog_behaviour_is_what_keeps_each_history_replaying(name, forced, monkeypatch):
    """``noop_loop`` was recorded before ``bounded-event-backlog``, ``noop_loop_patched``
    after; each replays above because its input says which it ran with. Replaying either
    with the other choice is a nondeterminism error (the writes to the event store differ)."""
    history = WorkflowHistory.from_json(f"replay-{name}", (HISTORIES / f"{name}.history.json").read_text())
    monkeypatch.setattr(EventFlusher, "bounded_backlog", lambda self: forced)
    replayer = Replayer(workflows=[PlaybookWorkflow], workflow_runner=sandbox_runner())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is not None and "Nondeterminism" in str(result.replay_failure)


@pytest.mark.parametrize("name,forced", [("noop_loop_patched", True), ("noop_loop_paced", False)])
async def test_the_pacing_behaviour_is_what_keeps_each_history_replaying(name, forced, monkeypatch):
    """``noop_loop_patched`` was recorded before ``paced-workflow-tasks`` (every yield a local
    activity), ``noop_loop_paced`` after (every fourth a normal activity, ending the workflow task);
    replaying either with the other choice is a nondeterminism error."""
    history = WorkflowHistory.from_json(f"replay-{name}", (HISTORIES / f"{name}.history.json").read_text())
    failure = await _replay_with_behaviour(history, behaviours.PACED_WORKFLOW_TASKS, forced, monkeypatch)
    assert failure is not None and "Nondeterminism" in str(failure)


async def _replay_with_behaviour(history: WorkflowHistory, behaviour: str, forced: bool, monkeypatch):
    """Replay ``history`` with the shell behaviour forced on or off; the replay's failure, if any."""
    real = PlaybookWorkflow._started_with
    monkeypatch.setattr(PlaybookWorkflow, "_started_with",
                        lambda self, b: forced if b == behaviour else real(self, b))
    replayer = Replayer(workflows=[PlaybookWorkflow], workflow_runner=sandbox_runner())
    return (await replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure


async def test_the_run_work_bound_is_what_keeps_its_history_replaying(monkeypatch):
    """``noop_loop_bounded`` is the first run of a noop loop started with ``bounded-run-work``:
    it continued as new after ``run_length.RUN_YIELDS_MAX`` yields, with a short history.
    Replaying it with the bound off is a nondeterminism error (the run goes on where the
    history says it handed over)."""
    history = WorkflowHistory.from_json("replay-noop_loop_bounded",
                                        (HISTORIES / "noop_loop_bounded.history.json").read_text())
    assert history.events[-1].HasField("workflow_execution_continued_as_new_event_attributes")
    assert len(history.events) < 100
    failure = await _replay_with_behaviour(history, behaviours.BOUNDED_RUN_WORK, False, monkeypatch)
    assert failure is not None and "Nondeterminism" in str(failure)


@pytest.mark.parametrize("name,recorded_failed", [("failed_close", False), ("failed_close_patched", True)])
async def test_a_failed_playbook_closes_the_way_its_input_says(name, recorded_failed, monkeypatch):
    """``failed-playbook-fails-workflow``: ``failed_close`` was recorded before it (the parent
    and its failing child complete, their output says FAILED), ``failed_close_patched`` after
    (both close Temporal Failed with ``PlaybookFailed``). Temporal's replay does not compare
    the closing command, so a wrong close would not show as a nondeterminism error: the shell
    must take the choice from the recorded input, which is what this checks (replaying each
    history raises ``PlaybookFailed`` only where it was recorded; the same history with the
    behaviour switched the other way would close the other way)."""
    from noetl_temporal.engine import behaviours
    from noetl_temporal.workflow import playbook_workflow as shell

    history = WorkflowHistory.from_json(f"replay-{name}", (HISTORIES / f"{name}.history.json").read_text())
    closes = {e.WhichOneof("attributes") for e in history.events}
    assert ("workflow_execution_failed_event_attributes" if recorded_failed
            else "workflow_execution_completed_event_attributes") in closes
    raised: list[str] = []
    real_failed = shell.playbook_failed
    monkeypatch.setattr(shell, "playbook_failed", lambda output: raised.append(output.state.value) or real_failed(output))
    replayer = Replayer(workflows=[PlaybookWorkflow], workflow_runner=sandbox_runner())
    assert (await replayer.replay_workflow(history)).replay_failure is None
    assert raised == (["FAILED"] if recorded_failed else [])

    raised.clear()   # the other behaviour on the same history: the other close
    real = PlaybookWorkflow._started_with
    monkeypatch.setattr(PlaybookWorkflow, "_started_with", lambda self, b: (not recorded_failed) if
                        b == behaviours.FAILED_PLAYBOOK_FAILS_WORKFLOW else real(self, b))
    await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert raised == ([] if recorded_failed else ["FAILED"])


@pytest.mark.parametrize("name,recorded_route", [("noetl_text", "python_text"), ("noetl_text_patched", "noetl_text")])
async def test_printed_values_follow_the_recorded_input(name, recorded_route, monkeypatch):
    """``noetl-text``: ``noetl_text`` was recorded before it (the workflow printed ``True``,
    ``None`` and a Python repr into a ``set`` value, so the guard took ``python_text``),
    ``noetl_text_patched`` after (``true``, ``null``, JSON: ``noetl_text``). Each replays
    above; replaying either with the other choice is a nondeterminism error (the other
    branch's activity), so the behaviour in the recorded input is what keeps it replaying."""
    expected = json.loads((HISTORIES / f"{name}.events.json").read_text())
    assert [e["entity_id"] for e in expected if e["event_type"] == "step.started"] == ["start", recorded_route]
    history = WorkflowHistory.from_json(f"replay-{name}", (HISTORIES / f"{name}.history.json").read_text())
    recorded_new = recorded_route == "noetl_text"
    monkeypatch.setattr(behaviours, "of_input", lambda names: [] if recorded_new else [behaviours.NOETL_TEXT])
    replayer = Replayer(workflows=[_workflow(False)], workflow_runner=sandbox_runner())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is not None and "Nondeterminism" in str(result.replay_failure)


@pytest.mark.parametrize("name,forced", [("stored_fields", True), ("stored_fields_patched", False)])
async def test_stored_result_fields_follow_the_recorded_input(name, forced, monkeypatch):
    """``stored-result-fields``: ``stored_fields`` was recorded without it (the guard on a stored
    result's ``count`` could not read it: the fallback arc ``few``), ``stored_fields_patched``
    with it (``many``). Each replays to its own events above. Switched off, the new history
    routes the other way; switched on, the old one still replays: its recorded results carry
    no kept fields (the engine asked for none), so they read as they did."""
    from noetl_temporal.engine import behaviours

    expected = json.loads((HISTORIES / f"{name}.events.json").read_text())
    started = [e["entity_id"] for e in expected if e["event_type"] == "step.started"]
    assert started == ["start", "few" if forced else "many"]
    history = WorkflowHistory.from_json(f"replay-{name}", (HISTORIES / f"{name}.history.json").read_text())
    switch = behaviours.STORED_RESULT_FIELDS
    monkeypatch.setattr(behaviours, "of_input", lambda names: [*(n for n in names or () if n != switch),
                                                               *([switch] if forced else [])])
    states = []
    real_step = machine.step
    monkeypatch.setattr(machine, "step", lambda state, event: states.append(state) or real_step(state, event))
    replayer = Replayer(workflows=[_workflow(True)], workflow_runner=sandbox_runner())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    replayed = json.loads(json.dumps(states[-1].log.events, default=str)) if states else None
    if forced:
        assert result.replay_failure is None and replayed == expected
    else:
        assert result.replay_failure is not None or replayed != expected


async def test_stored_policy_fields_is_what_the_patched_history_needs(monkeypatch):
    """``stored-policy-fields``: ``stored_policy`` was recorded without it (the policy's
    ``then.set`` read the reference: ``ctx.count`` empty), ``stored_policy_patched`` with it
    (``5``). Each replays to its own events above; the patched one, with the behaviour
    switched off, does not: the switch is what the new history needs."""
    from noetl_temporal.engine import behaviours

    shown = [e["payload"]["outcome"]["result"] for name in ("stored_policy", "stored_policy_patched")
             for e in json.loads((HISTORIES / f"{name}.events.json").read_text())
             if e["event_type"] == "step.done" and e["entity_id"] == "show"]
    assert shown == [{"count": None}, {"count": 5}]
    expected = json.loads((HISTORIES / "stored_policy_patched.events.json").read_text())
    history = WorkflowHistory.from_json("replay-stored-policy",
                                        (HISTORIES / "stored_policy_patched.history.json").read_text())
    switch = behaviours.STORED_POLICY_FIELDS
    monkeypatch.setattr(behaviours, "of_input", lambda names: [n for n in names or () if n != switch])
    states = []
    real_step = machine.step
    monkeypatch.setattr(machine, "step", lambda state, event: states.append(state) or real_step(state, event))
    replayer = Replayer(workflows=[_workflow(True)], workflow_runner=sandbox_runner())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    replayed = json.loads(json.dumps(states[-1].log.events, default=str)) if states else None
    assert result.replay_failure is not None or replayed != expected


async def test_the_settled_close_is_what_keeps_the_old_history_replaying(monkeypatch):
    """``settled_close`` was recorded before ``settled-close``: fail_fast's cancel of the
    sleeping sibling resolved at once and the run closed with it pending. ``settled_close_patched``
    was recorded after (the run waited for ``ActivityTaskCanceled``); each replays above because
    its input says which. Waiting for the cancellation on the old history is a nondeterminism
    error, which is why the wait is a behaviour of new executions only."""
    history = WorkflowHistory.from_json("replay-settled_close", (HISTORIES / "settled_close.history.json").read_text())
    monkeypatch.setattr(task_runs, "_cancellation", lambda inp: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED)
    replayer = Replayer(workflows=[PlaybookWorkflow], workflow_runner=sandbox_runner())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is not None and "Nondeterminism" in str(result.replay_failure)


async def test_the_settled_user_activity_is_what_keeps_the_old_history_replaying(monkeypatch):
    """``user_cancel`` was recorded before ``settled-user-activity``: fail_fast's cancel of the
    user's heartbeating activity resolved at once. ``user_cancel_patched`` after (the run waited
    for ``ActivityTaskCanceled``); each replays above because its input says which. Waiting on
    the old history is a nondeterminism error, so the wait is a behaviour of new executions only."""
    history = WorkflowHistory.from_json("replay-user_cancel", (HISTORIES / "user_cancel.history.json").read_text())
    real = user_calls.activity_outcome
    monkeypatch.setattr(user_calls, "activity_outcome", lambda cmd, settled=False: real(cmd, settled=True))
    replayer = Replayer(workflows=[PlaybookWorkflow], workflow_runner=sandbox_runner())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is not None and "Nondeterminism" in str(result.replay_failure)


@pytest.mark.parametrize("name,forced", [("task_renders", True), ("task_renders_patched", False)])
async def test_task_side_renders_follow_the_recorded_input(name, forced, monkeypatch):
    """``task-side-renders``: ``task_renders`` was recorded without it (the workflow rendered the
    task-only ``wordwrap`` and failed ``wrap``'s task before scheduling it), ``task_renders_patched``
    with it (the activity renders it in a render child and fails it there). Each replays to its
    own events above; replaying either with the behaviour switched the other way is a
    nondeterminism error (an activity scheduled where none was, or none where one was)."""
    expected = json.loads((HISTORIES / f"{name}.events.json").read_text())
    attempts = [e for e in expected if e["event_type"] == "task.attempt.failed"]
    assert bool(attempts) is not forced
    history = WorkflowHistory.from_json(f"replay-{name}", (HISTORIES / f"{name}.history.json").read_text())
    switch = behaviours.TASK_SIDE_RENDERS
    monkeypatch.setattr(behaviours, "of_input", lambda names: [*(n for n in names or () if n != switch),
                                                               *([switch] if forced else [])])
    replayer = Replayer(workflows=[_workflow(False)], workflow_runner=sandbox_runner())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is not None and "Nondeterminism" in str(result.replay_failure)


@pytest.mark.parametrize("name,forced", [("cursor_loop", True), ("cursor_loop_patched", False)])
async def test_cursor_loops_follow_the_recorded_input(name, forced, monkeypatch):
    """``cursor-loops``: ``cursor_loop`` was recorded without it (the loop step failed before
    reading a page), ``cursor_loop_patched`` with it (its pages fetched by activities). Each
    replays to its own events above; replaying either with the behaviour switched the other
    way is a nondeterminism error (page activities scheduled where none were, or none where
    they were)."""
    expected = json.loads((HISTORIES / f"{name}.events.json").read_text())
    done = [e for e in expected if e["event_type"] == "loop.done"]
    assert bool(done) is not forced
    history = WorkflowHistory.from_json(f"replay-{name}", (HISTORIES / f"{name}.history.json").read_text())
    switch = behaviours.CURSOR_LOOPS
    monkeypatch.setattr(behaviours, "of_input", lambda names: [*(n for n in names or () if n != switch),
                                                               *([switch] if forced else [])])
    replayer = Replayer(workflows=[_workflow(False)], workflow_runner=sandbox_runner())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is not None and "Nondeterminism" in str(result.replay_failure)


@pytest.mark.parametrize("name,recorded_route", [("step_data", "bare"), ("step_data_patched", "enveloped")])
async def test_step_envelope_data_follows_the_recorded_input(name, recorded_route, monkeypatch):
    """``step-envelope-data``: ``step_data`` was recorded without it (``{{ load.data.m }}`` and
    ``{{ load.results.first.n }}`` were undefined: the guard took ``bare``), ``step_data_patched``
    with it (NoETL's envelope ``data`` is the result, ``results`` the task list's: ``enveloped``). Each replays to its own events above; replaying either with
    the behaviour switched the other way is a nondeterminism error (the other branch's activity)."""
    expected = json.loads((HISTORIES / f"{name}.events.json").read_text())
    assert [e["entity_id"] for e in expected if e["event_type"] == "step.started"] == ["load", "own", recorded_route]
    history = WorkflowHistory.from_json(f"replay-{name}", (HISTORIES / f"{name}.history.json").read_text())
    switch = behaviours.STEP_ENVELOPE_DATA
    forced = recorded_route == "bare"
    monkeypatch.setattr(behaviours, "of_input", lambda names: [*(n for n in names or () if n != switch),
                                                               *([switch] if forced else [])])
    replayer = Replayer(workflows=[_workflow(False)], workflow_runner=sandbox_runner())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is not None and "Nondeterminism" in str(result.replay_failure)


@pytest.mark.parametrize("name,recorded_route", [("loop_stats", "bare"), ("loop_stats_patched", "counted")])
async def test_loop_stats_follow_the_recorded_input(name, recorded_route, monkeypatch):
    """``loop-stats``: ``loop_stats`` was recorded without it (the loop result had no ``stats``:
    the guard took ``bare``), ``loop_stats_patched`` with it (NoETL's summary ``stats.total == 3``:
    ``counted``). Each replays to its own events above; replaying either with the behaviour
    switched the other way is a nondeterminism error (the other branch's activity)."""
    expected = json.loads((HISTORIES / f"{name}.events.json").read_text())
    assert [e["entity_id"] for e in expected if e["event_type"] == "step.started"] == ["each", recorded_route]
    history = WorkflowHistory.from_json(f"replay-{name}", (HISTORIES / f"{name}.history.json").read_text())
    switch = behaviours.LOOP_STATS
    forced = recorded_route == "bare"
    monkeypatch.setattr(behaviours, "of_input", lambda names: [*(n for n in names or () if n != switch),
                                                               *([switch] if forced else [])])
    replayer = Replayer(workflows=[_workflow(False)], workflow_runner=sandbox_runner())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is not None and "Nondeterminism" in str(result.replay_failure)


async def test_the_fast_retry_behaviour_is_what_keeps_a_controlled_history_replaying(monkeypatch):
    """``fast_retry_patched`` holds operator controls of a fast-path task (a retry-now cancels
    the backoff's timer): replayed by code that does not steer the fast path's loop (the
    execution lacking ``fast-retry-controls``), its history no longer matches."""
    history = WorkflowHistory.from_json("replay-fast_retry_patched",
                                        (HISTORIES / "fast_retry_patched.history.json").read_text())
    monkeypatch.setattr(behaviours, "FAST_RETRY_CONTROLS", "not-this-one")
    replayer = Replayer(workflows=[PlaybookWorkflow], workflow_runner=sandbox_runner())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is not None and "Nondeterminism" in str(result.replay_failure)
