"""The fixed paths a playbook's templates read below each top-level name.

``{{ start.count > 100 }}`` reads ``count`` of ``start``; ``{{ start.rows[0].id }}`` reads
``rows.0.id``; ``{{ start.rows | length }}`` and ``{{ start.rows[i] }}`` read ``rows`` (the
whole list: the index is not fixed). A step whose result is stored by reference keeps the
values of these paths with its reference (``store/large_results.py``, ``engine/stored_results.py``),
so the workflow's templates read them whatever the result's size. Names are not resolved
here: a path is listed under every top-level name that could be a step or a task label.

Pure, run once per playbook (``engine/graph.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..templates import is_template
from .models import Playbook

__all__ = ["result_paths", "paths_in"]


def _strings(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if is_template(item):
                yield item
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


#: a root name (not itself after a dot or inside a word) and its fixed accessors:
#: ``.key``, ``.0``, ``[0]``, ``['key']``, ``["key"]``
_ACCESS = r"""\s*(?:\.\s*([A-Za-z_]\w*|\d+)|\[\s*(?:(-?\d+)|'([^'\\\]]*)'|"([^"\\\]]*)")\s*\])"""
_ROOT = re.compile(r"(?<![\w.'\"\]\)])([A-Za-z_]\w*)((?:" + _ACCESS + r")+)")
_ONE = re.compile(_ACCESS)
_BLOCK = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)


def paths_in(text: str) -> Iterator[tuple[str, str]]:
    """``(name, dotted path)`` for each fixed path one template reads below a name.

    A scan of the template's ``{{ }}``/``{% %}`` blocks, not a parse: a 10,000-step
    playbook's templates are scanned in the worker's first build of it (``engine/graph.py``),
    where Jinja's parser cost a fifth of a millisecond each. It may list more than is read
    (a loop variable's ``r.id``, a path inside a string literal): that only keeps a little
    more of a stored result. It lists every fixed access chain on a name: the chain is cut
    at the first key that is not a constant (``start.rows[i]`` reads ``rows``)."""
    for block in _BLOCK.findall(text):
        for match in _ROOT.finditer(block):
            parts: list[str] = []
            for one in _ONE.finditer(match.group(2)):
                part = next(g for g in one.groups() if g is not None)
                if "." in part:  # a key with a dot cannot be a dotted path's part: keep what leads to it
                    break
                parts.append(part)
            if parts:
                yield match.group(1), ".".join(parts)


def result_paths(playbook: Playbook) -> dict[str, frozenset[str]]:
    """Every top-level name's fixed paths, over all the playbook's templates."""
    found: dict[str, set[str]] = {}
    for text in _strings(playbook.model_dump(mode="json")):
        for name, path in paths_in(text):
            found.setdefault(name, set()).add(path)
    return {name: frozenset(paths) for name, paths in found.items()}
