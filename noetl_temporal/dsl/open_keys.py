"""The keys the open blocks take beyond their fields: each one acts, or is refused.

A ``spec:`` layer (the executor's, a step's, a loop's, a task's) is open for one reason: a
``spec.<kind>:`` mapping gives every task of that kind below it defaults (docs/semantics.md
"Tool defaults"). Any other key there used to load and do nothing; now it is NTL902, with a
did-you-mean over the layer's fields and the tool kinds. A tool setting written under a
task's ``spec:`` (NoETL playbooks sometimes nest ``url:`` there) gets the fix to move it.

The few NoETL keys accepted and ignored on purpose are :data:`IGNORED_EXTRAS`, each with
its reason, and listed in docs/dialect-aliases.md ("Accepted and ignored");
``tests/dsl/test_key_audit.py`` keeps the two, and every key the models accept, in step.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from ..tool_kinds import TOOL_KINDS, declaration
from ..tool_kinds.declaration import Setting
from .diagnostics import Reporter, did_you_mean
from .models import Playbook, Task
from .tool_check import check_keys

__all__ = ["SPEC_LAYERS", "IGNORED_EXTRAS", "check_open_keys"]

#: the models whose extra keys are ``spec.<kind>:`` tool defaults
SPEC_LAYERS = ("ExecutorSpec", "StepSpec", "LoopSpec", "TaskSpec")

#: ``Model.key`` (``Model.*``: any extra key) accepted and not acted on -> why; the rows of
#: docs/dialect-aliases.md "Accepted and ignored" name the same keys
IGNORED_EXTRAS: Mapping[str, str] = {
    "LoopSpec.policy": "NoETL's placement of loop iterations (`policy: {exec: distributed}`); here Temporal "
                       "runs each iteration's activity on whichever worker polls the task queue",
}


def _layers(playbook: Playbook) -> Iterator[tuple[BaseModel, str, Task | None]]:
    """Every spec layer, its normalized path and, for a task's, the task."""
    yield playbook.executor.spec, "executor.spec", None
    for i, step in enumerate(playbook.workflow):
        yield step.spec, f"workflow[{i}].spec", None
        if step.loop is not None:
            yield step.loop.spec, f"workflow[{i}].loop.spec", None
        for j, task in enumerate(step.tool):
            yield task.spec, f"workflow[{i}].tool[{j}].spec", task


def _known(layer: BaseModel) -> list[str]:
    return [*(info.alias or name for name, info in type(layer).model_fields.items()), *TOOL_KINDS]


def check_open_keys(playbook: Playbook, reporter: Reporter) -> None:
    for layer, path, task in _layers(playbook):
        model = type(layer).__name__
        for key, value in (layer.model_extra or {}).items():
            if f"{model}.{key}" not in IGNORED_EXTRAS and not _reported_missing(task, key):
                _check_extra(layer, f"{path}.{key}", key, value, task, reporter)


def _check_extra(layer: BaseModel, where: str, key: str, value: Any, task: Task | None,
                 reporter: Reporter) -> None:
    if key in TOOL_KINDS and isinstance(value, Mapping):
        # the defaults are settings of that kind: checked like a task's own
        check_keys(key, value, reporter.resolve(where), reporter)
    elif key in TOOL_KINDS:
        reporter.add_normalized("NTL901", f"`spec.{key}` must be a mapping of {key} settings", where, value=True,
                                fix=f"write `{key}: {{<setting>: ...}}`: defaults for every {key} task below")
    elif task is not None and _is_setting(task, key):
        reporter.add_normalized("NTL315", f"`{key}` is a {task.kind} setting: under the task's `spec:` no tool "
                                          f"reads it", where)
    else:
        reporter.add_normalized("NTL902", f"unknown key {key!r} in `spec`{did_you_mean(key, _known(layer))}",
                                where, fix=_fix(layer))


def _reported_missing(task: Task | None, key: str) -> bool:
    """A required setting nested under the task's ``spec:`` and missing beside ``kind:``:
    NTL309 reports it already, with the same fix."""
    decl = declaration(task.kind) if task is not None else None
    if task is None or decl is None:
        return False
    for group in decl.required:
        names = {n for name in group for n in _names(decl.setting(name), name)}
        if key in names and names.isdisjoint(task.config):
            return True
    return False


def _names(setting: Setting | None, name: str) -> tuple[str, ...]:
    return setting.names if setting is not None else (name,)


def _is_setting(task: Task, key: str) -> bool:
    decl = declaration(task.kind)
    return decl is not None and decl.setting(key) is not None


def _fix(layer: BaseModel) -> str:
    fields = ", ".join(f"`{name}`" for name in type(layer).model_fields)
    return f"remove the key or correct its spelling; `spec` takes {fields}, or `<kind>: {{...}}` tool defaults"
