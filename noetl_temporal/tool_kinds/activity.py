"""``kind: activity`` (workflow/user_calls.py): a user's own Temporal activity, by type name."""

from .declaration import Setting, ToolKind

#: how a user's activity or workflow is named and given its arguments (shared with ``workflow``)
NAME = Setting("name", ("string",), "the registered type name (for an activity, `@activity.defn(name=...)` or "
                                    "the function's name)")
TASK_QUEUE = Setting("task_queue", ("string",), "the task queue a worker of yours polls for it")
ARGS = Setting("args", ("list", "mapping"), "a list: the positional arguments; a mapping: passed as the one "
                                            "argument; absent: called without arguments")

ACTIVITY = ToolKind(
    kind="activity",
    summary="calls one of your own Temporal activities by type name and returns its result",
    settings=(
        NAME, TASK_QUEUE, ARGS,
        Setting("start_to_close_timeout", ("number",), "seconds one attempt may take; default the task's "
                                                       "`spec.timeout`, else 300", positive=True),
        Setting("heartbeat_timeout", ("number",), "seconds between heartbeats before Temporal retries the "
                                                  "attempt; default none", positive=True),
    ),
    required=(("name",), ("task_queue",)),
    runs_in="workflow",
)
