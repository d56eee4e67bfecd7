"""Re-record the replay fixtures: ``python -m tests.histories.record [NAME...]``.

Runs each playbook of ``PLAYBOOKS`` on a fresh dev server and writes its Temporal
history (``<name>.history.json``) and the event list the run produced
(``<name>.events.json``, or its digest ``<name>.events.sha256`` for the long logs of
``DIGESTED``). ``tests/hosting/test_replay.py`` replays the histories with
the current code and demands the identical event list: a change that alters what a
recorded execution does must be versioned, not slipped in.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from temporalio.worker import Worker

from noetl_temporal.client.devserver import EmbeddedTemporal
from noetl_temporal.client.end_to_end import run_with_client
from noetl_temporal.dsl import load_playbook
from noetl_temporal.engine import behaviours
from noetl_temporal.workflow.types import RunInput

from . import user_code

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PLAYBOOKS = {"hello": REPO / "examples" / "hello.yaml", "retry_loop": HERE / "retry_loop.yaml",
             # the same run before and after the `readable-child-ids` patch (workflow.py):
             # `subplaybook` was recorded by the code before it, `subplaybook_patched` after
             "subplaybook": HERE / "subplaybook.yaml", "subplaybook_patched": HERE / "subplaybook.yaml",
             # before and after the engine change `loop-fail-fast-fails-step` (engine/behaviours.py)
             "loop_fail_fast": HERE / "loop_fail_fast.yaml", "loop_fail_fast_patched": HERE / "loop_fail_fast.yaml",
             # before and after the shell change `bounded-event-backlog` (engine/behaviours.py)
             "noop_loop": HERE / "noop_loop.yaml", "noop_loop_patched": HERE / "noop_loop.yaml",
             # and after `paced-workflow-tasks` (`noop_loop_patched` is the before)
             "noop_loop_paced": HERE / "noop_loop.yaml",
             # and after `bounded-run-work`: its first run, which continues as new (run_length.py)
             "noop_loop_bounded": HERE / "noop_loop_bounded.yaml",
             # before and after the shell change `failed-playbook-fails-workflow`
             "failed_close": HERE / "failed_close.yaml", "failed_close_patched": HERE / "failed_close.yaml",
             # before and after the engine change `step-timeout-bounds-step`
             "step_timeout": HERE / "step_timeout.yaml", "step_timeout_patched": HERE / "step_timeout.yaml",
             # before and after the engine change `noetl-text` (templates/text.py)
             "noetl_text": HERE / "noetl_text.yaml", "noetl_text_patched": HERE / "noetl_text.yaml",
             # before and after the shell change `located-child-errors` (child_runs.py): the
             # before is recorded by the code before it (a worktree of that commit)
             "subplaybook_missing": HERE / "subplaybook_missing.yaml",
             "subplaybook_missing_patched": HERE / "subplaybook_missing.yaml",
             # before and after the engine change `stored-result-fields`
             "stored_fields": HERE / "stored_fields.yaml", "stored_fields_patched": HERE / "stored_fields.yaml",
             # before and after the shell change `settled-close` (task_runs.py)
             "settled_close": HERE / "settled_close.yaml", "settled_close_patched": HERE / "settled_close.yaml",
             # before and after the engine change `task-side-renders` (tools/task_renders.py)
             "task_renders": HERE / "task_renders.yaml", "task_renders_patched": HERE / "task_renders.yaml",
             # a user's own activity and workflow (`kind: activity`, `kind: workflow`), run by
             # a worker of the user's code (user_code.py) beside ours
             "user_calls": HERE / "user_calls.yaml",
             # before and after the shell change `settled-user-activity` (user_calls.py)
             "user_cancel": HERE / "user_cancel.yaml", "user_cancel_patched": HERE / "user_cancel.yaml",
             # a redrive (client/redrive_start.py): the history kept is the redrive's, not the failed run's
             "redrive": HERE / "redrive.yaml",
             # `kind: approve`: one answered by the `answer` update, one that times out
             "approval": HERE / "approval.yaml",
             # ... whose failed sub-playbook is redriven inside it (behaviour redrive-children)
             "redrive_children": HERE / "redrive_children.yaml",
             # the `retry_step` update: a policy change, then retry-now, of a task in its backoff
             "step_retry": HERE / "step_retry.yaml",
             # before and after the shell change `fast-retry-controls` (workflow/fast_retries.py):
             # the fast path's own retry loop, then the same with an operator's set-retry and retry-now
             "fast_retry": HERE / "fast_retry.yaml", "fast_retry_patched": HERE / "fast_retry.yaml",
             # before and after the engine change `cursor-loops` (engine/loops.py)
             "cursor_loop": HERE / "cursor_loop.yaml", "cursor_loop_patched": HERE / "cursor_loop.yaml",
             # before and after the engine change `step-envelope-data` (engine/envelope_data.py)
             "step_data": HERE / "step_data.yaml", "step_data_patched": HERE / "step_data.yaml",
             # before and after the engine change `skipped-step-status` (engine/skips.py): a step
             # skipped by the `skip_step` update ends COMPLETED, then SKIPPED
             "skip": HERE / "skip.yaml", "skip_patched": HERE / "skip.yaml",
             # before and after the engine change `loop-stats` (engine/loops.py)
             "loop_stats": HERE / "loop_stats.yaml", "loop_stats_patched": HERE / "loop_stats.yaml",
             # before and after the engine change `stored-policy-fields` (engine/pipeline.py)
             "stored_policy": HERE / "stored_policy.yaml", "stored_policy_patched": HERE / "stored_policy.yaml"}

# Recorded with the user's worker of user_code.py running (its results are in the history).
USER_CODE = {"user_calls", "user_cancel", "user_cancel_patched"}
# Recorded as the redrive of a run that failed first (``_redriven``).
REDRIVEN = {"redrive", "redrive_children"}
# Answered while recording: name -> the `answer` updates sent, each once its step waits.
ANSWERS = {"approval": ({"step": "sign_off", "values": {"approved": True, "env": "prod"}, "by": "ops",
                         "reason": "recorded"},)}
# Skips sent while recording: name -> the `skip_step` update, sent once its step waits.
SKIPS = {name: {"step": "ask", "reason": "recorded", "result": {"go": True}, "by": "ops"}
         for name in ("skip", "skip_patched")}
# Retry controls sent while recording, once the step's task waits to retry (client/step_retries.py).
RETRIES = {"step_retry": "fetch"}
# ... on the fast path: more attempts than the rule, then retry-now of each wait (fast_retries.py).
FAST_RETRIES = {"fast_retry_patched": "fetch"}
# Recorded as the code before a change ran: the workflow input does not list these behaviours.
BEFORE = {"loop_fail_fast": ("loop-fail-fast-fails-step",),
          "noop_loop": ("bounded-event-backlog", "paced-workflow-tasks"), "noop_loop_patched": ("paced-workflow-tasks",),
          "failed_close": ("failed-playbook-fails-workflow",), "step_timeout": ("step-timeout-bounds-step",),
          "noetl_text": ("noetl-text",),
          "stored_fields": ("stored-result-fields",), "settled_close": ("settled-close",),
          "user_cancel": ("settled-user-activity",), "task_renders": ("task-side-renders",),
          "cursor_loop": ("cursor-loops",), "step_data": ("step-envelope-data",),
          "skip": ("skipped-step-status",),
          "fast_retry": ("fast-retry-controls",), "loop_stats": ("loop-stats",),
          "stored_policy": ("stored-policy-fields",)}


# Logs of thousands of events (megabytes): kept as a digest of the canonical JSON instead.
DIGESTED = {"noop_loop", "noop_loop_patched", "noop_loop_paced", "noop_loop_bounded"}
# Executions that continue as new: their first run is kept (and the events it made).
FIRST_RUN = {"noop_loop_bounded"}


def events_digest(events: list) -> str:
    """sha256 of the event list as canonical JSON (what ``test_replay`` compares)."""
    return hashlib.sha256(json.dumps(events, sort_keys=True, default=str).encode()).hexdigest()


async def record(names: list[str]) -> None:
    # A fresh store (its events.db, payloads, results): one kept from an earlier recording
    # already holds these execution ids, and its old events would be written next to the new history.
    os.environ["NOETL_STORE"] = tempfile.mkdtemp(prefix="noetl-record-")
    current = behaviours.CURRENT
    async with EmbeddedTemporal() as env:
        for name, path in PLAYBOOKS.items():
            if names and name not in names:
                continue
            playbook = load_playbook(path).playbook
            behaviours.CURRENT = tuple(b for b in current if b not in BEFORE.get(name, ()))
            async with contextlib.AsyncExitStack() as stack:
                if name in USER_CODE:
                    await stack.enter_async_context(Worker(env.client, task_queue=user_code.USER_QUEUE,
                                                           activities=user_code.ACTIVITIES,
                                                           workflows=user_code.WORKFLOWS))
                if name in REDRIVEN:
                    report = await _redriven(env.client, playbook, name, path)
                else:
                    answering = asyncio.ensure_future(
                        _retry(env.client, f"replay-{name}", RETRIES[name]) if name in RETRIES else
                        _fast_retry(env.client, f"replay-{name}", FAST_RETRIES[name]) if name in FAST_RETRIES else
                        _answer(env.client, f"replay-{name}", (SKIPS[name],), "skip_step") if name in SKIPS else
                        _answer(env.client, f"replay-{name}", ANSWERS.get(name, ())))
                    report = await run_with_client(env.client, playbook, task_queue=f"record-{uuid.uuid4().hex[:8]}",
                                                   execution_id=f"replay-{name}", source=str(path))
                    await answering
            history = await env.client.get_workflow_handle(report.execution_id).fetch_history()
            events = report.events
            if name in FIRST_RUN:
                history, events = await _first_run(env.client, history, events)
            (HERE / f"{name}.history.json").write_text(history.to_json())
            if name in DIGESTED:
                (HERE / f"{name}.events.sha256").write_text(events_digest(events) + "\n")
            else:
                (HERE / f"{name}.events.json").write_text(json.dumps(events, indent=1, sort_keys=True))
            print(f"{name}: {report.state}, {len(events)} events")


async def _answer(client: Any, execution_id: str, answers: tuple[dict[str, Any], ...],
                  update: str = "answer") -> None:
    """Send each answer (or skip: ``update``) once its step waits (the status query names it)."""
    for answer in answers:
        while True:
            try:
                status = await client.get_workflow_handle(execution_id).query("status")
            except Exception:   # not started yet
                status = {}
            if any(w["step"] == answer["step"] for w in status.get("waiting") or ()):
                break
            await asyncio.sleep(0.1)
        await client.get_workflow_handle(execution_id).execute_update(update, answer)


async def _retry(client: Any, execution_id: str, step: str) -> None:
    """Once ``step``'s task waits to retry: change its policy, then retry it now."""
    from temporalio.api.common.v1 import WorkflowExecution
    from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest

    from noetl_temporal.client.step_retries import retry_now, set_retry

    while True:
        try:
            desc = await client.workflow_service.describe_workflow_execution(DescribeWorkflowExecutionRequest(
                namespace=client.namespace, execution=WorkflowExecution(workflow_id=execution_id)))
        except Exception:   # not started yet
            desc = None
        if desc is not None and any(p.attempt == 2 for p in desc.pending_activities):
            break
        await asyncio.sleep(0.1)
    await set_retry(client, execution_id, step, attempts=4, delay=60, reason="recorded", by="ops")
    await retry_now(client, execution_id, step, reason="recorded", by="ops")


