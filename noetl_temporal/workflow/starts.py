"""What starting one execution sends Temporal: the typed input and the start options.

One builder for every way an execution starts, so they all look alike in the Temporal UI
and run the same engine: a client's start (``client.start_execution``: CLI, API, runner)
and a user's workflow running a playbook as its child (``noetl_temporal.workflow``). The
input carries every current engine behaviour (an input without them runs the behaviours
of before the list existed, see ``engine/behaviours.py``); the options carry the summary,
details, memo, search attributes and execution timeout.

Pure (no I/O, no clock, no randomness: the caller brings the id), so workflow code may call it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio.common import SearchAttributePair, TypedSearchAttributes

from ..engine import behaviours
from ..engine.redrive import has_loop_children
from . import labels
from .search_attributes import REDRIVEN_FROM, has_attribute
from .types import RunInput

__all__ = ["ExecutionStart", "execution_start", "definition_timeout_s"]


@dataclass
class ExecutionStart:
    """``input`` for the workflow, ``options`` for ``start_workflow``/``execute_child_workflow``
    (``id`` and the labels; no task queue: the caller knows where it runs)."""

    input: RunInput
    options: dict[str, Any] = field(default_factory=dict)

    def without_search_attributes(self) -> dict[str, Any]:
        """The options for a namespace that has not registered our search attributes."""
        return {key: value for key, value in self.options.items() if key != "search_attributes"}

    def without_redrive_attribute(self) -> dict[str, Any] | None:
        """A redrive's options without ``NoetlRedrivenFrom``, for a namespace set up before it
        existed (``search_attributes.py``); None when the options do not set it."""
        attributes = self.options.get("search_attributes")
        if attributes is None or not has_attribute(attributes, REDRIVEN_FROM):
            return None
        kept = TypedSearchAttributes([pair for pair in attributes if pair.key != REDRIVEN_FROM])
        return {**self.options, "search_attributes": kept}


def definition_timeout_s(definition: dict[str, Any]) -> float | None:
    """The playbook's own ``executor.spec.timeout_s`` (a definition leaves defaults out)."""
    spec = (definition.get("executor") or {}).get("spec") or {}
    value = spec.get("timeout_s")
    return float(value) if isinstance(value, int | float) and value > 0 else None


def execution_start(definition: dict[str, Any], *, execution_id: str, payload: dict[str, Any] | None = None,
                    source: str | None = None, search_attributes: bool = False,
                    timeout_s: float | None = None, digest: str | None = None, version: int | None = None,
                    api_url: str | None = None, parent: str | None = None, summary: str | None = None,
                    heartbeat_timeout_s: float = 30.0, continue_as_new_after_events: int = 0,
                    persist_events: bool = True, redrive: dict[str, Any] | None = None,
                    test_clock: bool = False) -> ExecutionStart:
    """The input and start options of one execution of ``definition`` (normalized,
    ``playbook_definition``). ``timeout_s``: the execution timeout, default the playbook's
    own; ``parent``: the starting workflow's id, shown in the details and search attributes;
    ``api_url``: a link to the execution in the API, shown in the details; ``redrive``: the plan
    of a redrive (``engine/redrive.py``), its old execution named in the memo and details;
    ``test_clock``: ``noetl-temporal test --temporal``'s clock (workflow/test_clock.py)."""
    digest = digest or labels.definition_hash(definition)
    inp = RunInput(execution_id=execution_id, playbook=definition, payload=payload or {}, source=source,
                   parent_execution_id=parent,
                   heartbeat_timeout_s=heartbeat_timeout_s,
                   continue_as_new_after_events=continue_as_new_after_events,
                   behaviours=[*behaviours.CURRENT, *([behaviours.REDRIVE] if redrive is not None else []),
                               *([behaviours.REDRIVE_CHILDREN] if (redrive or {}).get("children") else []),
                               *([behaviours.REDRIVE_LOOP_CHILDREN] if has_loop_children(redrive) else [])],
                   persist_events=persist_events, redrive=redrive, test_clock=test_clock)
    timeout = timeout_s or definition_timeout_s(definition)
    options: dict[str, Any] = {
        "id": execution_id,
        "static_summary": summary or labels.summary(definition, source),
        "static_details": labels.details(definition, source=source, version=version, api_url=api_url,
                                         parent=parent, digest=digest),
        "memo": labels.memo(definition, source, digest=digest, version=version),
        "execution_timeout": timedelta(seconds=timeout) if timeout else None,
    }
    if redrive is not None:
        old = str(redrive.get("from_execution_id"))
        options["memo"] = {**options["memo"], "noetl.redriven_from": old}
        options["static_details"] = f"{options['static_details']}\n\n**redrive of** `{old}`"
    if search_attributes:
        options["search_attributes"] = labels.search_attributes(definition, source, parent=parent, digest=digest,
                                                                version=version)
        if redrive is not None:   # set at start only: a redrive names its old execution for good
            options["search_attributes"] = TypedSearchAttributes(
                [*options["search_attributes"], SearchAttributePair(REDRIVEN_FROM, str(redrive.get("from_execution_id")))])
    return ExecutionStart(input=inp, options=options)
