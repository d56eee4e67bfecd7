"""The fixed paths a playbook's templates read below each top-level name.

``{{ start.count > 100 }}`` reads ``count`` of ``start``; ``{{ start.rows[0].id }}`` reads
``rows.0.id``; ``{{ start.rows | length }}`` and ``{{ start.rows[i] }}`` read ``rows`` (the
whole list: the index is not fixed). A step whose result is stored by reference keeps the
values of these paths with its reference (``store/large_results.py``, ``engine/stored_results.py``),
so the workflow's templates read them whatever the result's size. Names are not resolved
here: a path is listed under every top-level name that could be a step or a task label.

Pure: Jinja's parser only, run once per playbook (``engine/graph.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jinja2 import Environment, nodes
from jinja2.exceptions import TemplateSyntaxError

from ..templates import is_template
from .models import Playbook

__all__ = ["result_paths", "paths_in"]

_PARSER = Environment()  # syntax only


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


def _chain(node: nodes.Node) -> tuple[str, list[str]] | None:
    """``start.rows[0].id`` -> ``('start', ['rows', '0', 'id'])``: the fixed part of an access
    chain on a name (cut at the first key that is not a constant)."""
    parts: list[str | None] = []
    while isinstance(node, nodes.Getattr | nodes.Getitem):
        if isinstance(node, nodes.Getattr):
            parts.append(node.attr)
        elif isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str | int) \
                and not isinstance(node.arg.value, bool):
            parts.append(str(node.arg.value))
        else:
            parts.append(None)
        node = node.node
    if not isinstance(node, nodes.Name) or node.ctx != "load":
        return None
    fixed: list[str] = []
    for part in reversed(parts):
        if part is None or "." in part:
            break
        fixed.append(part)
    return node.name, fixed


def paths_in(text: str) -> Iterator[tuple[str, str]]:
    """``(name, dotted path)`` for each fixed path one template reads below a name."""
    try:
        tree = _PARSER.parse(text)
    except TemplateSyntaxError:
        return
    local = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    yield from _walk(tree, local)


def _walk(node: nodes.Node, local: set[str]) -> Iterator[tuple[str, str]]:
    if isinstance(node, nodes.Getattr | nodes.Getitem):
        chain = _chain(node)
        if chain is not None:
            name, parts = chain
            if name not in local and parts:
                yield name, ".".join(parts)
            # the keys of the chain may read names themselves (``start.rows[ctx.i]``)
            inner: nodes.Node = node
            while isinstance(inner, nodes.Getattr | nodes.Getitem):
                if isinstance(inner, nodes.Getitem):
                    yield from _walk(inner.arg, local)
                inner = inner.node
            return
    for child in node.iter_child_nodes():
        yield from _walk(child, local)


def result_paths(playbook: Playbook) -> dict[str, frozenset[str]]:
    """Every top-level name's fixed paths, over all the playbook's templates."""
    found: dict[str, set[str]] = {}
    for text in _strings(playbook.model_dump(mode="json")):
        for name, path in paths_in(text):
            found.setdefault(name, set()).add(path)
    return {name: frozenset(paths) for name, paths in found.items()}
