"""Engine behaviour changes that would replay differently, each switched on per execution.

A workflow replays its history through the engine; a fix that changes which commands or
events the engine gives for the same inputs would break the replay of executions started
before it. So each such change has a name here, and an execution runs with the names its
*input* lists: ``start_execution`` (CLI, API, runner) puts :data:`CURRENT` in the workflow
input, a sub-playbook inherits its parent's, and an input without the list (recorded before
the list existed, or built by hand) gets none, which is the behaviour of before. The input is
the first event of the history, so a replay always sees the same list, and it costs no
history event (a ``workflow.patched`` marker costs two per execution: the marker and the
``TemporalChangeVersion`` search attribute). The engine keeps the list in its state (and
snapshot), so continue-as-new keeps it too.
"""

from __future__ import annotations

__all__ = ["LOOP_FAIL_FAST_FAILS_STEP", "BATCHED_EVENT_FLUSH", "DEFERRED_FIRST_FLUSH", "BOUNDED_EVENT_BACKLOG",
           "FAILED_PLAYBOOK_FAILS_WORKFLOW", "STEP_TIMEOUT_BOUNDS_STEP", "PACED_WORKFLOW_TASKS",
           "BOUNDED_RUN_WORK", "NOETL_TEXT", "STORED_RESULT_FIELDS", "STORED_POLICY_FIELDS", "SETTLED_CLOSE", "SETTLED_USER_ACTIVITY", "REDRIVE", "REDRIVE_CHILDREN",
           "REDRIVE_LOOP_CHILDREN",
           "TASK_SIDE_RENDERS", "CURSOR_LOOPS", "STEP_ENVELOPE_DATA", "SKIPPED_STEP_STATUS", "FAST_RETRY_CONTROLS", "LOOP_STATS", "CURRENT", "KNOWN", "of_input", "unknown"]

#: A loop iteration failing under ``fail_fast`` stops the loop's other iterations and the
#: loop step *fails* (routing sees ``step.failed``; unhandled, fail_fast stops the run).
#: Before: the loop's step run was marked cancelled, so the step ended CANCELLED as a
#: handled failure and the execution could end COMPLETED.
LOOP_FAIL_FAST_FAILS_STEP = "loop-fail-fast-fails-step"

#: Not the engine's but the workflow shell's: events are persisted in batches, not after
#: every step. Before this name existed the shell asked ``workflow.patched`` (the
#: ``noetl-batched-event-flush`` marker), which cost every execution a marker and a
#: ``TemporalChangeVersion`` upsert; an input without the name still asks it, so histories
#: recorded either way replay. The engine ignores it.
BATCHED_EVENT_FLUSH = "batched-event-flush"

#: The workflow shell's too: the first batch of events is persisted like the others (when
#: 500 are waiting, on the first activation 2 s after the start, or at the close), not in
#: the first workflow task. A local activity there held back the first task's scheduling
#: by the store's write, and cost a short execution a second write and marker.
DEFERRED_FIRST_FLUSH = "deferred-first-flush"

#: The workflow shell's too: inline work (a noop loop, a noop chain) goes on only while
#: fewer than ``event_flush.MAX_EVENT_BACKLOG`` events wait for the event store, and a write
#: takes up to that many at once. Before, a 100,000-item noop loop produced events five
#: times faster than batches of 500 were written: the workflow held nearly all of them
#: (hundreds of MiB) until the loop ended.
BOUNDED_EVENT_BACKLOG = "bounded-event-backlog"

#: The workflow shell's: a playbook that ends FAILED closes its workflow as Temporal *Failed*
#: (an ``ApplicationError`` of type ``PlaybookFailed`` carrying the output,
#: ``conversion/playbook_result.py``), so Temporal's own status, UI, metrics and alerts see it.
#: Before: the workflow completed normally and only its output said FAILED.
FAILED_PLAYBOOK_FAILS_WORKFLOW = "failed-playbook-fails-workflow"

#: ``step.spec.timeout`` (NoETL 5.x) bounds the whole step run, as ``lifecycle.timeout_s``
#: does (a durable timer; the stricter of the two wins), and fails the step with a located
#: ``timeout`` error. Before: it was only the default attempt timeout of the step's tasks.
STEP_TIMEOUT_BOUNDS_STEP = "step-timeout-bounds-step"

#: The workflow shell's: every ``pacing.YIELDS_PER_TASK``-th (fourth) yield of inline work waits on
#: the pacing activity run as a normal activity, not a local one, which ends the workflow task. Before:
#: local activities never end the task, so a 10,000-step noop chain's first task ran 5-8 s
#: (``TMPRL1104``), ended only by the SDK's heartbeat at 80% of the task timeout. The engine
#: reads it too: an input's work budget is ``budget.PACED_WORK_BUDGET`` (250, was 500).
PACED_WORKFLOW_TASKS = "paced-workflow-tasks"

