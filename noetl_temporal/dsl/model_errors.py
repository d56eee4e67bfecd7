"""Run the pydantic model on the canonical dict and turn its errors into diagnostics.

Pydantic reports ``loc`` tuples on the *normalized* document and mixes in union
branch names (``('metadata', 'version', 'str')``); this module keeps only the part of
``loc`` that exists in the data, maps it back to the source through the origin map,
and gives unknown keys a "did you mean" from the fields of the model at that place.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from . import paths
from .diagnostics import Reporter, did_you_mean
from .model_shapes import keys_fix, shape_fix
from .models import Playbook

__all__ = ["validate_model"]

_CLASS_NAME = re.compile(r" or instance of \w+")


def _existing_prefix(data: Any, loc: tuple[Any, ...]) -> list[str | int]:
    parts: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, Mapping) and isinstance(part, str) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            break
        parts.append(part)
    return parts


def _unwrap(annotation: Any) -> list[Any]:
    """Model classes reachable one level into ``annotation`` (through Optional, list, dict)."""
    origin = typing.get_origin(annotation)
    if origin is None:
        return [annotation]
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType, list, tuple):
        return [m for a in args for m in _unwrap(a)]
    if origin is dict:
        return _unwrap(args[1]) if len(args) == 2 else []
    return []


def _fields_at(parts: list[str | int]) -> list[str]:
    """Field names (aliases first) of the model at ``parts``, or [] when unknown."""
    current: list[Any] = [Playbook]
    for part in parts:
        if isinstance(part, int):
            continue  # list items: same annotation unwrapped by _unwrap
        nxt: list[Any] = []
        for model in current:
            if isinstance(model, type) and issubclass(model, BaseModel):
                for name, info in model.model_fields.items():
                    if part in (name, info.alias):
                        nxt.extend(_unwrap(info.annotation))
        current = nxt
    for model in current:
        if isinstance(model, type) and issubclass(model, BaseModel):
            return [info.alias or name for name, info in model.model_fields.items()]
    return []


def validate_model(canonical: Mapping[str, Any], reporter: Reporter) -> Playbook | None:
    try:
        return Playbook.model_validate(canonical)
    except ValidationError as exc:
        seen: set[tuple[str, str]] = set()
        for err in exc.errors(include_url=False):
            loc = tuple(err.get("loc", ()))
            parts = _existing_prefix(canonical, loc)
            norm = paths.from_parts(parts)
            kind = err.get("type", "")
            if (norm, kind) in seen or (kind != "extra_forbidden" and (norm, "*") in seen):
                continue  # one value failing every branch of a union is one problem
            seen.update({(norm, kind), (norm, "*")} if kind != "extra_forbidden" else {(norm, kind)})
            key = parts[-1] if parts else ""
            if kind == "extra_forbidden":
                hint = did_you_mean(key, _fields_at(parts[:-1]))
                reporter.add_normalized("NTL902", f"unknown key {key!r}{hint}", norm, fix=keys_fix(parts[:-1]))
            elif kind == "missing":
                missing = loc[len(parts)] if len(loc) > len(parts) else "?"
                reporter.add_normalized("NTL903", f"missing required key {missing!r}", norm)
            else:
                shown = repr(err.get("input"))
                if len(shown) > 60:
                    shown = shown[:57] + "..."
                where = f" for `{key}`" if isinstance(key, str) and key else ""
                # pydantic names our classes ("... or instance of TaskPolicy"): users write YAML
                msg = _CLASS_NAME.sub("", str(err.get("msg")))
                reporter.add_normalized("NTL901", f"invalid value {shown}{where}: {msg}", norm,
                                        value=True, fix=shape_fix(parts))
        return None
