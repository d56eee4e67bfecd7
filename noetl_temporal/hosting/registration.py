"""Everything a worker must register to run playbooks, in one value.

A playbook workflow calls five activities (two tool-task ones, sub-playbook resolution,
event persistence, activation pacing); a worker that registers the workflow and only some
of them runs steps and then waits forever for an activity nobody serves. So the pieces are
never handed out one by one: :func:`registration` returns all of them, and
:meth:`Registration.worker_options` merges them with the user's own ``Worker`` arguments
(their workflows, activities, interceptors and anything else), which is what
``build_worker`` does.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from temporalio.worker import Interceptor

from ..store.event_store import EventStore, open_event_store
from ..workflow.activities import ACTIVITIES
from ..workflow.metrics import MetricsInterceptor
from ..workflow.pacing import YIELD_ACTIVITY, yield_activation
from ..workflow.persistence import PERSIST_EVENTS_ACTIVITY, EventSink
from ..workflow.subplaybooks import RESOLVE_PLAYBOOK_ACTIVITY, resolve_playbook
from ..workflow.types import RUN_TASK_ACTIVITY, RUN_TASK_LOCAL_ACTIVITY
from .sandbox import sandbox_runner
from .variants import playbook_workflow

__all__ = ["Registration", "registration", "REQUIRED_ACTIVITIES", "SANDBOX_ENV", "sandbox_requested"]

#: set to 1/true/yes/on to run playbook workflows in the SDK's workflow sandbox
SANDBOX_ENV = "NOETL_WORKFLOW_SANDBOX"

#: the activity names a playbook workflow calls: a worker must serve every one
REQUIRED_ACTIVITIES = (RUN_TASK_ACTIVITY, RUN_TASK_LOCAL_ACTIVITY, RESOLVE_PLAYBOOK_ACTIVITY,
                       PERSIST_EVENTS_ACTIVITY, YIELD_ACTIVITY)


# perf: the SDK 1.35 sandbox entered per payload (16-29% of a worker's CPU), by running unsandboxed — benchmark: par_loop, many
def sandbox_requested(sandboxed: bool | None) -> bool:
    """``sandboxed``, or when None what ``$NOETL_WORKFLOW_SANDBOX`` says."""
    if sandboxed is None:
        return os.environ.get(SANDBOX_ENV, "").strip().lower() in ("1", "true", "yes", "on")  # deterministic: worker set-up, not workflow code
    return sandboxed


@dataclass(frozen=True)
class Registration:
    """What a worker registers for playbooks: pass ``worker_options(...)`` to ``Worker``."""

    activities: tuple[Callable[..., Any], ...]
    interceptors: tuple[Interceptor, ...]
    #: our workflow runs in the worker's sandboxed runner (``sandbox.sandbox_runner()`` by default)
    sandboxed: bool

    def workflows(self, *, versioned: bool = False) -> tuple[type, ...]:
        """Our workflow class for this worker: ``versioned`` workers (Worker Deployment
        Versioning on) get the one that declares its versioning behaviour (``variants``)."""
        return (playbook_workflow(sandboxed=self.sandboxed, versioned=versioned),)

    def worker_options(self, **user: Any) -> dict[str, Any]:
        """``Worker`` keyword arguments: ours merged with ``user``'s (any ``Worker`` argument).

        Workflows and activities are added to the user's, our interceptors go first; the
        user's ``workflow_runner`` is kept (our workflow only uses it when sandboxed)."""
        options = dict(user)
        deployment = user.get("deployment_config")
        versioned = bool(deployment is not None and deployment.use_worker_versioning)
        options["workflows"] = [*user.get("workflows", ()), *self.workflows(versioned=versioned)]
        options["activities"] = [*user.get("activities", ()), *self.activities]
        options["interceptors"] = [*self.interceptors, *user.get("interceptors", ())]
        if "workflow_runner" not in options:
            # The SDK's own default runner, plus our pure modules shared with the sandbox:
            # the user's workflows run in it as before, ours too when sandboxed.
            options["workflow_runner"] = sandbox_runner()
        return options


def registration(event_store: EventStore | None = None, *, sandboxed: bool | None = None) -> Registration:
    """Everything a playbook worker registers.

    ``event_store``: where the workflow's events go (default :func:`open_event_store`,
    the events of ``$NOETL_STORE`` or the embedded SQLite file). ``sandboxed``: run our workflow in
    the SDK's sandbox (default ``$NOETL_WORKFLOW_SANDBOX``); by default it runs unsandboxed
    on its own (``@workflow.defn(sandboxed=False)``), whatever runner the worker has.
    """
    sink = EventSink(event_store or open_event_store())
    return Registration(
        activities=(*ACTIVITIES, resolve_playbook, sink.persist_events, yield_activation),
        interceptors=(MetricsInterceptor(),),
        sandboxed=sandbox_requested(sandboxed))
