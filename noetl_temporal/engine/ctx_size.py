"""How much one execution's ``ctx`` may hold: ``templates.limits.MAX_CTX_SIZE``; and the
results of its inline (``noop``) tasks, held in workflow memory too, as much again.

Each ``set`` is bounded on its own (``MAX_VALUE_SIZE``), but fifty sets of 10 MB under
fifty keys would still make a 500 MB ctx, held in workflow memory and carried by every
continue-as-new. So a patch that would take the ctx past the limit is refused: the step
fails with a located error naming the limit, and the ctx keeps what it had.

The running total is a cache kept beside the state (an attribute, not a field: it is not
snapshotted, and it is recomputed from ``ctx`` after a restore), updated per patch by the
size of what the patch replaces and adds, so a ``set`` costs the size of its own values,
not of the whole ctx.
"""

from __future__ import annotations

from typing import Any

from ..templates.limits import MAX_CTX_SIZE, weight
from .state import ExecutionState

__all__ = ["MAX_CTX_SIZE", "refusal", "overflow", "inline_overflow"]

_CACHE = "_ctx_weight"
_INLINE = "_inline_weight"


def _at(ctx: dict[str, Any], dotted: str) -> Any:
    node: Any = ctx
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _size(value: Any) -> int:
    return 0 if value is None else weight(value, MAX_CTX_SIZE + 1, paid=False)


def _after(state: ExecutionState, patch: dict[str, Any]) -> tuple[int, int]:
    """(the running total now, what it would be after ``patch``)."""
    total = getattr(state, _CACHE, None)
    if total is None:
        total = _size(state.ctx)
        setattr(state, _CACHE, total)
    return total, total + sum(_size(value) - _size(_at(state.ctx, key)) for key, value in patch.items())


def refusal(state: ExecutionState, patch: dict[str, Any], where: str) -> str | None:
    """The error when ``patch`` would take ctx past ``MAX_CTX_SIZE``, else None; changes
    nothing (an update validator asks this)."""
    if not patch or _after(state, patch)[1] <= MAX_CTX_SIZE:
        return None
    return (f"{where}: not allowed: ctx would hold more than {MAX_CTX_SIZE:,} characters or items "
            "(limit MAX_CTX_SIZE; each execution's ctx is kept in workflow memory and history) "
            "(fix: keep large data in step results, or compute it in a python task)")


def overflow(state: ExecutionState, patch: dict[str, Any], where: str) -> str | None:
    """:func:`refusal`; when there is none, the running total now counts the patch (call it
    right before ``patch_ctx``)."""
    message = refusal(state, patch, where)
    if message is None and patch:
        setattr(state, _CACHE, max(_after(state, patch)[1], 0))
    return message


def inline_overflow(state: ExecutionState, result: Any, where: str) -> str | None:
    """The error when an inline task's ``result`` would take what this run's inline results
    hold past ``MAX_CTX_SIZE`` (each is bounded by ``MAX_VALUE_SIZE``; fifty 10 MB noop
    results in a loop were 500 MB of workflow memory). Counted per workflow run: a
    continue-as-new starts again from zero."""
    total = getattr(state, _INLINE, 0) + _size(result)
    if total > MAX_CTX_SIZE:
        return (f"{where}: not allowed: the inline (noop) task results of this execution would hold more than "
                f"{MAX_CTX_SIZE:,} characters or items (limit MAX_CTX_SIZE) "
                "(fix: return large data from a python task: results over 256 KiB go to the result store)")
    setattr(state, _INLINE, total)
    return None
