"""``set:`` blocks → ``set_ctx`` / ``set_iter`` / (``set_vars`` | ``args``).

Users write one ``set:`` map with prefixed keys (``ctx.total``, ``iter.page``); the
engine wants the scopes apart. Where the unprefixed keys go depends on the scope:

* tasks and policy actions: pipeline-local names (``set_vars``);
* arcs: the arc's ``args`` (bound into the token of the target step);
* steps: refused (NTL213): after a step ends there is no pipeline to hold them.

``ctx: {a: 1}`` (a nested map under the bare scope name) is read as ``ctx.a: 1``.
Deeper dotted keys stay dotted (``ctx.a.b`` → ``set_ctx["a.b"]``); the engine applies
them as paths. Explicit ``set_ctx`` / ``set_iter`` (and ``set_vars`` / ``args``) are
accepted too; when both spell the same name, the explicit one wins (NTL308).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from . import paths
from .diagnostics import Reporter, kind_of
from .origins import Origins

__all__ = ["PATCH_KEYS", "collect_patches"]

PATCH_KEYS = frozenset({"set", "set_ctx", "set_iter", "set_vars"})

Other = Literal["set_vars", "args", "reject"]


def collect_patches(node: Mapping[str, Any], src: str, norm: str, *, other: Other,
                    reporter: Reporter, origins: Origins) -> dict[str, dict[str, Any]]:
    """The canonical patch fields of ``node`` (a task, action, arc or step mapping)."""
    other_field = "args" if other == "args" else "set_vars"
    out: dict[str, dict[str, Any]] = {"set_ctx": {}, "set_iter": {}}
    if other != "reject":
        out[other_field] = {}
    explicit = ["set_ctx", "set_iter"] + ([other_field] if other != "reject" else [])
    for field in explicit:
        if field not in node or node[field] is None:
            continue
        value = node[field]
        field_src = paths.join(src, field)
        if not isinstance(value, Mapping):
            reporter.add("NTL104", f"`{field}` must be a mapping, not {kind_of(value)}", field_src,
                         value=True)
            continue
        for name, item in value.items():
            out[field][name] = item
            origins.add(paths.join(paths.join(norm, field), name), paths.join(field_src, name))
    block = node.get("set")
    if block is None:
        return out
    set_src = paths.join(src, "set")
    if not isinstance(block, Mapping):
        reporter.add("NTL104", f"`set` must be a mapping, not {kind_of(block)}", set_src, value=True)
        return out
    for key, value in block.items():
        key_src = paths.join(set_src, key)
        for field, name, item in _targets(key, value, other_field):
            if not name:
                reporter.add("NTL901", f"`set` key {key!r} names no variable", key_src,
                             fix="`set` takes a mapping of variable names to values: write "
                                 "`set: {ctx.<name>: ..., iter.<name>: ...}`")
                continue
            if other == "reject" and field == other_field:
                reporter.add("NTL213", f"step-level `set` key {key!r} has no `ctx.` prefix",
                             key_src, fix=f"write `ctx.{key}` (execution scope); an iteration's `iter.{key}` "
                                          f"is set by a task of the loop step")
                continue
            if name in out[field]:
                reporter.add("NTL308", f"`set: {{{key}: ...}}` repeats `{field}.{name}`; the `{field}` "
                                       f"value is used", key_src)
                continue
            out[field][name] = item
            origins.add(paths.join(paths.join(norm, field), name), key_src)
    return out


def _targets(key: str, value: Any, other_field: str) -> list[tuple[str, str, Any]]:
    for scope, field in (("ctx", "set_ctx"), ("iter", "set_iter")):
        if key == scope and isinstance(value, Mapping):
            return [(field, str(name), item) for name, item in value.items()]
        if key.startswith(scope + "."):
            return [(field, key[len(scope) + 1:], value)]
    return [(other_field, key, value)]