async def _fast_retry(client: Any, execution_id: str, step: str) -> None:
    """A fast-path step: allow it 3 attempts once it runs, then retry each of its waits now."""
    from noetl_temporal.client.step_retries import retry_now, set_retry
    from noetl_temporal.errors import NoetlError

    async def until_accepted(control: Any, **kwargs: Any) -> None:
        while True:
            try:
                await control(client, execution_id, step, reason="recorded", by="ops", **kwargs)
                return
            except NoetlError:   # not started yet, not running yet, not waiting yet
                await asyncio.sleep(0.1)

    await until_accepted(set_retry, attempts=3)
    for _ in range(2):
        await until_accepted(retry_now)


async def _redriven(client: Any, playbook: Any, name: str, path: Path) -> Any:
    """Run the playbook, which fails while ``<dir>/flag`` is missing; create the flag; redrive
    it and wait: the redrive's report (the history kept is the redrive's)."""
    from types import SimpleNamespace

    from noetl_temporal.client.redrive_start import redrive
    from noetl_temporal.conversion.playbook_result import workflow_output
    from noetl_temporal.hosting.worker import build_worker
    from noetl_temporal.store.event_store import open_event_store

    scratch = Path(tempfile.mkdtemp(prefix="noetl-record-redrive-"))
    queue = f"record-{uuid.uuid4().hex[:8]}"
    failed = await run_with_client(client, playbook, task_queue=queue, execution_id=f"replay-{name}-failed",
                                   source=str(path), payload={"dir": str(scratch)})
    assert failed.state == "FAILED", failed.state
    (scratch / "flag").write_text("fixed")
    store = open_event_store()
    async with build_worker(client, task_queue=queue, event_store=store):
        started = await redrive(client, failed.execution_id, task_queue=queue, event_store=store)
        output = await workflow_output(client.get_workflow_handle(started["execution_id"]))
    assert output["state"] == "COMPLETED", output
    return SimpleNamespace(execution_id=started["execution_id"], state=output["state"],
                           events=store.read(started["execution_id"], limit=10_000))


async def _first_run(client: Any, last: Any, events: list) -> tuple[Any, list]:
    """The execution's first run's history, and the events it made: up to the ``seq`` its
    hand-over to the next run carried (the snapshot's log ``base``)."""
    first_id = last.events[0].workflow_execution_started_event_attributes.first_execution_run_id
    history = await client.get_workflow_handle(last.workflow_id, run_id=first_id).fetch_history()
    handed = history.events[-1].workflow_execution_continued_as_new_event_attributes
    [resume] = await client.data_converter.decode(handed.input.payloads, [RunInput])
    base = resume.resume["state"]["log"]["base"]
    return history, [e for e in events if e["seq"] <= base]


if __name__ == "__main__":
    asyncio.run(record(sys.argv[1:]))
