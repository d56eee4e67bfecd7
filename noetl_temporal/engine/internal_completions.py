"""Internal completion events: how the lower engine modules say "this ended" without
calling up.

A pipeline, a loop iteration or a loop step ends deep inside the engine; what follows
(recording the step run, routing it, starting the loop's next iterations) belongs to a
module above. Instead of calling it (which made ``steps -> pipeline -> loops -> steps`` a
cycle), the lower module returns one of these and the completer (``completer.py``)
dispatches it. They live only while one input is applied: never stored on the state,
never snapshotted, never emitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .envelopes import Outcome

__all__ = ["PipelineDone", "IterationDone", "FillLoop", "StepRunDone", "Completion"]


@dataclass(frozen=True)
class PipelineDone:
    """A step run's own pipeline ended: finish the step run with the pipeline's outcome."""

    step_run_id: str


@dataclass(frozen=True)
class IterationDone:
    """A loop iteration's pipeline ended: record it, then fill the loop again."""

    step_run_id: str
    iteration: int


@dataclass(frozen=True)
class FillLoop:
    """Start the loop's next iteration, or close the loop when nothing is left.

    One fill pass is a chain of these, one iteration each, so an iteration that ends
    inline is recorded (``IterationDone``) before the next one starts. ``stop_new`` is
    decided when the pass begins and holds for the whole pass: the engine always worked
    so, and changing it would change the event stream of inline loops under fail_fast.
    """

    step_run_id: str
    stop_new: bool


@dataclass(frozen=True)
class StepRunDone:
    """A step run ends without a pipeline of its own: its loop closed, or it could not start."""

    step_run_id: str
    ok: bool
    result: Any
    outcome: Outcome | None
    loop_done: bool = False


Completion = PipelineDone | IterationDone | FillLoop | StepRunDone