#: The workflow shell's: a run continues as new after a bounded amount of work too (yields of
#: inline work, events stored; ``workflow/run_length.py``), not only when its history is long.
#: Before: a 10,000-step noop chain was one run, so a query to it after it closed replayed all
#: its work (5-6 s), and a noop loop's worker kept every event-store write's batch (2.2 KiB an
#: item of native memory held by the SDK) until the loop ended. With it, a run's first yield
#: ends its workflow task too (``pacing.ends_task``), as that task also builds or restores.
BOUNDED_RUN_WORK = "bounded-run-work"

#: A value a template prints inside text (a shell command, a url, a SQL text, a ``set`` value
#: such as ``"n={{ n }}"``) is written as NoETL writes it: ``true``/``false``/``null``, a
#: list or mapping as JSON (``templates.text.py``). Before: Python's ``str()`` (``True``,
#: ``None``, ``{'a': 1}``), so NoETL's ``[ "{{ flag }}" = "true" ]`` took the other branch.
#: Activities print NoETL's text for every execution; this name keeps the workflow's own
#: renders (task configs, guards, ``set``, arc args) as they were for older executions.
NOETL_TEXT = "noetl-text"

#: A step result stored by reference keeps the fields the playbook's templates read
#: (``dsl/result_paths.py``: the engine sends them as ``result_spec.keep``), and templates see
#: them under the result's own paths (``engine/stored_results.py``), also an iteration's inside
#: a loop step's ``results`` (``{{ each.results[0].count }}``); a part it does not hold
#: fails the guard's step or the task that reads it (``ResultFieldUnavailable``). Before: a
#: stored result was its ref, so ``{{ start.count > 100 }}`` was a guard error read as "no
#: match" and ``{{ start.count }}`` rendered empty.
STORED_RESULT_FIELDS = "stored-result-fields"

#: The workflow shell's: a cancelled task's activity (a Temporal cancel, ``fail_fast``, a step
#: timeout) counts as ended only once its worker acknowledged the cancel (Temporal's
#: ``WAIT_CANCELLATION_COMPLETED``: the tool's heartbeat sees it and kills its process), so
#: a FAILED or CANCELED run closes with nothing pending. Before: the workflow closed at once
#: (``TRY_CANCEL``) and the closed run showed "Pending Activities 1" in cancel-requested state.
SETTLED_CLOSE = "settled-close"

#: The workflow shell's: ``settled-close`` for a user's own activity (``kind: activity``,
#: ``workflow/user_calls.py``): a cancelled call ends once the user's worker acknowledged the
#: cancel (``WAIT_CANCELLATION_COMPLETED``; a heartbeating activity sees it), so the run closes
#: with nothing pending. Before: the call resolved at once (``TRY_CANCEL``) and the run could
#: close while the user's activity still ran.
SETTLED_USER_ACTIVITY = "settled-user-activity"

#: A template in a tool task's settings that uses a task-only filter or test
#: (``dsl/template_ops.py``: ``urlize``, ``striptags``, ``wordwrap``, ``pprint``) is left
#: unrendered by the workflow, like a ``keychain`` or ``_attempt`` one (the names it reads go
#: to the activity as plain values), and the activity renders it: in its own process when the
#: filters' inputs are small enough to bound their cost before they run, else in a child
#: process under CPU and memory rlimits (``tools/task_renders.py``; docs/durability.md,
#: "Task-side renders"): a render bomb kills the child and fails the task, located. Before: the
#: workflow rendered it on the worker's main process, where one quadratic regex held the GIL
#: and froze every execution the worker served. Its ``RunTask`` carries the template, and a
#: render error fails the task in its activity rather than before it is scheduled.
TASK_SIDE_RENDERS = "task-side-renders"

#: ``loop.cursor`` runs (docs/semantics.md, "Cursor loops"): the engine fetches the loop's rows
#: a page at a time (the ``FetchPage`` command, its ``PageFetched`` input). Before: a playbook
#: with a cursor loop was refused by validation, so no history of before holds one; an
#: execution without the name that meets one fails the step with a located error instead.
CURSOR_LOOPS = "cursor-loops"

#: ``{{ step.data }}`` reads NoETL's step envelope ``data``: a step's mapping result's own
#: ``data`` key when it has one, else the result itself, and so below it for every mapping
#: (``engine/envelope_data.py``; NoETL's ``TaskResultProxy``); and a task list step's
#: ``{{ step.results.<task> }}``, its tasks' results by name, kept for steps a template reads it
#: of. Before: ``{{ load.data.x }}`` of a result without a ``data`` key, and ``step.results``,
#: were undefined (validation warned of the first, NTL339, now retired).
STEP_ENVELOPE_DATA = "step-envelope-data"

#: A step an operator skipped (``engine/skips.py``, docs/approvals.md) ends SKIPPED, not
#: COMPLETED: its record in the output says ``status: SKIPPED`` with ``skipped: {by, reason}``,
#: and its ``step.done`` says so in ``payload.meta.step_status`` and ``payload.skipped``. Its
#: arcs fire as before (as for a success). Before: it ended COMPLETED, and only the
#: ``step.skipped`` event before its ``step.done`` told it from a step whose tool succeeded.
SKIPPED_STEP_STATUS = "skipped-step-status"

