"""``kind: workflow`` (workflow/user_calls.py): a user's own Temporal workflow as a child, by type name."""

from .activity import ARGS, NAME, TASK_QUEUE
from .declaration import Setting, ToolKind

#: ``parent_close_policy`` values, Temporal's ``ParentClosePolicy`` names in lower case
PARENT_CLOSE_POLICIES = ("terminate", "abandon", "request_cancel")

WORKFLOW = ToolKind(
    kind="workflow",
    summary="runs one of your own Temporal workflows as a child workflow by type name and returns its result",
    settings=(
        NAME, TASK_QUEUE, ARGS,
        Setting("id", ("string",), "the child's workflow id; default `<name>-<hash of this execution and task run>`, "
                                   "the same for the same task run"),
        Setting("parent_close_policy", ("string",), "what Temporal does to the child when this playbook closes "
                                                    "first: `terminate` (default), `abandon` or `request_cancel`",
                choices=PARENT_CLOSE_POLICIES),
        Setting("execution_timeout", ("number",), "seconds the child may run in all; default the task's "
                                                  "`spec.timeout`, else unbounded", positive=True),
    ),
    required=(("name",), ("task_queue",)),
    runs_in="workflow",
)
