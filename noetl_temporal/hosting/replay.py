"""Replay stored workflow histories against the installed code, before workers are upgraded.

A history exported with ``temporal workflow show --output json`` (or
``WorkflowHistory.to_json()``) is replayed by the SDK's ``Replayer`` with the playbook
workflow as this version registers it. A worker runs it either unsandboxed (the default)
or in the sandbox (``NOETL_WORKFLOW_SANDBOX=1``), and the same history must replay under
whichever the upgraded workers use, so each history is replayed under both: a history
that only one of them replays is reported as failing, naming that runner.

Encrypted histories need the deployment's codec: pass the same ``data_converter`` the
workers use (``configured_data_converter("module:factory")``, the CLI's ``--codec``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory
from temporalio.converter import DataConverter
from temporalio.runtime import Runtime, TelemetryConfig
from temporalio.worker import Replayer

from ..conversion.converter import data_converter as layered_converter
from ..errors import ConfigError
from ..workflow.types import WORKFLOW_NAME
from .sandbox import sandbox_runner
from .variants import playbook_workflow

__all__ = ["ReplayResult", "replay_histories", "load_history"]

#: the runners a worker may run our workflow under, in the order they are tried
RUNNERS = (("unsandboxed", False), ("sandboxed", True))


@dataclass(frozen=True)
class ReplayResult:
    """One history's replay: ``error`` is None when it replayed under every runner."""

    path: str
    workflow_id: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def load_history(path: str | Path) -> WorkflowHistory:
    """The history in ``path``; a ConfigError naming the file (and where JSON broke) if it is not one."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the history file: {exc}",
                          fix="pass a file written by `temporal workflow show --output json`") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}",
                          fix="export the history with `temporal workflow show --workflow-id ID --output json "
                              "> FILE`") from None
    events = data.get("events") if isinstance(data, dict) else None
    if not isinstance(events, list) or not events:
        raise ConfigError(f"{path}: not a workflow history: no \"events\" list",
                          fix="export the history with `temporal workflow show --workflow-id ID --output json`")
    started = events[0].get("workflowExecutionStartedEventAttributes") if isinstance(events[0], dict) else None
    if not isinstance(started, dict):
        raise ConfigError(f"{path}: not a workflow history: its first event is not WorkflowExecutionStarted",
                          fix="export the whole history, from its first event")
    kind = (started.get("workflowType") or {}).get("name")
    if kind != WORKFLOW_NAME:
        raise ConfigError(f"{path}: a {kind!r} workflow, not a playbook ({WORKFLOW_NAME})",
                          fix="replay your own workflows with your own temporalio.worker.Replayer")
    try:
        return WorkflowHistory.from_json(str(started.get("workflowId") or Path(path).stem), data)
    except Exception as exc:  # protobuf's ParseError: a field that is not Temporal's
        raise ConfigError(f"{path}: not a Temporal workflow history: {exc}",
                          fix="export the history with `temporal workflow show --output json`") from None


async def replay_histories(paths: Iterable[str | Path], *,
                           data_converter: DataConverter | None = None) -> list[ReplayResult]:
    """Replay each history file against the installed playbook workflow, under both runners.

    Every file is read first, so a bad one raises ConfigError (naming it) before anything
    replays. ``data_converter``: the one your workers use, ``noetl_temporal.data_converter(your
    codec)`` (needed for encrypted histories); default: ours without a codec of yours.
    """
    histories = [(str(path), load_history(path)) for path in paths]
    converter = data_converter or layered_converter()
    # The core logs each failing workflow task as a warning on stdout; the result says it once.
    runtime = Runtime(telemetry=TelemetryConfig(logging=None))
    replayers = [(name, Replayer(workflows=[playbook_workflow(sandboxed=sandboxed, versioned=False)],
                                 workflow_runner=sandbox_runner(), data_converter=converter, runtime=runtime))
                 for name, sandboxed in RUNNERS]   # built once, each replays every history
    return [await _replay(path, history, converter, replayers) for path, history in histories]


async def _replay(path: str, history: WorkflowHistory, converter: DataConverter,
                  replayers: list[tuple[str, Replayer]]) -> ReplayResult:
    for name, replayer in replayers:
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        if result.replay_failure is not None:
            unread = await _unreadable_input(history, converter)
            return ReplayResult(path, history.workflow_id, f"{name}: {_explain(result.replay_failure, history)}"
                                + (f" ({unread})" if unread else ""))
    return ReplayResult(path, history.workflow_id)


#: where the core puts its own message inside the SDK's ``Failure { failure: Some(Failure { message: "..." ``
_CORE_MESSAGE = re.compile(r'message: "((?:[^"\\]|\\.)*)"')


def _explain(failure: Exception, history: WorkflowHistory) -> str:
    """The core's message (not the SDK's wrapping) and the recorded event it names."""
    text = " ".join(str(failure).split())
    core = _CORE_MESSAGE.search(text)
    message = core.group(1).replace('\\"', '"') if core else text
    event = _diverging_event(message, history)
    if event is not None:
        message += f" (at event {event.event_id}, {_event_type(event)})"
    return message


def _diverging_event(message: str, history: WorkflowHistory) -> HistoryEvent | None:
    """The recorded command event whose id the message quotes (the core names ids, not event numbers)."""
    quoted = set(re.findall(r"'([^']+)'", message))
    for event in history.events:
        ids = (event.activity_task_scheduled_event_attributes.activity_id,
               event.timer_started_event_attributes.timer_id,
               event.start_child_workflow_execution_initiated_event_attributes.workflow_id)
        if quoted.intersection(i for i in ids if i):
            return event
    return None


def _event_type(event: HistoryEvent) -> str:
    return EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")


async def _unreadable_input(history: WorkflowHistory, converter: DataConverter) -> str | None:
    """Why ``converter`` cannot read the recorded workflow input, said for the user (None: it can).

    Asked only after a failure: an encrypted history replayed without its codec fails as
    "Failed decoding arguments", which does not say that a codec is what is missing."""
    payloads = list(history.events[0].workflow_execution_started_event_attributes.input.payloads)
    try:
        await converter.decode(payloads)   # codec, then payload converter: the values
    except Exception:  # whatever the codec or converter raises: the input is unreadable here
        encodings = sorted({p.metadata.get("encoding", b"").decode(errors="replace") for p in payloads})
        return (f"its input is encoded as {', '.join(encodings)}, which this converter cannot read: pass the "
                "codec the workers use, --codec MODULE:FACTORY or $NOETL_CODEC")
    return None
