"""What a result stored by reference keeps for the workflow's templates.

The engine sends a task the paths its playbook's templates read from the task's result
(``result_spec.keep``: ``count``, ``rows.0.id``; ``dsl/result_paths.py``). When the result
is stored, its ResultRef carries

* ``fields``: ``{path: value}`` for the named paths, smallest first, while their JSON fits
  :data:`KEEP_MAX_BYTES` together; and the top-level scalars (numbers, booleans, null,
  strings up to :data:`SCALAR_MAX_CHARS` characters) while they fit :data:`SCALARS_MAX_BYTES`;
* ``omitted``: ``{path: bytes}`` for the named paths that did not fit (a guard that reads
  one fails with its size instead of reading it as undefined);
* ``lengths``: ``{path: n}`` for the omitted paths that are lists, mappings or strings, so
  ``{{ start.rows | length }}`` reads the same whether ``rows`` was kept or not;
* ``absent``: the named paths the result does not have (read as undefined, as inline);
* ``kept_max_bytes``: the budget, for that message.

``engine/stored_results.py`` serves them to templates. Without ``keep`` in the spec (an
execution from before, behaviours.STORED_RESULT_FIELDS) nothing is added.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["kept_fields", "KEEP_MAX_BYTES", "SCALARS_MAX_BYTES", "SCALAR_MAX_CHARS", "lookup", "part_of"]

KEEP_MAX_BYTES = 64 * 1024
SCALARS_MAX_BYTES = 8 * 1024
SCALAR_MAX_CHARS = 1024
_MISSING = object()


def lookup(value: Any, parts: Iterable[str]) -> Any:
    """The value at ``parts`` (mapping keys, list indexes as digits), else ``_MISSING``."""
    for part in parts:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def part_of(value: Any, parts: Iterable[str]) -> Any:
    """The value at ``parts``, None when the result has no such part (as a template reads it)."""
    found = lookup(value, parts)
    return None if found is _MISSING else found


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str).encode())


def kept_fields(value: Any, keep: Iterable[str]) -> dict[str, Any]:
    """The ``fields``/``omitted``/``absent``/``kept_max_bytes`` keys of a ResultRef."""
    fields: dict[str, Any] = {}
    omitted: dict[str, int] = {}
    absent: list[str] = []
    named: list[tuple[int, str, Any]] = []
    for path in keep:
        found = lookup(value, path.split("."))
        if found is _MISSING:
            absent.append(path)
        else:
            named.append((_size(found), path, found))
    left = KEEP_MAX_BYTES
    lengths: dict[str, int] = {}
    for size, path, found in sorted(named, key=lambda n: n[0]):
        if size <= left:
            fields[path] = found
            left -= size
        else:
            omitted[path] = size
            if isinstance(found, list | Mapping | str):
                lengths[path] = len(found)
    if isinstance(value, Mapping):
        _scalars(value, fields)
    return {"fields": fields, "omitted": omitted, "lengths": lengths, "absent": absent,
            "kept_max_bytes": KEEP_MAX_BYTES}


def _scalars(value: Mapping[str, Any], fields: dict[str, Any]) -> None:
    """Small top-level scalars, for reads the analysis cannot see (a key built at run time)."""
    left = SCALARS_MAX_BYTES
    for key, item in value.items():
        if not isinstance(key, str) or "." in key or key in fields:
            continue
        if isinstance(item, str) and len(item) > SCALAR_MAX_CHARS:
            continue
        if item is None or isinstance(item, bool | int | float | str):
            size = _size(item) + len(key)
            if size > left:
                return
            fields[key] = item
            left -= size
