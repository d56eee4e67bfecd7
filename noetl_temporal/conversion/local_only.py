"""Values a workflow hands to a local activity of its own worker.

A local activity runs in the worker that runs the workflow, and history records only its
result (a marker), never its arguments. So the claim check, which moves large payloads
out of *history* into the payload store, has nothing to do for them: storing them would
only write a file that nothing reads again and nothing deletes (before, every batch of
500 events on its way to the event store and every large fast-path task did).

The workflow marks such arguments with a type from here; the project's payload converter
(``payloads.PayloadConverter``) encodes them as JSON under :data:`LOCAL_ONLY_ENCODING`,
which ``claimcheck.ClaimCheckCodec`` leaves inline. The marked types are plain subclasses
(a list, a ``RunTask``): under any other converter they encode exactly as before.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..engine.messages import RunTask

__all__ = ["LOCAL_ONLY_ENCODING", "LocalOnly", "LocalOnlyList", "LocalRunTask", "local_run_task"]

#: the payload encoding of a marked value (JSON, decoded like ``json/plain``)
LOCAL_ONLY_ENCODING = "json/noetl-local-only"


class LocalOnly:
    """Marker: this value is a local activity's argument and never enters history."""

    __slots__ = ()


class LocalOnlyList(LocalOnly, list[Any]):
    """A list argument of a local activity (a batch of events for the event store)."""

    __slots__ = ()


@dataclasses.dataclass
class LocalRunTask(LocalOnly, RunTask):
    """A ``RunTask`` for the fast path's local activity; the activity reads a ``RunTask``."""


_RUN_TASK_FIELDS = tuple(f.name for f in dataclasses.fields(RunTask))


def local_run_task(cmd: RunTask) -> LocalRunTask:
    return LocalRunTask(**{name: getattr(cmd, name) for name in _RUN_TASK_FIELDS})
