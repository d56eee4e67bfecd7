"""JSON paths that name a place in a playbook: ``workflow[2].tool[1].spec.policy``.

Diagnostics, source positions and the normalizer's origin map all key on the same
string form, so one helper builds and splits them. Keys that are not plain
identifiers are quoted (``set["ctx.total"]``) so a dotted ``set:`` key never reads as
two path segments.
"""

from __future__ import annotations

import json
import re

__all__ = ["join", "parent", "split", "from_parts", "identity"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SEGMENT = re.compile(r'\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


#: whether a key is a plain identifier, for the few hundred keys a playbook repeats
#: (a 5 MB playbook joins half a million paths; bounded so odd keys cannot grow it)
_IDENT_KEYS: dict[str, bool] = {}


def _is_ident(key: str) -> bool:
    known = _IDENT_KEYS.get(key)
    if known is None:
        known = _IDENT.match(key) is not None
        if len(_IDENT_KEYS) < 4096:
            _IDENT_KEYS[key] = known
    return known


#: the path segment (``.name`` or ``["a.b"]``) of each key joined, for the few hundred keys a
#: playbook repeats (bounded like _IDENT_KEYS): joining is a fifth of normalizing a large one
_SEGMENTS: dict[str, str] = {}


def join(base: str, key: str | int) -> str:
    """Append a mapping key (str) or a list index (int) to ``base``."""
    if type(key) is str and base:
        segment = _SEGMENTS.get(key)
        if segment is None:
            segment = f".{key}" if _is_ident(key) else f"[{json.dumps(key, ensure_ascii=False)}]"
            if len(_SEGMENTS) < 4096:
                _SEGMENTS[key] = segment
        return base + segment
    if isinstance(key, int):
        return f"{base}[{key}]"
    key = str(key)
    if _is_ident(key):
        return f"{base}.{key}" if base else key
    return f"{base}[{json.dumps(key, ensure_ascii=False)}]"


def split(path: str) -> list[str | int]:
    """Inverse of :func:`join`: the list of keys and indexes of ``path``."""
    parts: list[str | int] = []
    pos = 0
    while pos < len(path):
        m = _SEGMENT.match(path, pos)
        if not m or m.end() == pos:
            raise ValueError(f"not a playbook path: {path!r}")
        ident, index, quoted = m.groups()
        if ident is not None:
            parts.append(ident)
        elif index is not None:
            parts.append(int(index))
        else:
            parts.append(json.loads(quoted))
        pos = m.end()
    return parts


def from_parts(parts: list[str | int] | tuple[str | int, ...]) -> str:
    path = ""
    for part in parts:
        path = join(path, part)
    return path


def parent(path: str) -> str | None:
    """The enclosing path, or None for the root (``""``)."""
    if not path:
        return None
    return from_parts(split(path)[:-1])



def identity(path: str) -> str:
    """The path map of a document that was not rearranged."""
    return path
