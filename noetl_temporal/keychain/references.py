"""Which keychain entries a task reads: its deferred templates and the names in them.

The engine leaves every configuration string that reads ``keychain`` unrendered (workflow
history holds ``{{ keychain.api.token }}``, never the value); the activity finds those
strings (:func:`deferred_templates`) and the entries they name (:func:`referenced_entries`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jinja2 import Environment, nodes
from jinja2.exceptions import TemplateSyntaxError

from ..templates import reads_name

__all__ = ["reads_keychain", "deferred_templates", "referenced_entries"]

#: does a template read ``keychain``? (those are the deferred ones)
reads_keychain = reads_name("keychain")

_AST_ENV = Environment()


def _names_in(text: str) -> set[str] | None:
    """Entry names a template reads as ``keychain.<name>`` / ``keychain['name']``;
    ``None`` when it reads ``keychain`` some other way (all entries are needed then)."""
    try:
        ast = _AST_ENV.parse(text)
    except TemplateSyntaxError:
        return set()
    names: set[str] = set()
    direct: set[int] = set()
    for node in ast.find_all((nodes.Getattr, nodes.Getitem)):
        assert isinstance(node, (nodes.Getattr, nodes.Getitem))  # find_all is typed as any Node
        base = node.node
        if isinstance(base, nodes.Name) and base.name == "keychain":
            if isinstance(node, nodes.Getattr):
                names.add(node.attr)
            elif isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
                names.add(node.arg.value)
            else:
                continue
            direct.add(id(base))
    for node in ast.find_all(nodes.Name):
        if node.name == "keychain" and node.ctx == "load" and id(node) not in direct:
            return None
    return names


def deferred_templates(value: Any, out: list[str]) -> list[str]:
    """The strings of ``value`` (at any depth) that read ``keychain``, appended to ``out``."""
    if isinstance(value, str):
        if reads_keychain(value):
            out.append(value)
    elif isinstance(value, Mapping):
        for v in value.values():
            deferred_templates(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            deferred_templates(v, out)
    return out


def referenced_entries(config: Any, declarations: Iterable[Mapping[str, Any]] = ()) -> set[str]:
    """Entry names the deferred templates of ``config`` read."""
    declared = [str(d.get("name")) for d in declarations if d.get("name")]
    names: set[str] = set()
    for text in deferred_templates(config, []):
        found = _names_in(text)
        if found is None:
            names.update(declared)
        else:
            names.update(found)
    return names
