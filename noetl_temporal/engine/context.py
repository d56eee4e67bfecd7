"""What a template can see (DESIGN.md §3), assembled in one place.

Names, lowest precedence first (a later layer shadows an earlier one):

1. workload keys as bare names (``{{ message }}`` for ``workload.message``),
2. step results by step name (``{{ extract.rating }}``),
3. the token's ``args`` keys as bare names,
4. the loop iterator as a bare name (``{{ num }}``),
5. pipeline-local names: earlier task results by label and ``set:`` names,
6. the reserved names: ``workload ctx iter args execution_id spec event output
   outcome _prev _task _attempt``; these always win.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["outcome_view", "build_context", "set_path", "deep_merge"]

RESERVED = ("workload", "ctx", "iter", "args", "execution_id", "spec", "event", "output",
            "outcome", "_prev", "_task", "_attempt")


def outcome_view(outcome: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The outcome envelope as templates see it: ``data`` is an alias of ``result``."""
    if outcome is None:
        return None
    view = dict(outcome)
    view.setdefault("data", outcome.get("result"))
    view.setdefault("error", None)
    return view


def build_context(*, workload: Mapping[str, Any], ctx: Mapping[str, Any], execution_id: str,
                  step_results: Mapping[str, Any], args: Mapping[str, Any] | None = None,
                  iter_scope: Mapping[str, Any] | None = None, iterator: str | None = None,
                  pipeline_vars: Mapping[str, Any] | None = None, spec: Mapping[str, Any] | None = None,
                  extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    context: dict[str, Any] = {}
    context.update(workload)
    context.update(step_results)
    if args:
        context.update(args)
    if iter_scope is not None and iterator and iterator in iter_scope:
        context[iterator] = iter_scope[iterator]
    if pipeline_vars:
        context.update(pipeline_vars)
    context.update({
        "workload": workload,
        "ctx": ctx,
        "iter": iter_scope if iter_scope is not None else {},
        "args": args or {},
        "execution_id": execution_id,
        "spec": spec or {},
    })
    if extra:
        context.update(extra)
    return context


def set_path(target: dict[str, Any], dotted: str, value: Any) -> None:
    """``set_path(ctx, 'a.b', 1)`` sets ``ctx['a']['b'] = 1``, creating maps on the way."""
    parts = dotted.split(".")
    node = target
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Maps merge key by key; any other value (lists included) in ``override`` replaces."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged
