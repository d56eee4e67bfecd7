"""Joins at run time: which tokens wait at a join, when a join fires, and what its one
step run receives.

Which steps are joins, and for which upstreams, is structure (``graph.StepGraph``,
decided once per playbook). Here: a token from a concurrent upstream waits in the join's
buffer; the buffer fires when no active step can still deliver such a token; the joined
token's ``args`` are the arcs' args merged in arrival order, plus every arc's own args
under ``args._upstreams.<upstream step>``, so nothing an arc sent is lost. A key two arcs
set to different values is reported (``step.scheduled`` ``payload.meta.join.conflicts``)
rather than overwritten in silence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .common import add_token
from .context import deep_merge
from .state import ExecutionState, Token
from .state_machines import TokenState, move

__all__ = ["UPSTREAMS_KEY", "waits_at_join", "fire_joins", "joined_args"]

#: the ``args`` key holding each upstream arc's own args at a join
UPSTREAMS_KEY = "_upstreams"


def waits_at_join(state: ExecutionState, token: Token) -> bool:
    """True (and the token is buffered) when it comes from one of the step's concurrent upstreams."""
    if token.joined or token.final:
        return False
    upstreams = state.graph.join_upstreams.get(token.step)
    if not upstreams or token.source not in upstreams:
        return False
    token.state = move("token", token.state, TokenState.BUFFERED)
    state.tokens.remove(token)
    state.join_buffers.setdefault(token.step, []).append(token)
    return True


def fire_joins(state: ExecutionState, active_steps: Callable[[str], Iterable[str]]) -> bool:
    """Fire every join no active step can still deliver to; ``active_steps(join)`` gives
    the steps that may still produce tokens (the machine decides what counts)."""
    progress = False
    for join, buffered in list(state.join_buffers.items()):
        if not buffered or state.graph.can_still_deliver(join, active_steps(join)):
            continue
        args, meta = joined_args(buffered)
        for token in buffered:
            token.state = move("token", token.state, TokenState.JOINED)
        state.join_buffers[join] = []
        add_token(state, join, args, source=",".join(t.source or "" for t in buffered), joined=True,
                  join=meta)
        progress = True
    return progress


def joined_args(tokens: list[Token]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The joined run's args and the ``join`` meta (sources, conflicting keys)."""
    merged: dict[str, Any] = {}
    by_upstream: dict[str, Any] = {}
    conflicts: dict[str, dict[str, Any]] = {}
    seen_from: dict[str, tuple[str, Any]] = {}
    for token in tokens:
        source = token.source or ""
        for key, value in token.args.items():
            if key in seen_from and seen_from[key][1] != value:
                first_source, first_value = seen_from[key]
                conflicts.setdefault(key, {first_source: first_value})[source] = value
            seen_from[key] = (source, value)
        merged = deep_merge(merged, token.args)
        by_upstream[source] = token.args
    if UPSTREAMS_KEY in merged:
        conflicts.setdefault(UPSTREAMS_KEY, {"arc args": merged[UPSTREAMS_KEY]})
    merged[UPSTREAMS_KEY] = by_upstream
    meta = {"from": [t.source for t in tokens], "tokens": [t.id for t in tokens],
            "conflicts": conflicts or None}
    return merged, meta
