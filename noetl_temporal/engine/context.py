"""What a template can see (docs/semantics.md, "Templates"), assembled in one place.

Names, lowest precedence first (a later layer shadows an earlier one):

1. workload keys as bare names (``{{ message }}`` for ``workload.message``),
2. step results by step name (``{{ extract.rating }}``),
3. the token's ``args`` keys as bare names,
4. the loop iterator as a bare name (``{{ num }}``),
5. pipeline-local names: earlier task results by label and ``set:`` names,
6. the reserved names: ``workload ctx iter args execution_id spec event output
   outcome _prev _task _attempt``; these always win.

Below all of them, ``execution_number``: NoETL's numeric execution id, for playbooks
that write it where a number goes (docs/semantics.md, "execution_number"). It is the lowest
layer so that a workload key or step of that name, in playbooks written before it
existed, still reads what it did.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any

from .envelopes import Outcome

__all__ = ["outcome_view", "Scope", "build_context", "set_path", "deep_merge", "execution_number"]

RESERVED = ("workload", "ctx", "iter", "args", "execution_id", "spec", "event", "output",
            "outcome", "_prev", "_task", "_attempt")


def outcome_view(outcome: Outcome | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The outcome envelope as templates see it: ``data`` is an alias of ``result``."""
    if outcome is None:
        return None
    view = outcome.to_dict() if isinstance(outcome, Outcome) else dict(outcome)
    view.setdefault("data", view.get("result"))
    view.setdefault("error", None)
    return view


class Scope(Mapping[str, Any]):
    """A read-only view over the template layers, resolved per name on lookup.

    Building a dict of every name for every render cost time proportional to the number
    of steps (step results are bare names): a 5,000-step chain spent most of its time
    copying them. A template reads a handful of names; only those are looked up.
    """

    __slots__ = ("_top", "_layers")

    def __init__(self, top: dict[str, Any], layers: tuple[Mapping[str, Any], ...]) -> None:
        self._top = top            # reserved names and extras: they always win
        self._layers = layers      # highest precedence first

    def __getitem__(self, key: str) -> Any:
        if key in self._top:
            return self._top[key]
        for layer in self._layers:
            if key in layer:
                return layer[key]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key in self._top or any(key in layer for layer in self._layers)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __iter__(self) -> Iterator[str]:
        seen: set[str] = set()
        for layer in (self._top, *self._layers):
            for key in layer:
                if key not in seen:
                    seen.add(key)
                    yield key

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def with_names(self, extra: Mapping[str, Any]) -> Scope:
        """The same view with ``extra`` names on top (no copy of the layers)."""
        return Scope({**self._top, **extra}, self._layers)

    def pick(self, names: Iterable[str]) -> dict[str, Any]:
        """The values of ``names`` that exist, as a plain dict."""
        out: dict[str, Any] = {}
        for name in names:
            try:
                out[name] = self[name]
            except KeyError:
                pass
        return out


def build_context(*, workload: Mapping[str, Any], ctx: Mapping[str, Any], execution_id: str,
                  step_results: Mapping[str, Any], args: Mapping[str, Any] | None = None,
                  iter_scope: Mapping[str, Any] | None = None, iterator: str | None = None,
                  pipeline_vars: Mapping[str, Any] | None = None, spec: Mapping[str, Any] | None = None,
                  extra: Mapping[str, Any] | None = None) -> Scope:
    top: dict[str, Any] = {
        "workload": workload,
        "ctx": ctx,
        "iter": iter_scope if iter_scope is not None else {},
        "args": args or {},
        "execution_id": execution_id,
        "spec": spec or {},
    }
    if extra:
        top.update(extra)
    layers: list[Mapping[str, Any]] = []
    if pipeline_vars:
        layers.append(pipeline_vars)
    if iter_scope is not None and iterator and iterator in iter_scope:
        layers.append({iterator: iter_scope[iterator]})
    if args:
        layers.append(args)
    layers.append(step_results)
    layers.append(workload)
    layers.append({"execution_number": execution_number(execution_id)})
    return Scope(top, tuple(layers))


@lru_cache(maxsize=64)
def execution_number(execution_id: str) -> int:
    """A positive 63-bit number for ``execution_id`` (NoETL's ids are numbers that fit a
    BIGINT): the first 8 bytes of its SHA-256, so the same id always gives the same number,
    on any worker and on replay. Two executions share one with odds of about 1 in 10^18."""
    return int.from_bytes(hashlib.sha256(execution_id.encode("utf-8")).digest()[:8], "big") >> 1


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
