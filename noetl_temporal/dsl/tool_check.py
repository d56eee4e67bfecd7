"""A task's settings checked against its kind's declaration (``tool_kinds/<kind>.py``).

Two passes, because they need different views of the playbook:

* :func:`check_keys` runs while a task is normalized, on the keys as written: an unknown
  key (NTL310, with did-you-mean) is an error, as an unknown key under a task policy is;
  a literal value of the wrong type is NTL311; a NoETL key this runtime does not act on
  is the warning NTL312, never a silent drop.
* :func:`check_required` runs on the model, where the ``spec.<kind>:`` defaults of the
  executor, step, loop and task layers are known (a layer may supply ``url`` for every
  http task): a required setting missing from the task and every layer is NTL309.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..templates import is_template, reads_name
from ..tool_kinds import NAMED_KINDS, declaration
from ..tool_kinds.declaration import Setting, ToolKind, accepts, type_names
from . import paths
from .diagnostics import Reporter, did_you_mean, kind_of
from .models import Playbook, Task

__all__ = ["check_keys", "check_required"]

_READS_KEYCHAIN = reads_name("keychain")


def _has_template(value: Any, test: Callable[[str], bool] = is_template) -> bool:
    """A template (one ``test`` accepts) anywhere inside ``value``."""
    if isinstance(value, str):
        return test(value)
    if isinstance(value, Mapping):
        return any(_has_template(v, test) for v in value.values())
    if isinstance(value, list):
        return any(_has_template(v, test) for v in value)
    return False


def check_keys(kind: str, config: Mapping[str, Any], src: str, reporter: Reporter, *,
               key_src: Mapping[str, str] | None = None) -> None:
    """Report the keys of ``config`` (a task's settings; ``src`` the task's source path,
    ``key_src`` the source paths of keys written elsewhere: a workbook entry's)."""
    decl = declaration(kind)
    if decl is None:
        return
    for key, value in config.items():
        where = (key_src or {}).get(key) or paths.join(src, key)
        if kind in NAMED_KINDS and _has_template(value, _READS_KEYCHAIN):
            reporter.add("NTL704", f"`{key}` ({kind}) reads `keychain`: a `kind: {kind}` task is called by the workflow, "
                                   "where no secret is resolved (a secret passed there would be written to "
                                   "workflow history)",
                         where, value=True, fix=f"pass the keychain entry's name and let your {kind} read the "
                                                "secret itself")
        setting = decl.setting(key)
        if setting is not None:
            _check_type(decl, key, setting.types, setting.template, value, where, reporter)
            if not is_template(value):
                _check_value(decl, setting, value, where, reporter)
            if setting.phases and isinstance(value, Mapping):
                _check_phases(decl, key, setting.phases, value, where, reporter)
        elif key in decl.ignored:
            reporter.add("NTL312", f"`{key}` on a {kind} task is ignored: {decl.ignored[key]}", where)
        else:
            reporter.add("NTL310", f"{kind} tasks have no setting `{key}`"
                                   f"{did_you_mean(key, decl.keys())}; known: {', '.join(decl.keys())}",
                         where)


def _check_type(decl: ToolKind, key: str, types: tuple[Any, ...], template: bool, value: Any,
                where: str, reporter: Reporter) -> None:
    if not template and _has_template(value):
        reporter.add("NTL311", f"`{key}` ({decl.kind}) is read as written (the tool evaluates "
                               f"it), but it holds a {{{{ }}}} template the workflow would render first",
                     where, value=True, fix=f"write the expressions of `{key}` without {{{{ }}}}")
    elif not (template and is_template(value)) and not accepts(types, value):
        reporter.add("NTL311", f"`{key}` ({decl.kind}) must be {type_names(types)}, not "
                               f"{kind_of(value)}", where, value=True)


def _check_value(decl: ToolKind, setting: Setting, value: Any, where: str, reporter: Reporter) -> None:
    """A literal of the right type that the setting still cannot take: a string outside its
    ``choices``, a number of seconds that is not > 0 (Temporal would refuse it at run time),
    a value naming a service this runtime does not have (``ToolKind.refused``)."""
    missing = decl.refused.get(setting.name, {}).get(value) if isinstance(value, str) else None
    if missing is not None:
        service, fix = missing
        reporter.add("NTL330", f"`{setting.name}: {value}` ({decl.kind}) needs {service}, which noetl-temporal "
                               "does not run", where, value=True, fix=fix)
        return
    if setting.choices and isinstance(value, str) and value not in setting.choices:
        reporter.add("NTL316", f"`{setting.name}` ({decl.kind}) is {value!r}{did_you_mean(value, setting.choices)}",
                     where, value=True, fix=f"write one of {', '.join(setting.choices)}")
    elif setting.positive and isinstance(value, int | float) and not isinstance(value, bool) and not value > 0:
        reporter.add("NTL316", f"`{setting.name}` ({decl.kind}) is {value!r}: a number of seconds must be > 0",
                     where, value=True, fix=f"write `{setting.name}: <seconds>` with seconds > 0, or leave it out")


def _check_phases(decl: ToolKind, key: str, phases: tuple[str, ...], value: Mapping[str, Any], where: str,
                  reporter: Reporter) -> None:
    """``timeout: {connect: 5, read: 30}``: only the named phases, each a positive number."""
    shape = f"`{key}: {{{', '.join(f'{p}: <seconds>' for p in phases)}}}`"
    for phase, seconds in value.items():
        at = paths.join(where, phase)
        if phase not in phases:
            reporter.add("NTL310", f"`{key}` of a {decl.kind} task has no phase `{phase}`"
                                   f"{did_you_mean(phase, phases)}", at, fix=f"write {shape}")
        elif not (isinstance(seconds, str) and is_template(seconds)) and (isinstance(seconds, bool) or not isinstance(seconds, int | float)
                                           or not seconds > 0):
            reporter.add("NTL311", f"`{key}.{phase}` ({decl.kind}) must be a number of seconds > 0, not "
                                   f"{seconds!r}", at, value=True, fix=f"write {shape}")


def _layer_keys(layers: Iterable[Mapping[str, Any]], kind: str) -> set[str]:
    """The keys the ``spec.<kind>:`` defaults of these spec layers supply."""
    keys: set[str] = set()
    for spec in layers:
        knobs = spec.get(kind) if isinstance(spec, Mapping) else None
        if isinstance(knobs, Mapping):
            keys.update(str(k) for k in knobs)
    return keys


def _spec_dict(spec: Any) -> Mapping[str, Any]:
    return spec.model_dump(exclude_none=True) if spec is not None else {}


def check_required(playbook: Playbook, reporter: Reporter) -> None:
    executor = _spec_dict(playbook.executor.spec)
    for index, step in enumerate(playbook.workflow):
        layers: list[Mapping[str, Any]] | None = None
        for j, task in enumerate(step.tool):
            decl = declaration(task.kind)
            if decl is None:
                continue
            layered: set[str] | None = None
            for group in decl.required:
                names = [n for key in group for n in _names(decl, key)]
                if not task.config.keys().isdisjoint(names):
                    continue
                # the spec layers only when the task lacks the setting itself: dumping four
                # spec models per task was most of this check on a large playbook
                if layered is None:
                    if layers is None:
                        layers = [executor, _spec_dict(step.spec), _spec_dict(step.loop.spec if step.loop else None)]
                    layered = _layer_keys([*layers, _spec_dict(task.spec)], task.kind)
                if layered.isdisjoint(names):
                    _missing(reporter, task, names, f"workflow[{index}].tool[{j}]",
                             f"add `{group[0]}:` to the task ({_doc(decl, group[0])})")


def _missing(reporter: Reporter, task: Task, names: list[str], path: str, fix: str) -> None:
    shown = " or ".join(f"`{n}`" for n in names)
    misplaced = [n for n in names if n in (task.spec.model_extra or {})]
    if misplaced:  # NoETL playbooks sometimes nest settings under the task's `spec:`
        fix = (f"move `{misplaced[0]}:` out of the task's `spec:` to beside `kind:` (`spec:` holds "
               f"policy, timeout, result and `spec.<kind>:` defaults)")
    reporter.add_normalized("NTL309", f"{task.kind} task {task.name!r} has no {shown}", path, fix=fix)


def _names(decl: ToolKind, key: str) -> tuple[str, ...]:
    setting = decl.setting(key)
    return setting.names if setting is not None else (key,)


def _doc(decl: ToolKind, key: str) -> str:
    setting = decl.setting(key)
    return setting.doc if setting is not None else key
