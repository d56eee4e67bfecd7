"""The engine's own state machines as data: pipelines (moved by task policy actions),
tokens and loops. One enum and one transition table each, like the status layers in
``noetl_temporal.engine.status_layers``; every move goes through :func:`move`, and ``docs/status.md``
draws these tables beside the status layers.

These states never leave the engine: no event carries them and no reader depends on
them. They make each object's life explicit, and an illegal move raises
``InvalidTransition`` instead of silently corrupting a run. Each table maps an allowed
``(from, to)`` pair to what causes it (an event name, or the engine step that moves it).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TypeVar

from ..errors import InvalidTransition

__all__ = ["PipelineAction", "PipelineState", "TokenState", "LoopState", "ENGINE_TABLES", "ENGINE_TERMINAL",
           "move"]

_S = TypeVar("_S", bound=StrEnum)


class PipelineAction(StrEnum):
    """A task policy's ``then.do``: what a pipeline does after a task's outcome."""

    CONTINUE = "continue"   # the next task
    RETRY = "retry"         # the activity's business; inline it means fail (same outcome every time)
    JUMP = "jump"           # to a named task, or ``previous``
    BREAK = "break"         # end the pipeline successfully now
    FAIL = "fail"           # end the pipeline as failed


class PipelineState(StrEnum):
    RUNNING = "RUNNING"       # advancing through inline work
    WAITING = "WAITING"       # one task in flight (a ``RunTask`` command)
    PARKED = "PARKED"         # the work budget ran out; ``Proceed`` resumes it
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"   # its step run was cancelled (fail_fast, stop)


class TokenState(StrEnum):
    READY = "READY"           # waits for admission
    DENIED = "DENIED"         # admission said no; re-evaluated when ctx changes
    BUFFERED = "BUFFERED"     # waits in a join's buffer
    ADMITTED = "ADMITTED"     # became a step run
    DISCARDED = "DISCARDED"   # denied with ``on_deny: discard``
    JOINED = "JOINED"         # merged into its join's one token
    ABSORBED = "ABSORBED"     # an arc to final_step: that step runs once, after quiescence
    DROPPED = "DROPPED"       # the execution is stopping or cancelled


class LoopState(StrEnum):
    FILLING = "FILLING"       # starting iterations up to max_in_flight
    WAITING = "WAITING"       # iterations in flight; the end of one fills again
    PARKED = "PARKED"         # the work budget ran out while filling; ``Proceed`` fills again
    COMPLETED = "COMPLETED"   # loop.done, every iteration succeeded
    FAILED = "FAILED"         # loop.done with failed iterations, or cancelled


_P, _T, _L, _A = PipelineState, TokenState, LoopState, PipelineAction

ENGINE_TABLES: dict[str, dict[tuple[StrEnum, StrEnum], str]] = {
    # A pipeline (a step's task list, or one loop iteration's). The first pair's source is
    # the initial state. A finished task's outcome moves a WAITING pipeline back to RUNNING,
    # where its policy action decides.
    "pipeline": {
        (_P.RUNNING, _P.WAITING): "task.started",                   # a RunTask goes out
        (_P.WAITING, _P.RUNNING): "task.done / task.failed",        # its outcome arrived
        (_P.RUNNING, _P.PARKED): "work budget spent",               # inline task left for Proceed
        (_P.PARKED, _P.RUNNING): "Proceed",
        (_P.RUNNING, _P.COMPLETED): f"last task, or {_A.BREAK}",
        (_P.RUNNING, _P.FAILED): f"{_A.FAIL} (or {_A.RETRY} exhausted), jump limit, timeout",
        (_P.RUNNING, _P.CANCELLED): "step run cancelled",
    },
    # A token: a unit of control on its way to a step run (docs/semantics.md, "Entry, tokens, admission").
    "token": {
        (_T.READY, _T.ADMITTED): "step.scheduled",
        (_T.READY, _T.DENIED): "policy.admit.evaluated",             # not allowed; on_deny pending or wait
        (_T.DENIED, _T.ADMITTED): "step.scheduled",                  # a ctx change, admitted now
        (_T.READY, _T.DISCARDED): "policy.admit.evaluated",          # on_deny discard
        (_T.READY, _T.BUFFERED): "arrives at a join",                # from a concurrent upstream
        (_T.BUFFERED, _T.JOINED): "join fires",                      # no active step can deliver more
        (_T.READY, _T.ABSORBED): "arc to final_step",
        (_T.READY, _T.DROPPED): "execution stopping or cancelled",   # stopping: policy.admit.evaluated
        (_T.DENIED, _T.DROPPED): "execution stopping or cancelled",
        (_T.BUFFERED, _T.DROPPED): "execution stopping",
    },
    # A loop step's iterations (``loop.spec.mode`` parallel or sequential).
    "loop": {
        (_L.FILLING, _L.WAITING): "iterations in flight",            # max_in_flight reached, or all started
        (_L.FILLING, _L.PARKED): "work budget spent",
        (_L.WAITING, _L.FILLING): "loop.iteration.done / failed",
        (_L.PARKED, _L.FILLING): "Proceed, or an iteration ended",
        (_L.FILLING, _L.COMPLETED): "loop.done",
        (_L.FILLING, _L.FAILED): "loop.done",                        # status error
    },
}

ENGINE_TERMINAL: dict[str, frozenset[StrEnum]] = {
    "pipeline": frozenset({_P.COMPLETED, _P.FAILED, _P.CANCELLED}),
    "token": frozenset({_T.ADMITTED, _T.DISCARDED, _T.JOINED, _T.ABSORBED, _T.DROPPED}),
    "loop": frozenset({_L.COMPLETED, _L.FAILED}),
}


def move(layer: str, src: _S, dst: _S) -> _S:
    """Return ``dst`` if ``src -> dst`` is in ``layer``'s table; raise ``InvalidTransition``
    (always an engine bug) otherwise."""
    if (src, dst) not in ENGINE_TABLES[layer]:
        raise InvalidTransition(layer, src, dst)
    return dst
