"""When a run hands its execution to a fresh run (continue-as-new).

Temporal suggests continuing as new once a run's *history* is long (``is_continue_as_new_suggested``,
about 4,000 events), or the caller gives a history length (``continue_as_new_after_events``). Two
costs grow with a run's *work*, and inline work (a noop chain or loop) does much of it in few
history events:

* **A rebuild replays the whole run.** A query to a closed workflow, a worker restart or a cache
  eviction runs every activation of the run again. A 10,000-step noop chain is one run of 80
  yields in under 600 history events, and a query to it after it closed took 5-6 s
  (``TMPRL1104``) on a lightly loaded machine, 10-30 s under load.
* **The SDK keeps every local activity's arguments for the run's life.** The event store's
  writes are local activities whose argument is the batch of events, so a noop loop's worker
  grew by about 2.2 KiB of native memory an item (about the JSON of its five events), given back
  only when the run left the worker: 80 MiB over a 30,000-item loop, 220 MiB over 100,000. With
  continue-as-new every 200 history events the same loop peaked at 39 MiB, released at each
  new run (``python -m benchmarks.loop_rss --continue-after-events 200``).

Executions started with ``behaviours.BOUNDED_RUN_WORK`` also continue as new after
``RUN_YIELDS_MAX`` yields of inline work or ``RUN_STORED_EVENTS_MAX`` events stored by the
run. Both are counted by the run, never timed, so a replay continues at the same point.
"""

from __future__ import annotations

__all__ = ["RUN_YIELDS_MAX", "RUN_STORED_EVENTS_MAX", "work_is_long"]

# A yield is one input's work budget (``engine/budget.py``: 250 units, 0.05-0.3 s on a quiet
# machine): 16 of them replay in about a second, four workflow tasks of paced work
# (``pacing.YIELDS_PER_TASK``). Fewer would make the snapshot's hand-over (it grows with the
# playbook and the loop's results) a bigger share of the run.
RUN_YIELDS_MAX = 16
# About 10 MiB of batches' JSON kept by the SDK for the run (0.5 KiB an event): a backstop for
# work that stores many events in few yields; a python loop's history reaches Temporal's
# suggestion first (about 700 activities, 3,500 events).
RUN_STORED_EVENTS_MAX = 20_000


def work_is_long(yields: int, stored_events: int) -> bool:
    """The run has done enough work that a fresh run should take over."""
    return yields >= RUN_YIELDS_MAX or stored_events >= RUN_STORED_EVENTS_MAX
