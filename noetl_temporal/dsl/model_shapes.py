"""What a model field takes, said the way a playbook writes it, for the fixes of NTL901/NTL902.

Derived from the pydantic models (annotations and their bounds), never written per field,
so a new field's type error names its shape with no edit here: a block is
``policy: {rules: [...], on_unmatched: ...}``, a choice ``one of `exclusive`, `inclusive```,
a bounded number ``a number > 0 and <= 315360000``.
"""

from __future__ import annotations

import types
import typing
from typing import Any

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from .models import Patches, Playbook

__all__ = ["field_at", "shape_fix", "keys_fix"]

_Annotation = Any  # a type, a typing special form or an Annotated alias


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _name(info: FieldInfo, name: str) -> str:
    return info.alias or name


def _field(model: type[BaseModel], key: str) -> FieldInfo | None:
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return info
    return None


def _bare(tp: Any) -> Any:
    """``tp`` without its ``Annotated`` bounds."""
    return typing.get_args(tp)[0] if typing.get_origin(tp) is typing.Annotated else tp


def _strip_optional(tp: Any) -> list[Any]:
    """The branches of a union other than None (one branch for a plain type), bounds dropped."""
    tp = _bare(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return [_bare(a) for a in typing.get_args(tp) if a is not type(None)]
    return [tp]


def _step_into(tp: Any, part: str | int) -> list[Any]:
    """The annotations one ``part`` (a key or a list index) below a value of type ``tp``."""
    found: list[Any] = []
    for branch in _strip_optional(tp):
        origin = typing.get_origin(branch)
        if isinstance(part, int) and origin in (list, tuple):
            found.extend(typing.get_args(branch)[:1])
        elif isinstance(part, str) and origin is dict and len(typing.get_args(branch)) == 2:
            found.append(typing.get_args(branch)[1])
        elif isinstance(part, str) and _is_model(branch):
            info = _field(branch, part)
            if info is not None:
                found.append(_annotated(info))
    return found


def _annotated(info: FieldInfo) -> Any:
    """The field's annotation with its own bounds put back (pydantic keeps them apart)."""
    if info.metadata and info.annotation is not None:
        return typing.Annotated[(info.annotation, *info.metadata)]
    return info.annotation


def field_at(parts: list[str | int]) -> _Annotation | None:
    """The annotation of the value at ``parts`` of the normalized playbook, None when the
    models do not say (inside a free-form mapping)."""
    current: list[Any] = [Playbook]
    for part in parts:
        current = [a for tp in current for a in _step_into(tp, part)]
        if not current:
            return None
    return current[0]


# --------------------------------------------------------------------------- shapes in words


def _flat(metadata: list[Any]) -> list[Any]:
    """Bounds as annotated_types objects (a ``Field(...)`` inside ``Annotated`` holds its own)."""
    return [m for item in metadata for m in (item.metadata if isinstance(item, FieldInfo) else [item])]


def _bounds(metadata: list[Any]) -> str:
    words = []
    for item in _flat(metadata):
        for attr, sign in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
            value = getattr(item, attr, None)
            if value is not None and isinstance(item, annotated_types.BaseMetadata):
                words.append(f"{sign} {value:g}" if isinstance(value, float) else f"{sign} {value}")
    return " and ".join(words)


def _is_template_only(metadata: list[Any]) -> bool:
    return any(type(m).__name__ == "AfterValidator" for m in metadata)


def _block(model: type[BaseModel]) -> str:
    """``{rules: [...], on_unmatched: ...}``: the keys, each with the brackets of its kind."""
    keys = []
    for name, info in _source_fields(model):
        branches = _strip_optional(info.annotation)
        origin = typing.get_origin(branches[0]) if branches else None
        if origin in (list, tuple):
            inner = "[...]"
        elif origin is dict or any(_is_model(b) for b in branches):
            inner = "{...}"
        else:
            inner = "..."
        keys.append(f"{_name(info, name)}: {inner}")
    if issubclass(model, Patches):
        keys.append("set: {...}")
    return "{" + ", ".join(keys) + "}"


def _source_fields(model: type[BaseModel]) -> list[tuple[str, FieldInfo]]:
    """The fields users write: ``set_ctx``/``set_iter``/``set_vars`` are what ``set:`` becomes,
    so a block sharing them (a task, an arc, a policy action) shows ``set`` instead."""
    return [(name, info) for name, info in model.model_fields.items() if name not in Patches.model_fields]


def describe(tp: Any) -> str:
    """``tp`` in a playbook author's words."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        base, *metadata = typing.get_args(tp)
        if _is_template_only(metadata):
            return "a {{ }} template that renders one"
        bounds = _bounds(metadata)
        return describe(base) + (f" {bounds}" if bounds else "")
    if origin in (typing.Union, types.UnionType):
        branches = [describe(a) for a in typing.get_args(tp) if a is not type(None)]
        return ", or ".join(dict.fromkeys(branches))
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{v}`" for v in typing.get_args(tp))
    if origin in (list, tuple):
        return "a list"
    if origin is dict:
        return "a mapping"
    if _is_model(tp):
        return "a mapping"
    return _SCALARS.get(tp, "a value")


_SCALARS: dict[Any, str] = {str: "a string", int: "an integer", float: "a number", bool: "`true` or `false`",
                            Any: "any value"}


def _example(key: str, tp: Any) -> str:
    """``key: {...}`` for a block (the form the fix tells the user to write), else ''."""
    for branch in _strip_optional(tp):
        if _is_model(branch):
            return f": write `{key}: {_block(branch)}`"
        if typing.get_origin(branch) in (list, tuple):
            return f": write `{key}: [...]`"
    return ""


def shape_fix(parts: list[str | int]) -> str | None:
    """The fix of a wrong value at ``parts``: what the field takes, None when unknown."""
    tp = field_at(parts)
    if tp is None or tp is Any:
        return None
    key = next((p for p in reversed(parts) if isinstance(p, str)), "value")
    if parts and isinstance(parts[-1], int):
        return f"each item of `{key}` is {describe(tp)}{_example('-', tp).replace('`-:', '`-')}"
    return f"`{key}` takes {describe(tp)}{_example(key, tp)}"


def keys_fix(parts: list[str | int]) -> str | None:
    """The fix of an unknown key under ``parts``: the keys that block takes."""
    tp = field_at(parts)
    for branch in _strip_optional(tp) if tp is not None else []:
        if _is_model(branch):
            names = ", ".join([*(f"`{_name(info, name)}`" for name, info in _source_fields(branch)),
                               *(["`set`"] if issubclass(branch, Patches) else [])])
            where = next((p for p in reversed(parts) if isinstance(p, str)), None)
            what = ("the playbook" if where is None
                    else f"an item of `{where}`" if isinstance(parts[-1], int) else f"`{where}`")
            return f"remove the key or correct its spelling; {what} takes {names}"
    return None
