"""NoETL's step envelope ``data``: ``{{ step.data }}`` reads as NoETL reads it.

NoETL's templates see a step's result through a proxy (``TaskResultProxy`` in NoETL's
``noetl/core/dsl/render.py``) whose attribute ``data`` is the result's own ``data`` key
when it has one, and else the result itself; every mapping read below it is proxied the
same way (a list is not, nor what is read from it). So NoETL's playbooks write
``{{ load.data.command_0.rows }}`` and ``{{ load.command_0.rows }}`` for the same rows, and a
result ``{"data": 1}`` reads ``{{ step.data }}`` as ``1``, its own key. A step with a task
list is stored by NoETL as its last task's result with ``results`` beside it, each task's
result by name, so ``{{ fetch_page.results.check.has_more }}``; here the step's result is
its last task's, and ``results`` is given the same way, where the result has no such key of
its own (kept only for steps whose ``results`` a template reads: :func:`keep_task_results`).

:class:`EnvelopeLayer` gives step results that alias in the template scope: a mapping
result is seen as an :class:`EnvelopeView`, which reads like the dict it wraps, adds
``data`` where the dict has none, and renders or leaves a template as that dict (a
:class:`~noetl_temporal.templates.HeldPart`). ``'data' in step`` and ``step.get('data')``
stay the dict's own, as NoETL's proxy answers them.

Only executions listing ``behaviours.STEP_ENVELOPE_DATA`` see it (``common.template_context``);
before, ``{{ step.data }}`` of a result without that key was undefined. docs/semantics.md,
"NoETL's step envelope".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..dsl.models import Step
from ..templates import HeldPart
from .state import ExecutionState, PipelineRun

__all__ = ["EnvelopeView", "EnvelopeLayer", "ALIAS", "RESULTS", "keep_task_results"]

#: the attribute NoETL's proxy answers with the result itself
ALIAS = "data"
#: the key of NoETL's task sequence result holding each task's result by name
RESULTS = "results"


def _viewed(value: Any, results: dict[str, Any] | None = None) -> Any:
    return EnvelopeView(value, results) if type(value) is dict else value


class EnvelopeView(HeldPart, Mapping[str, Any]):
    """A step result (or a mapping inside one) with NoETL's ``data`` alias, and a task list
    step's ``results`` (``results``: its tasks' results by name, or None)."""

    __slots__ = ("_inner", "_results")

    def __init__(self, inner: dict[str, Any], results: dict[str, Any] | None = None) -> None:
        self._inner, self._results = inner, results

    def __getitem__(self, key: Any) -> Any:
        try:
            value = self._inner[key]
        except KeyError:
            if key == ALIAS:
                return self     # no `data` of its own: NoETL's envelope data is the result
            if key == RESULTS and self._results is not None:
                return _viewed(self._results)
            raise
        return _viewed(value)

    def get(self, key: Any, default: Any = None) -> Any:
        return self._inner.get(key, default)    # NoETL's proxy: the dict's own `get`

    def __contains__(self, key: object) -> bool:
        return key in self._inner

    def __iter__(self) -> Iterator[str]:
        return iter(self._inner)

    def __len__(self) -> int:
        return len(self._inner)

    def __eq__(self, other: object) -> bool:
        return self._inner == (other._inner if isinstance(other, EnvelopeView) else other)

    __hash__ = None  # type: ignore[assignment]  # a dict's view: unhashable as the dict

    def as_value(self) -> Any:
        return self._inner

    in_text = as_value


class EnvelopeLayer(Mapping[str, Any]):
    """The step-results layer of the template scope, each mapping result seen as an
    :class:`EnvelopeView` (a stored result's or a loop's view is left as it is), with its
    step's task results (``task_results``) where they were kept."""

    __slots__ = ("_inner", "_tasks")

    def __init__(self, inner: Mapping[str, Any], task_results: Mapping[str, dict[str, Any]] | None = None) -> None:
        self._inner, self._tasks = inner, task_results or {}

    def __getitem__(self, key: str) -> Any:
        return _viewed(self._inner[key], self._tasks.get(key))

    def __contains__(self, key: object) -> bool:
        return key in self._inner

    def __iter__(self) -> Iterator[str]:
        return iter(self._inner)

    def __len__(self) -> int:
        return len(self._inner)


def keep_task_results(state: ExecutionState, step_def: Step, pipe: PipelineRun | None) -> None:
    """Keep the results of a task list step's tasks by name, when a template of the playbook
    reads ``<step>.results`` (``dsl/result_paths.py``); a loop step's and a one-task step's
    are never kept (NoETL's loop result and plain tool result have no such key)."""
    step = step_def.step
    if pipe is None or step_def.loop is not None or len(step_def.tool) < 2:
        return
    if not any(p.split(".", 1)[0] == RESULTS for p in state.graph.result_paths.get(step, ())):
        return
    state.task_results[step] = {task.name: pipe.vars[task.name] for task in step_def.tool if task.name in pipe.vars}
