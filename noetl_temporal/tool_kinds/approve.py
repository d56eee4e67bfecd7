"""``kind: approve`` (docs/approvals.md): a task that waits for a person's answer.

The workflow runs it itself: the engine records the approval as waiting, the shell hosts
the ``answer`` update and the timeout's durable timer. The answer (a small form: the
``fields``) becomes the task's result, so arcs and policies route on it.

Pure: the form's schema and the checks of an answer live here, so validation (the
playbook's literal ``fields``/``default``), the engine (the rendered ones) and the update's
validator (a person's answer) apply the same rules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .declaration import Setting, ToolKind

__all__ = ["APPROVE", "FIELD_TYPES", "RESERVED_FIELDS", "ON_TIMEOUT", "Field", "as_mapping", "field_problems",
           "parse_fields",
           "answer_problem", "may_answer", "answer_result"]

#: what ``on_timeout`` may say: the task fails (its step fails, as a tool's error would), or
#: the ``default`` answer is taken as if given (arcs route on ``timed_out``)
ON_TIMEOUT = ("fail", "answer")

#: the types a field may have, and the JSON values each accepts
FIELD_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "boolean": (bool,), "integer": (int,),
                                            "number": (int, float)}

#: names the result sets beside the answer: a field may not take them
RESERVED_FIELDS = ("answered_by", "answered_at", "timed_out")

_FIELD_KEYS = ("type", "required", "choices", "doc")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

APPROVE = ToolKind(
    kind="approve",
    summary="waits for a person's answer (a small form) and returns it; see docs/approvals.md",
    settings=(
        Setting("prompt", ("string",), "what the person is asked (shown by `status`, the page and the Temporal UI)"),
        Setting("fields", ("mapping", "list"), "the form: `name: type` or `name: {type, required, choices, doc}` "
                                                "(shown in name order), or a list of `{name, type, ...}` (shown "
                                                "in its order); types: string, boolean, integer, number"),
        Setting("approvers", ("list",), "who may answer: names of API approver tokens (`--approver NAME=TOKEN`) "
                                        "or the CLI's `--by`; default anyone who may control the execution"),
        Setting("timeout", ("number",), "seconds to wait for an answer (a durable timer); default no limit",
                positive=True),
        Setting("on_timeout", ("string",), "what a timeout does: `fail` (default: the task fails with a "
                                           "`timeout` error) or `answer` (take `default`, `timed_out: true`)",
                choices=ON_TIMEOUT),
        Setting("default", ("mapping",), "the answer `on_timeout: answer` takes"),
    ),
    required=(("prompt",),),
    runs_in="workflow",
)


@dataclass(frozen=True)
class Field:
    name: str
    type: str = "string"
    required: bool = False
    choices: tuple[Any, ...] = ()
    doc: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type, "required": self.required}
        if self.choices:
            data["choices"] = list(self.choices)
        if self.doc:
            data["doc"] = self.doc
        return data


def as_mapping(fields: Any) -> Any:
    """A list form (``[{name: approved, type: boolean}, ...]``, which keeps its order through
    Temporal, where a mapping's keys may come back sorted) as the mapping form; anything
    else as it is."""
    if isinstance(fields, list) and all(isinstance(f, Mapping) and isinstance(f.get("name"), str) for f in fields):
        return {f["name"]: {k: v for k, v in f.items() if k != "name"} for f in fields}
    return fields


def field_problems(fields: Any) -> list[tuple[str, str, str]]:
    """What is wrong with a ``fields`` form: ``(name or "", message, fix)`` per problem; the
    name is the field's (empty: the form as a whole). Reserved and unusable names come
    with the message starting ``name``, so the DSL gives them their own code."""
    if fields is None:
        return []
    if isinstance(fields, list):
        names = [f.get("name") for f in fields if isinstance(f, Mapping)]
        if len(names) != len(fields) or not all(isinstance(n, str) for n in names):
            return [("", "a `fields` list holds an entry without a `name`",
                     "write `fields: [{name: approved, type: boolean}, ...]`")]
        if len(set(names)) != len(names):
            return [("", "a `fields` list names a field twice", "give each field its own name")]
        fields = as_mapping(fields)
    if not isinstance(fields, Mapping):
        return [("", "`fields` is not a mapping of field name -> type, or a list of fields",
                 "write `fields: {approved: boolean}` or `fields: [{name: approved, type: boolean}]`")]
    problems: list[tuple[str, str, str]] = []
    types = ", ".join(FIELD_TYPES)
    for name, spec in fields.items():
        if not isinstance(name, str) or not _NAME.match(name) or name in RESERVED_FIELDS:
            problems.append((str(name), f"name: field {name!r} cannot be used: "
                                        + ("the result sets it" if name in RESERVED_FIELDS else "not a plain name"),
                             f"use a name like `approved` (letters, digits, _), not {', '.join(RESERVED_FIELDS)}"))
            continue
        if isinstance(spec, str):
            spec = {"type": spec}
        if not isinstance(spec, Mapping):
            problems.append((name, f"field {name!r} is neither a type name nor a mapping",
                             f"write `{name}: boolean` or `{name}: {{type: string, required: true}}`"))
            continue
        unknown = [k for k in spec if k not in _FIELD_KEYS]
        if unknown:
            problems.append((name, f"field {name!r} has no setting {unknown[0]!r}",
                             f"use only {', '.join(_FIELD_KEYS)}"))
        kind = spec.get("type", "string")
        if kind not in FIELD_TYPES:
            problems.append((name, f"field {name!r} has type {kind!r}", f"use one of {types}"))
            continue
        if "required" in spec and not isinstance(spec["required"], bool):
            problems.append((name, f"field {name!r}: `required` is not true or false", "write `required: true`"))
        choices = spec.get("choices")
        if choices is not None and (not isinstance(choices, list) or not choices
                                    or not all(_is(kind, c) for c in choices)):
            problems.append((name, f"field {name!r}: `choices` is not a non-empty list of {kind} values",
                             f"write `choices: [...]` with {kind} values"))
    return problems


def parse_fields(fields: Any) -> dict[str, Field]:
    """The form's fields (assumes :func:`field_problems` found none)."""
    parsed: dict[str, Field] = {}
    for name, spec in (as_mapping(fields) or {}).items():
        if isinstance(spec, str):
            spec = {"type": spec}
        parsed[name] = Field(name=name, type=spec.get("type", "string"), required=bool(spec.get("required")),
                             choices=tuple(spec.get("choices") or ()), doc=spec.get("doc"))
    return parsed


def _is(kind: str, value: Any) -> bool:
    if isinstance(value, bool) and kind != "boolean":
        return False   # JSON true is not the integer 1
    return isinstance(value, FIELD_TYPES[kind])


def answer_problem(fields: Mapping[str, Field], values: Any) -> str | None:
    """Why ``values`` is not an answer to the form (None: it is). With no fields declared,
    any mapping of plain names is an answer."""
    if not isinstance(values, Mapping):
        return "an answer is a mapping of field -> value"
    for name, value in values.items():
        if name in RESERVED_FIELDS:
            return f"{name!r} is set by the answer itself, not by the person answering"
        if fields and name not in fields:
            return f"the form has no field {name!r}; its fields: {', '.join(fields)}"
        spec = fields.get(name)
        if spec is None:
            continue
        if not _is(spec.type, value):
            return f"field {name!r} takes a {spec.type}, not {value!r}"
        if spec.choices and value not in spec.choices:
            return f"field {name!r} takes one of {list(spec.choices)}, not {value!r}"
    missing = [f.name for f in fields.values() if f.required and f.name not in values]
    if missing:
        return f"required field{'s' if len(missing) > 1 else ''} missing: {', '.join(missing)}"
    return None


def may_answer(approvers: Any, by: str | None) -> bool:
    """Whether ``by`` may answer (no ``approvers``: anyone who may control the execution)."""
    return not approvers or (by is not None and by in approvers)


def answer_result(values: Mapping[str, Any], *, by: str | None, at: str, timed_out: bool) -> dict[str, Any]:
    """The task's result: the answer, who gave it and when (or ``timed_out``)."""
    return {**values, "answered_by": by, "answered_at": at, "timed_out": timed_out}