#: The workflow shell's: a fast-path task's backoff (``spec.local``, the workflow's own retry
#: loop in ``workflow/task_runs.py``) is a wait an operator's ``retry_step`` update can end
#: (retry-now) or remeasure, and their attempts and delay replace the rule's
#: (``workflow/fast_retries.py``; docs/approvals.md). Before: the update refused fast-path
#: steps (Temporal's activity operations do not reach local activities). An accepted control
#: cancels the backoff's timer, which a worker that predates it would not replay; without
#: one, the history is what it was (the wait's timer, then the next attempt).
FAST_RETRY_CONTROLS = "fast-retry-controls"

#: A loop step's result carries NoETL's loop summary ``stats: {total, success, failed}``
#: (NoETL's ``ExecutionState.get_loop_aggregation``): ``total`` the iterations that ended,
#: ``failed`` those that failed, ``success`` the rest (``engine/loops.py``). Before: no
#: ``stats`` key, so ``{{ loop_step.stats.total }}`` was undefined.
LOOP_STATS = "loop-stats"

#: A task's ``set`` (its ``ctx.``/``iter.`` keys) and its policy's ``then.set`` read the task's
#: stored result through its kept fields (``{{ output.data.count }}``, as a routing guard
#: does), and a part the workflow does not hold (a 100 KB list over the 64 KiB kept) fails the
#: task with the located error (``ResultFieldUnavailable``; docs/tools.md, "Large results").
#: Before: they read the reference, so ``{{ output.data.rows }}`` rendered undefined (a
#: warning) and the next task quietly got ``None``.
STORED_POLICY_FIELDS = "stored-policy-fields"

#: what a new execution gets
CURRENT: tuple[str, ...] = (LOOP_FAIL_FAST_FAILS_STEP, BATCHED_EVENT_FLUSH, DEFERRED_FIRST_FLUSH,
                            BOUNDED_EVENT_BACKLOG, FAILED_PLAYBOOK_FAILS_WORKFLOW, STEP_TIMEOUT_BOUNDS_STEP,
                            PACED_WORKFLOW_TASKS, BOUNDED_RUN_WORK, NOETL_TEXT, STORED_RESULT_FIELDS,
                            SETTLED_CLOSE, SETTLED_USER_ACTIVITY, TASK_SIDE_RENDERS, CURSOR_LOOPS,
                            STEP_ENVELOPE_DATA, SKIPPED_STEP_STATUS,
                            FAST_RETRY_CONTROLS, LOOP_STATS, STORED_POLICY_FIELDS)


#: Listed only by a redrive's input (``client/redrive_start.py``, docs/operations.md), never by a
#: normal start, whose behaviour it does not change: the engine reuses the recorded results of
#: the input's ``redrive`` plan. Listed so that a worker that predates redrive refuses the
#: execution (``unknown``) instead of running it from the start: Temporal's data converter
#: drops the input's ``redrive`` field it does not know, silently.
REDRIVE = "redrive"

#: Listed, besides ``redrive``, by a redrive whose plan redrives failed sub-playbooks inside it
#: (the plan's ``children``, docs/operations.md): the workflow shell gives each such child its
#: old child's plan (``workflow/child_runs.py``). Listed so that a worker that knows ``redrive``
#: but not this refuses the execution instead of running those children whole.
REDRIVE_CHILDREN = "redrive-children"

#: Listed, besides ``redrive-children``, by a redrive whose plan (or a child plan in it)
#: redrives the failed child of a loop iteration (a key ``<step>:run:1:iter:<i>:task:<task>``,
#: ``engine/redrive.py``): the shell gives a rerun iteration's child its old child's plan when
#: the child's input is the same (``workflow/child_runs.py``). Listed so that a worker that
#: knows ``redrive-children`` but not this refuses the execution instead of running those
#: children whole.
REDRIVE_LOOP_CHILDREN = "redrive-loop-children"

#: every name this code understands (never remove one while executions may list it)
KNOWN: frozenset[str] = frozenset(CURRENT) | {REDRIVE, REDRIVE_CHILDREN, REDRIVE_LOOP_CHILDREN}


def unknown(names: list[str] | None) -> list[str]:
    """Names an input lists that this code does not know: a client newer than the worker.

    Running such an execution would replay the old behaviour where the history holds the
    new one, so the workflow refuses it (the workflow task fails and is retried, until a
    worker that knows the name takes it). So upgrade workers before the clients that start
    executions (API, CLI).
    """
    return sorted(set(names or ()) - KNOWN)


def of_input(names: list[str] | None) -> list[str]:
    """The behaviours an execution runs with, from its workflow input (``None``: none)."""
    return list(names or [])
